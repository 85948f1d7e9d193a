// The normal equations of the Nystrom least-squares problem over a block of rows, for a
// caller that sums them over blocks it holds elsewhere (the Dask chunks of
// nytro.dask's "gram" mode): H = A^T A and C = A^T Y with A = diag(row_scale) k(X, centers) R,
// computed as the in-memory Gram solver computes them (streamed row blocks, the kernel
// never stored whole).
#pragma once

#include "nytro/kernel.hpp"
#include "nytro/nystrom.hpp"
#include "nytro/types.hpp"

namespace nytro {

template <class T>
struct NormalEquationsResult {
    Matrix<T> H;  // k x k, symmetric (both triangles filled)
    Matrix<T> C;  // k x q
};

struct NormalEquationsOptions {
    // Accumulate K^T K and K^T Y first and apply R once at the end (n k^2 flops fewer, but
    // H's rounding error ~eps cond(K_mm) instead of ~eps sqrt(cond(K_mm))). Requires an
    // upper triangular factor. A caller summing blocks decides it once for the whole
    // training set; the in-memory solver's rule needs float64, n >= 4k and
    // cond(K_mm) <= 1 / sqrt(k eps). Ignored with low_precision.
    bool kernel_first = false;
    // For T = double (storage="float32"): the rows and centres rounded to float32, the
    // kernel block, the row scales, R, Y (as given, already scaled by the caller) and the
    // products A = K R, A^T A and A^T Y in float32, summed over the row blocks in double.
    // No effect for T = float.
    bool low_precision = false;
    int n_threads = 0;
    // Called as {"gram", rows done, n} between row blocks; may throw to abort.
    Callback callback;
};

// X (n x d) and Y (n x q, the targets already multiplied by row_scale where given),
// centers (m x d, all the centres: R acts on those in factor.support), row_scale (n
// entries, or empty for none). factor null: H = K^T K and C = K^T Y on all the centres
// (m x m), summed as the kernel-first route sums them, R left to the caller (kernel_first
// has no effect; low_precision still does). Throws std::invalid_argument naming the
// argument for mismatched shapes, a support index out of range, an upper triangular R
// that is not square, or kernel_first with a factor that is not upper triangular.
template <class T>
NormalEquationsResult<T> normal_equations(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                                          const MatrixCRef<T>& centers, const NystromFactor<T>* factor,
                                          const KernelSpec& kernel, const Vector<T>& row_scale,
                                          const NormalEquationsOptions& options = {});

// K^T (K B) for a block of kernel rows K (n x k) that the caller keeps in memory (the
// blocks of nytro.dask's "direct" mode, one product of the path's iterations): the
// in-memory direct solver's fused pass, which reads K from memory once, on n_threads
// threads (0: all), the same bits for any thread count. S = float with T = double: K
// kept in float32, each entry widened in a register (storage="float32"). K's rows must be
// contiguous (a row-major matrix or a C-ordered array). Throws std::invalid_argument
// naming the argument when B does not have k rows or K's rows are not contiguous.
template <class T, class S = T>
Matrix<T> block_normal_product(const MatrixCRef<S>& K, const MatrixCRef<T>& B, int n_threads = 0);

}  // namespace nytro
