// H b for a symmetric H (k x k) reading only its lower triangle: each row block of the
// triangle serves twice while it is in cache, for its own rows (L b) and, transposed,
// for the rows above (L^T b). An iteration of the Gram solver is bound by reading H, so
// this halves its time against a full matrix-vector product.
//
// The rows are split into a fixed number of slots of about equal triangle area (by k
// alone). A slot writes its own rows directly and accumulates its transposed share for
// the rows above it in a private vector; the shares are added in slot order, so the
// result is the same bit for bit for any thread count. H may be stored in a lower
// precision S than the compute precision T: for one right-hand column the row kernels
// widen each entry in a register; several columns widen each block in cache first.
#pragma once

#include "nytro/types.hpp"

#include <vector>

namespace nytro::detail {

template <class T, class S = T>
class SymmetricPass {
public:
    // H must outlive the pass; its strict upper triangle is never read.
    SymmetricPass(const Matrix<S>& H, int n_threads);

    // out = H b (out has b's shape).
    void apply(const MatrixCRef<T>& b, MatrixRef<T> out);

private:
    const Matrix<S>& H_;
    int threads_;
    Index block_rows_;
    std::vector<Index> bounds_;          // slot s owns rows [bounds_[s], bounds_[s + 1])
    std::vector<Matrix<T>> transposed_;  // slot s: its L^T b share for rows [0, bounds_[s])
    std::vector<Matrix<T>> widened_;     // per thread (S != T): a widened block, or its diagonal part
};

}  // namespace nytro::detail
