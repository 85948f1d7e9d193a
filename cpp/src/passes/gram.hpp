// The normal equations of the Nystrom problem, H = A^T A and C = A^T Y with A = K_nm R,
// accumulated from row blocks of about 32 MiB of kernel, so K_nm is never stored whole.
// Two routes, chosen by accuracy: each block multiplied by R before it is squared (error
// in H ~ eps sqrt(cond(K_mm))), or K_nm^T K_nm accumulated first and R^T (K^T K) R formed
// once, which saves n k^2 flops but loses another factor sqrt(cond(K_mm)) of precision
// (measured: float32 coefficients off by 2e-4 instead of 4e-6). The second is taken only
// in float64, with n >= 4k and cond(K_mm) <= 1 / sqrt(k eps), where its error is within
// the first route's worst case. row_scale (null: none) multiplies each row of K_nm, and
// Y must come scaled alike (sample weights).
#pragma once

#include "nytro/kernel.hpp"
#include "nytro/nystrom.hpp"
#include "nytro/types.hpp"

#include <optional>

namespace nytro::detail {

template <class T, class SH = T>
struct NormalEquations {
    Matrix<SH> H;  // k x k, symmetric (both triangles filled unless asked otherwise)
    Matrix<T> C;   // k x q
};

// Whether the kernel-first route is taken for n training rows: float64, an upper
// triangular factor, n >= 4k, and cond(K_mm) <= 1 / sqrt(k eps) (H then accurate to
// sqrt(eps / k), the A route's accuracy at the worst conditioning the factor admits).
template <class T>
bool kernel_first_is_accurate(Index n, const NystromFactor<T>& factor, int n_threads);

// Rows of a kernel block multiplied by the matching entries of `scale` (the sample
// weights' row scales, see TikhonovOptions::sample_weights).
template <class S, class V>
void scale_rows(MatrixRef<S> block, const V& scale) {
    block.array().colwise() *= scale.array();
}

// The full kernel and the targets of the weighted problem: S K S and S Y, S = diag(scale)
// (Landweber, KRLS, KOLS: the weighted problem on K as the unweighted one on S K S).
template <class T>
void scale_both_sides(Matrix<T>& K, Matrix<T>& Y, const Vector<T>& scale) {
    scale_rows<T>(K, scale);
    K.array().rowwise() *= scale.transpose().array();
    scale_rows<T>(Y, scale);
}

// `centers` are the centres in factor.support (the rows R acts on). low_precision (for
// T = double): kernel blocks, A = K R and the tile products in float32, summed in double.
// mirror = false leaves H's strict upper triangle unset, for callers that read only the
// lower one (the Gram solver's symmetric pass). kernel_first: the route, if the caller
// has decided it already (by kernel_first_is_accurate); else it is decided here.
template <class T>
NormalEquations<T> stream_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                           const MatrixCRef<T>& centers, const NystromFactor<T>& factor,
                                           const KernelSpec& kernel, int n_threads, const Callback& callback,
                                           bool low_precision = false, bool mirror = true,
                                           std::optional<bool> kernel_first = std::nullopt,
                                           const Vector<T>* row_scale = nullptr);

// The route without a factor: H = K^T K (m x m, both triangles) and C = K^T Y with
// K = diag(row_scale) k(X, centers) on all the given centres, summed over the row blocks
// as the kernel-first route sums them (no R, so none of its products). low_precision (for
// T = double): the kernel blocks from the rows and centres rounded to float32, their
// products in float32 summed in double, as stream_normal_equations' low_precision.
template <class T>
NormalEquations<T> stream_kernel_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                                  const MatrixCRef<T>& centers, const KernelSpec& kernel,
                                                  int n_threads, const Callback& callback, bool low_precision = false,
                                                  const Vector<T>* row_scale = nullptr);

// The Gram solver's float32 storage: kernel blocks, A = K R and H in float32 from the
// start (lower triangle only), C in T. The float32 tile products were already summed in
// float32 over each block of rows; summing the few blocks in float32 as well adds
// rounding far below theirs, and saves H's float64 copy (and its first touch) and the
// cast.
template <class T>
NormalEquations<T, float> stream_float_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                                        const MatrixCRef<T>& centers,
                                                        const NystromFactor<T>& factor, const KernelSpec& kernel,
                                                        int n_threads, const Callback& callback,
                                                        const Vector<T>* row_scale = nullptr);

}  // namespace nytro::detail
