// The public entry to the direct solver's fused pass (passes/fused_pass.hpp), for callers
// that keep kernel blocks of their own.
#include "nytro/normal_equations.hpp"

#include "passes/fused_pass.hpp"

#include <stdexcept>
#include <string>

namespace nytro {

template <class T, class S>
Matrix<T> block_normal_product(const MatrixCRef<S>& K, const MatrixCRef<T>& B, int n_threads) {
    if (B.rows() != K.cols())
        throw std::invalid_argument("B must have K's " + std::to_string(K.cols()) + " rows (one per column of K), got " +
                                    std::to_string(B.rows()) + " x " + std::to_string(B.cols()));
    if (K.rows() > 1 && K.outerStride() != K.cols())
        throw std::invalid_argument("K's rows must be contiguous (a row-major matrix or a C-ordered array)");
    if (K.rows() == 0 || K.cols() == 0 || B.cols() == 0) return Matrix<T>::Zero(K.cols(), B.cols());
    detail::FusedPass<T, S> pass(K, n_threads);
    return pass.normal(B);
}

template Matrix<float> block_normal_product<float, float>(const MatrixCRef<float>&, const MatrixCRef<float>&, int);
template Matrix<double> block_normal_product<double, double>(const MatrixCRef<double>&, const MatrixCRef<double>&,
                                                             int);
template Matrix<double> block_normal_product<double, float>(const MatrixCRef<float>&, const MatrixCRef<double>&,
                                                            int);

}  // namespace nytro
