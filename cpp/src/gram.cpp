#include "gram.hpp"

#include "dense.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

#include <algorithm>

namespace nytro::detail {

Index gram_block_rows(Index m) {
    return std::max<Index>(256, (Index(1) << 22) / std::max<Index>(m, 1));
}

template <class T>
Gram<T> stream_gram(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                    double sigma, int n_threads, const Callback& callback) {
    const Index n = X.rows(), m = centers.rows(), q = Y.cols();
    check_allocation(2.0 * double(m) * double(m) * sizeof(T),
                     "the Gram matrix K^T K (" + shape_text<T>(m, m) + ")");
    Gram<T> gram;
    gram.G = Matrix<T>::Zero(m, m);
    gram.B = Matrix<T>::Zero(m, q);
    gram.y_squared = Y.template cast<double>().squaredNorm();
    const Index block = std::min(gram_block_rows(m), n);
    Matrix<T> K(block, m);
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        auto K_block = K.topRows(rows);
        gaussian_kernel_into<T>(X.middleRows(r0, rows), centers, sigma, K_block, n_threads);
        rank_update<T>(K_block, gram.G, T(1), false, n_threads);
        gram.B.noalias() += K_block.transpose() * Y.middleRows(r0, rows);
        if (callback) callback({"gram", r0 + rows, n});
    }
    mirror_lower<T>(gram.G);
    return gram;
}

template struct Gram<float>;
template struct Gram<double>;
template Gram<float> stream_gram<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                        const MatrixCRef<float>&, double, int, const Callback&);
template Gram<double> stream_gram<double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                          const MatrixCRef<double>&, double, int, const Callback&);

}  // namespace nytro::detail
