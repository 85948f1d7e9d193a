#include "gram.hpp"

#include "dense.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"

#include <algorithm>
#include <type_traits>

namespace nytro::detail {

namespace {

// Row blocks of about 32 MiB of kernel.
Index block_rows(Index n, Index m, Index k) {
    return std::min(std::max<Index>(256, (Index(1) << 22) / std::max(m, k)), n);
}

// The accumulation in precision S (S = T, or float for a double computation).
template <class T, class S>
void accumulate(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                const NystromFactor<T>& factor, double sigma, int n_threads, const Callback& callback,
                NormalEquations<T>& normal) {
    const Index n = X.rows(), m = centers.rows(), k = factor.rank();
    const Index block = block_rows(n, m, k);
    const Matrix<S> centers_s = centers.template cast<S>();
    const Matrix<S> R = factor.R.template cast<S>();
    Matrix<S> K(block, m), A(block, k), X_s, Y_s;
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        auto K_block = K.topRows(rows);
        auto A_block = A.topRows(rows);
        X_s = X.middleRows(r0, rows).template cast<S>();
        Y_s = Y.middleRows(r0, rows).template cast<S>();
        gaussian_kernel_into<S>(X_s, centers_s, sigma, K_block, n_threads);
        multiply_right<S>(K_block, R, factor.upper_triangular, A_block, n_threads);
        if constexpr (std::is_same_v<S, T>) {
            rank_update<T>(A_block, normal.H, T(1), false, n_threads);
            normal.C.noalias() += A_block.transpose() * Y_s;
        } else {
            rank_update_widened<T, S>(A_block, normal.H, n_threads);
            normal.C += (A_block.transpose() * Y_s).template cast<T>();
        }
        if (callback) callback({"gram", r0 + rows, n});
    }
}

}  // namespace

template <class T>
NormalEquations<T> stream_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                           const MatrixCRef<T>& centers, const NystromFactor<T>& factor,
                                           double sigma, int n_threads, const Callback& callback,
                                           bool low_precision) {
    const Index k = factor.rank(), q = Y.cols();
    check_allocation(double(k) * double(k) * sizeof(T), "A^T A (" + shape_text<T>(k, k) + ")");
    NormalEquations<T> normal;
    normal.H = Matrix<T>::Zero(k, k);
    normal.C = Matrix<T>::Zero(k, q);
    if (low_precision && !std::is_same_v<T, float>)
        accumulate<T, float>(X, Y, centers, factor, sigma, n_threads, callback, normal);
    else
        accumulate<T, T>(X, Y, centers, factor, sigma, n_threads, callback, normal);
    mirror_lower<T>(normal.H);
    return normal;
}

template struct NormalEquations<float>;
template struct NormalEquations<double>;
template NormalEquations<float> stream_normal_equations<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                              const MatrixCRef<float>&, const NystromFactor<float>&,
                                                              double, int, const Callback&, bool);
template NormalEquations<double> stream_normal_equations<double>(const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const NystromFactor<double>&, double, int,
                                                                const Callback&, bool);

}  // namespace nytro::detail
