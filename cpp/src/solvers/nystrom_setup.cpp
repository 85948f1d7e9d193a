#include "solvers/nystrom_setup.hpp"

#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

namespace nytro::detail {

template <class T>
NystromSetup<T> prepare_nystrom(const MatrixCRef<T>& centers, const KernelSpec& kernel, const FactorOptions& factor, int threads,
                                const Callback& callback) {
    NystromSetup<T> setup;
    setup.factor = factor_of_kernel<T>(kernel_matrix<T>(centers, centers, kernel, threads, callback), factor, threads,
                                       callback);
    if (callback) callback({"factor", 1, 1});
    const auto& support = setup.factor.support();
    setup.used.resize(static_cast<Index>(support.size()), centers.cols());
    for (std::size_t i = 0; i < support.size(); ++i) setup.used.row(Index(i)) = centers.row(support[i]);
    return setup;
}

template <class T>
std::unique_ptr<Validation<T>> make_validation(const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                                               const Matrix<T>& centers, const KernelSpec& kernel, int threads,
                                               bool low_precision, double reserved_bytes, bool defer,
                                               const Callback& callback) {
    if (X_val.rows() == 0) return nullptr;
    // Leave a fifth of what is available for everything else.
    const double budget = 0.8 * double(available_memory_bytes()) - reserved_bytes;
    return std::make_unique<Validation<T>>(X_val, Y_val, centers, kernel, threads, low_precision, budget, defer,
                                           callback);
}

template <class T>
Matrix<T> scatter_rows(const Matrix<T>& coef, const std::vector<Index>& support, Index m) {
    Matrix<T> full = Matrix<T>::Zero(m, coef.cols());
    for (std::size_t i = 0; i < support.size(); ++i) full.row(support[i]) = coef.row(Index(i));
    return full;
}

#define NYTRO_INSTANTIATE(T)                                                                          \
    template NystromSetup<T> prepare_nystrom<T>(const MatrixCRef<T>&, const KernelSpec&, const FactorOptions&, int, \
                                                const Callback&);                                     \
    template std::unique_ptr<Validation<T>> make_validation<T>(const MatrixCRef<T>&, const MatrixCRef<T>&, \
                                                               const Matrix<T>&, const KernelSpec&, int, bool, double, bool, \
                                                               const Callback&);  \
    template Matrix<T> scatter_rows<T>(const Matrix<T>&, const std::vector<Index>&, Index);
NYTRO_INSTANTIATE(float)
NYTRO_INSTANTIATE(double)
#undef NYTRO_INSTANTIATE  // unity builds put several sources in one unit

}  // namespace nytro::detail
