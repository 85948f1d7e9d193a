// The normal equations of the Nystrom problem, H = A^T A and C = A^T Y with A = K_nm R,
// accumulated from row blocks of about 32 MiB of kernel, so K_nm is never stored whole.
// Each block is multiplied by R before it is squared: forming K_nm^T K_nm first and
// R^T (K^T K) R afterwards would cost fewer flops when n >> m, but loses a factor
// cond(K_mm) of precision (measured: float32 coefficients off by 2e-4 instead of 4e-6).
#pragma once

#include "nytro/nystrom.hpp"
#include "nytro/types.hpp"

namespace nytro::detail {

template <class T>
struct NormalEquations {
    Matrix<T> H;  // k x k, symmetric (both triangles filled)
    Matrix<T> C;  // k x q
};

// `centers` are the centres in factor.support (the rows R acts on). low_precision (for
// T = double): kernel blocks, A = K R and the tile products in float32, summed in double.
template <class T>
NormalEquations<T> stream_normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                           const MatrixCRef<T>& centers, const NystromFactor<T>& factor,
                                           double sigma, int n_threads, const Callback& callback,
                                           bool low_precision = false);

}  // namespace nytro::detail
