// Column-pivoted QR of a symmetric matrix; LAPACK's ?geqp3 and ?orgqr when they are
// registered (nytro/lapack.hpp), Eigen's ColPivHouseholderQR otherwise.
#pragma once

#include "nytro/types.hpp"

namespace nytro {

// For a symmetric K (m x m): K P = Q D with column pivoting; returns the first k columns
// of Q (m x k, orthonormal), k the number of |D_ii| > rank_tol |D_00|. k = 0 when K is
// numerically zero.
// With a callback it runs on a worker thread on a copy of K, and the callback is called
// about every 20 ms and may throw to abandon it (see src/runtime/abandonable.hpp).
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> pivoted_qr_range(const MatrixCRef<T>& K, double rank_tol,
                                                                   const Callback& callback = {});

}  // namespace nytro
