#include "nystrom_setup.hpp"

#include "nytro/kernel.hpp"

namespace nytro::detail {

template <class T>
NystromSetup<T> prepare_nystrom(const MatrixCRef<T>& centers, double sigma, const FactorOptions& factor,
                                const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val, int threads,
                                const Callback& callback, bool low_precision) {
    NystromSetup<T> setup;
    const Matrix<T> K_mm = gaussian_kernel<T>(centers, centers, sigma, threads);
    setup.factor = nystrom_factor<T>(K_mm, factor, threads);
    if (callback) callback({"factor", 1, 1});
    const auto& support = setup.factor.support;
    setup.used.resize(static_cast<Index>(support.size()), centers.cols());
    for (std::size_t i = 0; i < support.size(); ++i) setup.used.row(Index(i)) = centers.row(support[i]);
    if (X_val.rows() > 0)
        setup.validation = std::make_unique<Validation<T>>(X_val, Y_val, setup.used, sigma, threads, low_precision);
    return setup;
}

template <class T>
Matrix<T> scatter_rows(const Matrix<T>& coef, const std::vector<Index>& support, Index m) {
    Matrix<T> full = Matrix<T>::Zero(m, coef.cols());
    for (std::size_t i = 0; i < support.size(); ++i) full.row(support[i]) = coef.row(Index(i));
    return full;
}

#define NYTRO_INSTANTIATE(T)                                                                          \
    template NystromSetup<T> prepare_nystrom<T>(const MatrixCRef<T>&, double, const FactorOptions&,  \
                                                const MatrixCRef<T>&, const MatrixCRef<T>&, int,     \
                                                const Callback&, bool);                               \
    template Matrix<T> scatter_rows<T>(const Matrix<T>&, const std::vector<Index>&, Index);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)

}  // namespace nytro::detail
