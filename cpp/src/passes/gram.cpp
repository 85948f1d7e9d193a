#include "passes/gram.hpp"

#include "passes/dense.hpp"
#include "paths/gradient_path.hpp"  // largest_eigenvalue, for the choice of route
#include "runtime/huge_pages.hpp"
#include "nytro/errors.hpp"
#include "nytro/kernel.hpp"
#include "kernel/packed_centers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace nytro::detail {

namespace {

// The row blocks' buffers (the kernel block and A = K R) are allocated once per pass: fresh
// memory at every call, whose first touch is paid page by page, which for a small k can
// cost as much as the pass (benchmarks/results/bench_kernels/history.md, "the Gram pass's
// row blocks").
// Blocks of max(kFewestRows, k) rows, where 32 MiB would hold more, keep them small (and
// in cache from the kernel to the rank update), while each block's rank update still has
// an inner dimension of k or more: it reads and writes H (k x k) once per block, which for
// large k costs a share of the block's multiply-adds that grows as the blocks shrink.
constexpr Index kFewestRows = 1024;

// Row blocks of at most about 32 MiB of kernel (and max(kFewestRows, k) rows), of equal
// size: a short last block (270 of 4658 rows at m = 2000) runs its rank update at a
// fraction of the GEMM rate.
Index block_rows(Index n, Index m, Index k) {
    const Index widest = std::max<Index>(256, (Index(1) << 22) / std::max(m, k));
    const Index most = std::min({widest, std::max(kFewestRows, k), n});
    const Index blocks = (n + most - 1) / most;
    return (n + blocks - 1) / blocks;
}

// The accumulation in precision S (S = T, or float for a double computation), into an H
// of precision SH (T, or float when S is).
template <class T, class S, class SH>
void accumulate(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                const NystromFactor<T>& factor, const KernelSpec& kernel, int n_threads, const Callback& callback,
                NormalEquations<T, SH>& normal, const Vector<T>* row_scale) {
    const Index n = X.rows(), m = centers.rows(), k = factor.rank();
    const Index block = block_rows(n, m, k);
    const Matrix<S> centers_s = centers.template cast<S>();
    Matrix<S> R_cast;
    if constexpr (!std::is_same_v<S, T>) {
        R_cast.resize(factor.R.rows(), factor.R.cols());
        populate(R_cast);
        R_cast = factor.R.template cast<S>();
    }
    const MatrixCRef<S> R = [&]() -> MatrixCRef<S> {
        if constexpr (std::is_same_v<S, T>) return factor.R;
        else return R_cast;
    }();
    Matrix<S> K(block, m), A(block, k), X_s, Y_s;
    const PackedCenters<S> packed(centers_s, kernel);
    for (Index r0 = 0; r0 < n; r0 += block) {
        const Index rows = std::min(block, n - r0);
        auto K_block = K.topRows(rows);
        auto A_block = A.topRows(rows);
        X_s = X.middleRows(r0, rows).template cast<S>();
        Y_s = Y.middleRows(r0, rows).template cast<S>();
        kernel_packed<S>(X_s, packed, K_block, n_threads);
        if (row_scale) scale_rows<S>(K_block, row_scale->segment(r0, rows).template cast<S>());
        multiply_right<S>(K_block, R, factor.upper_triangular, A_block, n_threads);
        if constexpr (std::is_same_v<SH, S>) rank_update<S>(A_block, normal.H, S(1), false, n_threads);
        else rank_update_widened<SH, S>(A_block, normal.H, n_threads);
        if constexpr (std::is_same_v<S, T>) normal.C.noalias() += A_block.transpose() * Y_s;
        else normal.C += (A_block.transpose() * Y_s).template cast<T>();
        if (callback) callback({"gram", r0 + rows, n});
    }
}

// G += K^T K (its lower triangle) and KtY += K^T Y over the row blocks of
// K = diag(row_scale) k(X, centers), in precision S (T, or float for a double computation,
// the tile products then summed in T): the kernel-first route's accumulation, which no
// factor enters (the route without one takes it alone).
template <class T, class S>
void accumulate_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                       const KernelSpec& kernel, int n_threads, const Callback& callback, MatrixRef<T> G,
                       MatrixRef<T> KtY, const Vector<T>* row_scale) {
    const Index n = X.rows(), m = centers.rows();
    const Index block = block_rows(n, m, m);
    Matrix<S> K(block, m);
    if constexpr (std::is_same_v<S, T>) {
        const PackedCenters<T> packed(centers, kernel);
        for (Index r0 = 0; r0 < n; r0 += block) {
            const Index rows = std::min(block, n - r0);
            auto K_block = K.topRows(rows);
            kernel_packed<T>(X.middleRows(r0, rows), packed, K_block, n_threads);
            if (row_scale) scale_rows<T>(K_block, row_scale->segment(r0, rows));
            rank_update<T>(K_block, G, T(1), false, n_threads);
            KtY.noalias() += K_block.transpose() * Y.middleRows(r0, rows);
            if (callback) callback({"gram", r0 + rows, n});
        }
    } else {
        // As accumulate<T, S, T> with R = I: rows, centres, scales and Y rounded to S.
        const Matrix<S> centers_s = centers.template cast<S>();
        const PackedCenters<S> packed(centers_s, kernel);
        Matrix<S> X_s, Y_s;
        for (Index r0 = 0; r0 < n; r0 += block) {
            const Index rows = std::min(block, n - r0);
            auto K_block = K.topRows(rows);
            X_s = X.middleRows(r0, rows).template cast<S>();
            Y_s = Y.middleRows(r0, rows).template cast<S>();
            kernel_packed<S>(X_s, packed, K_block, n_threads);
            if (row_scale) scale_rows<S>(K_block, row_scale->segment(r0, rows).template cast<S>());
            rank_update_widened<T, S>(K_block, G, n_threads);
            KtY += (K_block.transpose() * Y_s).template cast<T>();
            if (callback) callback({"gram", r0 + rows, n});
        }
    }
}

// The kernel-first route: G = K_nm^T K_nm and K_nm^T Y accumulated from the blocks, then
// H = R^T G R and C = R^T (K_nm^T Y) once. It saves the n k^2 flops of A = K R (nearly
// half the work when n >> k), but its rounding error in H is ~eps cond(K_mm) relative,
// against ~eps sqrt(cond(K_mm)) for the A route.
template <class T>
void accumulate_kernel_first(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                             const NystromFactor<T>& factor, const KernelSpec& kernel, int n_threads, const Callback& callback,
                             NormalEquations<T>& normal, const Vector<T>* row_scale) {
    const Index k = factor.rank();
    Matrix<T> G = Matrix<T>::Zero(k, k), KtY = Matrix<T>::Zero(k, Y.cols());
    accumulate_kernel<T, T>(X, Y, centers, kernel, n_threads, callback, G, KtY, row_scale);
    mirror_lower<T>(G);
    Matrix<T> GR(k, k);
    multiply_right<T>(G, factor.R, true, GR, n_threads);
    multiply_left_transposed<T>(factor.R, true, GR, normal.H, n_threads);
    multiply_left_transposed<T>(factor.R, true, KtY, normal.C, n_threads);
}

}  // namespace

// The kernel-first error, ~eps cond(K_mm) relative, is accepted when it is no worse than
// the A route's at the worst conditioning the factor admits: the pivoted factor keeps
// pivots down to k eps of the largest, so cond(K_mm) <= 1 / (k eps) there, and the A route
// is accurate to eps sqrt(1 / (k eps)) = sqrt(eps / k). Hence the limit
// cond(K_mm) <= 1 / sqrt(k eps) (2.1e6 at k = 1000). cond(K_mm) is bounded above by
// trace(K_mm) ||R||_2^2: the Gaussian kernel's diagonal is 1, so the trace is k, and
// ||R||_2^2 = 1 / lambda_min(K_mm) comes from Lanczos on R^T R. The largest column norm of
// R, a lower bound on ||R||_2, settles most ill-conditioned cases without Lanczos.
template <class T>
bool kernel_first_is_accurate(Index n, const NystromFactor<T>& factor, int n_threads) {
    const Index k = factor.rank();
    if (!std::is_same_v<T, double> || !factor.upper_triangular || n < 4 * k) return false;
    const double limit = 1.0 / std::sqrt(double(k) * std::numeric_limits<double>::epsilon());
    if (double(k) * factor.R.colwise().squaredNorm().maxCoeff() > limit) return false;
    Matrix<T> lifted(k, 1);
    const double top = largest_eigenvalue<T>(
        k,
        [&](const Matrix<T>& p, Matrix<T>& out) {
            multiply_left<T>(factor.R, true, p, lifted, n_threads);
            multiply_left_transposed<T>(factor.R, true, lifted, out, n_threads);
        },
        Callback{});
    // Lanczos approaches the top eigenvalue from below; a margin of 1.25 covers a Ritz
    // value stopped short of convergence.
    return double(k) * 1.25 * top <= limit;
}

// H (k x k, zero, its pages populated: the zero fill is its first, single-threaded
// write) and C (k x q, zero).
template <class T, class SH>
NormalEquations<T, SH> zero_normal_equations(Index k, Index q) {
    check_allocation(double(k) * double(k) * sizeof(SH), "A^T A (" + shape_text<SH>(k, k) + ")");
    NormalEquations<T, SH> normal;
    normal.H.resize(k, k);
    populate(normal.H);
    normal.H.setZero();
    normal.C = Matrix<T>::Zero(k, q);
    return normal;
}

template <class T>
NormalEquations<T> stream_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                           const MatrixCRef<T>& centers, const NystromFactor<T>& factor,
                                           const KernelSpec& kernel, int n_threads, const Callback& callback,
                                           bool low_precision, bool mirror, std::optional<bool> kernel_first,
                                           const Vector<T>* row_scale) {
    const Index k = factor.rank();
    auto normal = zero_normal_equations<T, T>(k, Y.cols());
    if (low_precision && !std::is_same_v<T, float>) {
        accumulate<T, float, T>(X, Y, centers, factor, kernel, n_threads, callback, normal, row_scale);
    } else if (kernel_first ? *kernel_first : kernel_first_is_accurate<T>(X.rows(), factor, n_threads)) {
        check_allocation(2.0 * double(k) * double(k) * sizeof(T), "K^T K (" + shape_text<T>(k, k) + ")");
        accumulate_kernel_first<T>(X, Y, centers, factor, kernel, n_threads, callback, normal, row_scale);
    } else {
        accumulate<T, T, T>(X, Y, centers, factor, kernel, n_threads, callback, normal, row_scale);
    }
    if (mirror) mirror_lower<T>(normal.H);
    return normal;
}

template <class T>
NormalEquations<T, float> stream_float_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                                        const MatrixCRef<T>& centers,
                                                        const NystromFactor<T>& factor, const KernelSpec& kernel,
                                                        int n_threads, const Callback& callback,
                                                        const Vector<T>* row_scale) {
    auto normal = zero_normal_equations<T, float>(factor.rank(), Y.cols());
    accumulate<T, float, float>(X, Y, centers, factor, kernel, n_threads, callback, normal, row_scale);
    return normal;
}

template <class T>
NormalEquations<T> stream_kernel_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                                  const MatrixCRef<T>& centers, const KernelSpec& kernel,
                                                  int n_threads, const Callback& callback, bool low_precision,
                                                  const Vector<T>* row_scale) {
    const Index m = centers.rows();
    auto normal = zero_normal_equations<T, T>(m, Y.cols());
    if (low_precision && !std::is_same_v<T, float>)
        accumulate_kernel<T, float>(X, Y, centers, kernel, n_threads, callback, normal.H, normal.C, row_scale);
    else
        accumulate_kernel<T, T>(X, Y, centers, kernel, n_threads, callback, normal.H, normal.C, row_scale);
    mirror_lower<T>(normal.H);
    return normal;
}

template bool kernel_first_is_accurate<float>(Index, const NystromFactor<float>&, int);
template bool kernel_first_is_accurate<double>(Index, const NystromFactor<double>&, int);
template struct NormalEquations<float>;
template struct NormalEquations<double>;
template struct NormalEquations<double, float>;
template NormalEquations<float, float> stream_float_normal_equations<float>(
    const MatrixCRef<float>&, const MatrixCRef<float>&, const MatrixCRef<float>&, const NystromFactor<float>&,
    const KernelSpec&, int, const Callback&, const Vector<float>*);
template NormalEquations<double, float> stream_float_normal_equations<double>(
    const MatrixCRef<double>&, const MatrixCRef<double>&, const MatrixCRef<double>&, const NystromFactor<double>&,
    const KernelSpec&, int, const Callback&, const Vector<double>*);
template NormalEquations<float> stream_kernel_normal_equations<float>(const MatrixCRef<float>&,
                                                                     const MatrixCRef<float>&,
                                                                     const MatrixCRef<float>&, const KernelSpec&,
                                                                     int, const Callback&, bool,
                                                                     const Vector<float>*);
template NormalEquations<double> stream_kernel_normal_equations<double>(const MatrixCRef<double>&,
                                                                       const MatrixCRef<double>&,
                                                                       const MatrixCRef<double>&, const KernelSpec&,
                                                                       int, const Callback&, bool,
                                                                       const Vector<double>*);
template NormalEquations<float> stream_normal_equations<float>(const MatrixCRef<float>&, const MatrixCRef<float>&,
                                                              const MatrixCRef<float>&, const NystromFactor<float>&,
                                                              const KernelSpec&, int, const Callback&, bool, bool,
                                                              std::optional<bool>, const Vector<float>*);
template NormalEquations<double> stream_normal_equations<double>(const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const MatrixCRef<double>&,
                                                                const NystromFactor<double>&, const KernelSpec&, int,
                                                                const Callback&, bool, bool, std::optional<bool>,
                                                                const Vector<double>*);

}  // namespace nytro::detail
