// Gaussian kernel k(x, z) = exp(-||x - z||^2 / (2 sigma^2)), evaluated blockwise: the
// distance GEMM of a cache-sized block and its exp happen together, so K is written
// once and never re-read.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// K(X, Z): X is n x d, Z is m x d, the result n x m. sigma must be finite and > 0.
template <class T>
Matrix<T> gaussian_kernel(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          int n_threads = 0);

// The same, written into `out` (n x m, preallocated).
template <class T>
void gaussian_kernel_into(const MatrixCRef<T>& X, const MatrixCRef<T>& Z, double sigma,
                          MatrixRef<T> out, int n_threads = 0);

// k(X, centers) @ coef without storing the n x m kernel: rows of X are streamed in
// blocks. coef is m x q; the result n x q.
template <class T>
Matrix<T> kernel_predict(const MatrixCRef<T>& X, const MatrixCRef<T>& centers,
                         const MatrixCRef<T>& coef, double sigma, int n_threads = 0,
                         const Callback& callback = {});

}  // namespace nytro
