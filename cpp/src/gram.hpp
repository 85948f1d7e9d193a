// Streamed Gram matrices: G = K^T K and B = K^T Y for K = k(X, centres), computed from
// row blocks of about 32 MiB of kernel, so K is never stored whole.
#pragma once

#include "nytro/types.hpp"

namespace nytro::detail {

template <class T>
struct Gram {
    Matrix<T> G;           // m x m, symmetric (both triangles filled)
    Matrix<T> B;           // m x q
    double y_squared = 0;  // ||Y||_F^2
};

template <class T>
Gram<T> stream_gram(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const MatrixCRef<T>& centers,
                    double sigma, int n_threads, const Callback& callback);

// Rows of a kernel block streamed by stream_gram (exposed for the cost model).
Index gram_block_rows(Index m);

}  // namespace nytro::detail
