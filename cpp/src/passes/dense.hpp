// Dense products parallelised over fixed panels of rows or tiles. The decomposition
// depends on the shapes only, never on the thread count, and each panel is one
// single-threaded Eigen product, so results are bitwise the same for any n_threads.
#pragma once

#include "nytro/types.hpp"

#include <functional>

#include <vector>

namespace nytro::detail {

// Rows per panel of the row-parallel products.
constexpr Index kPanel = 128;

// out = A * B. `between`, if given, is called every ~2e9 flops, outside the parallel
// regions (an interruption point: it may throw; out is then partly written). The same
// bits either way.
template <class T>
void multiply(const MatrixCRef<T>& A, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads,
              const std::function<void()>& between = {});

// out = M * B for M stored in a lower precision S, M read from memory once, in S:
// WidenedProduct<T, S>(B).apply(M, out, n_threads).
template <class T, class S>
void multiply_widened(const MatrixCRef<S>& M, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads);

// M * B for many M stored in S and one B (the streamed hold-out kernel's row blocks), B
// prepared once (widened_product.cpp). Up to kWidenedNarrowColumns columns, M's entries
// are widened to T in registers: one or two columns by the row kernels, more on register
// tiles over B packed once; each entry's sum is then made in the same order whatever
// M's row count, the rows' grouping or the thread count. Wider B (a change of basis) by
// multiply_widened_panels. B must outlive the object.
constexpr Index kWidenedNarrowColumns = 96;
template <class T, class S>
class WidenedProduct {
public:
    explicit WidenedProduct(const MatrixCRef<T>& B);
    void apply(const MatrixCRef<S>& M, MatrixRef<T> out, int n_threads) const;

private:
    MatrixCRef<T> B_;
    Matrix<T> columns_;                                    // one or two columns, each contiguous
    std::vector<T, Eigen::aligned_allocator<T>> panels_;  // 3 to kWidenedNarrowColumns: tile panels
};

// out = M * B by Eigen's GEMM on each 128-row panel of M widened in cache.
template <class T, class S>
void multiply_widened_panels(const MatrixCRef<S>& M, const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads);

// out = A * R, with R upper triangular when `upper` (its strict lower part is ignored).
// `between`, if given, is called every ~2e9 flops, outside the parallel regions (an
// interruption point: it may throw; out is then partly written). The same bits either way.
template <class T>
void multiply_right(const MatrixCRef<T>& A, const MatrixCRef<T>& R, bool upper, MatrixRef<T> out,
                    int n_threads, const std::function<void()>& between = {});

// out = R * B, with R upper triangular when `upper`; `between` as for multiply_right.
template <class T>
void multiply_left(const MatrixCRef<T>& R, bool upper, const MatrixCRef<T>& B, MatrixRef<T> out,
                   int n_threads, const std::function<void()>& between = {});

// out = R^T * B, with R upper triangular when `upper`.
template <class T>
void multiply_left_transposed(const MatrixCRef<T>& R, bool upper, const MatrixCRef<T>& B,
                              MatrixRef<T> out, int n_threads);

// One triangle of G += scale * B^T B, `upper` picking which (rank_update.cpp: register
// tiles over packed columns of B; the other triangle is never written). The same bits
// for any thread count. `between`, if given, is called every ~1e9 multiply-adds, outside
// the parallel regions (an interruption point: it may throw; G is then partly updated).
template <class T>
void rank_update(const MatrixCRef<T>& B, MatrixRef<T> G, T scale, bool upper, int n_threads,
                 const std::function<void()>& between = {});

// Lower triangle of G += B^T B with B in a lower precision S: each tile product is
// computed in S (twice the flop rate of double) and added to G in T.
template <class T, class S>
void rank_update_widened(const MatrixCRef<S>& B, MatrixRef<T> G, int n_threads);

// Copy the lower triangle of a square matrix onto its upper triangle.
template <class T>
void mirror_lower(MatrixRef<T> G);

// Inverse of an upper triangular matrix (strict lower part of U ignored). `between`, if
// given, is called on the calling thread after each 128-column leaf and every ~2e9 flops
// of the products (an interruption point: it may throw, leaving the result unfinished);
// the bits do not depend on it.
template <class T>
Matrix<T> upper_triangular_inverse(const MatrixCRef<T>& U, int n_threads,
                                   const std::function<void()>& between = {});

// The same in U's own storage (strict lower part of U ignored, and set to zero): the
// same bits as upper_triangular_inverse, without a second k x k matrix (800 MB at
// k = 10000, and a fresh buffer's first touch is slow: see huge_pages.hpp). After a
// throw from `between`, U holds neither U nor its inverse.
template <class T>
void invert_upper_triangular_in_place(Matrix<T>& U, int n_threads, const std::function<void()>& between = {});

// The `between` of a triangular inverse run inside a call with `callback` (which must
// outlive it): reports the stage "inverse", so that Ctrl-C reaches the inverse.
inline std::function<void()> inverse_interruption(const Callback& callback) {
    if (!callback) return {};
    return [&callback] { callback({"inverse", 0, 1}); };
}

}  // namespace nytro::detail
