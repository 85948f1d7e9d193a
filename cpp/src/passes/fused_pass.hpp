// One pass over a stored kernel K (n x k) computing K^T (K a - Y): each row block gives
// its residual and its share of the gradient while it is still in cache, so K is read
// from memory once per call. The rows are split into a fixed number of slots (by n
// alone), each summed by one thread and then added in slot order: the result is the
// same bit for bit for any thread count. K may be stored in a lower precision S than the
// compute precision T: up to 8 right-hand columns (the solvers' iterations, Lanczos
// blocks) go through the row kernels, which widen each entry in a register; more columns
// widen each block into a buffer first and use Eigen's products. The row kernels are
// pipelined by one block (see rows_of_slot).
#pragma once

#include "nytro/types.hpp"

#include <vector>

namespace nytro::detail {

template <class T, class S = T>
class FusedPass {
public:
    // K (an owned matrix, or a contiguous view of the caller's memory) must outlive the
    // pass; its rows must be contiguous (outer stride = its column count).
    FusedPass(const MatrixCRef<S>& K, int n_threads);

    // K^T (K a - Y); the reference stays valid until the next call.
    const Matrix<T>& normal_residual(const MatrixCRef<T>& a, const MatrixCRef<T>& Y);
    // K^T K a.
    const Matrix<T>& normal(const MatrixCRef<T>& a);

private:
    void run(const MatrixCRef<T>& a, const MatrixCRef<T>* Y);
    // The rows [begin, end) of one slot through the row kernels, into share (q x k).
    void rows_of_slot(Index begin, Index end, const MatrixCRef<T>* Y, Matrix<T>& share, int thread);

    MatrixCRef<S> K_;
    int threads_;
    Index slots_, block_rows_;
    std::vector<Matrix<T>> partial_;   // one gradient share per slot
    std::vector<Matrix<T>> residual_;  // one residual block per thread
    std::vector<Matrix<T>> previous_;  // the previous block's residual, per thread (row kernels)
    std::vector<Matrix<T>> widened_;   // one widened K block per thread (S != T)
    Matrix<T> a_rows_;                 // a transposed: one contiguous row per output
    Matrix<T> sum_;                    // the row kernels' shares summed (q x k)
    Matrix<T> result_;

    static constexpr Index kRowColumns = 8;  // outputs the row kernels take
};

}  // namespace nytro::detail
