// One pass over a stored kernel K (n x k) computing K^T (K a - Y): each row block gives
// its residual and its share of the gradient while it is still in cache, so K is read
// from memory once per call. The rows are split into a fixed number of slots (by n
// alone), each summed by one thread and then added in slot order: the result is the
// same bit for bit for any thread count.
#pragma once

#include "nytro/types.hpp"

#include <vector>

namespace nytro::detail {

template <class T>
class FusedPass {
public:
    FusedPass(const Matrix<T>& K, int n_threads);

    // K^T (K a - Y); the reference stays valid until the next call.
    const Matrix<T>& normal_residual(const MatrixCRef<T>& a, const MatrixCRef<T>& Y);
    // K^T K a.
    const Matrix<T>& normal(const MatrixCRef<T>& a);

private:
    void run(const MatrixCRef<T>& a, const MatrixCRef<T>* Y);

    const Matrix<T>& K_;
    int threads_;
    Index slots_, block_rows_;
    std::vector<Matrix<T>> partial_;   // one gradient share per slot
    std::vector<Matrix<T>> residual_;  // one residual block per thread
    Matrix<T> result_;
};

}  // namespace nytro::detail
