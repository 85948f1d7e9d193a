#include "gram.hpp"

#include "dense.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

#include <algorithm>

namespace nytro::detail {

template <class T>
NormalEquations<T> stream_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                           const MatrixCRef<T>& centers, const NystromFactor<T>& factor,
                                           double sigma, int n_threads, const Callback& callback) {
    const Index n = X.rows(), m = centers.rows(), k = factor.rank(), q = Y.cols();
    check_allocation(double(k) * double(k) * sizeof(T), "A^T A (" + shape_text<T>(k, k) + ")");
    NormalEquations<T> normal;
    normal.H = Matrix<T>::Zero(k, k);
    normal.C = Matrix<T>::Zero(k, q);
    const Index block = std::min(std::max<Index>(256, (Index(1) << 22) / std::max(m, k)), n);
    Matrix<T> K(block, m), A(block, k);
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        auto K_block = K.topRows(rows);
        auto A_block = A.topRows(rows);
        gaussian_kernel_into<T>(X.middleRows(r0, rows), centers, sigma, K_block, n_threads);
        multiply_right<T>(K_block, factor.R, factor.upper_triangular, A_block, n_threads);
        rank_update<T>(A_block, normal.H, T(1), false, n_threads);
        normal.C.noalias() += A_block.transpose() * Y.middleRows(r0, rows);
        if (callback) callback({"gram", r0 + rows, n});
    }
    mirror_lower<T>(normal.H);
    return normal;
}

template struct NormalEquations<float>;
template struct NormalEquations<double>;
template NormalEquations<float> stream_normal_equations<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                              const MatrixCRef<float>&, const NystromFactor<float>&,
                                                              double, int, const Callback&);
template NormalEquations<double> stream_normal_equations<double>(const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const NystromFactor<double>&, double, int,
                                                                const Callback&);

}  // namespace nytro::detail
