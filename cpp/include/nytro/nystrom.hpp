// The Nystrom factor: R (m x k) with R R^T a generalised inverse of K_mm, so that
// A = K_nm R turns the restricted least-squares problem into an ordinary one in k
// dimensions (paper, eq. 11).
#pragma once

#include "nytro/options.hpp"
#include "nytro/types.hpp"

#include <vector>

namespace nytro {

// R is stored compactly: only the rows of the centres in `support` (in that order),
// and flagged upper triangular when it is. Row support[i] of the full m x k factor is
// R.row(i); the rows of centres outside the support are zero.
//   pivoted  : support = the k pivots, R = L11^{-T} (upper triangular)
//   cholesky : support = all m centres, R = L^{-T} (upper triangular)
//   qr       : support = all m centres, R = S T^{-1} (dense)
// For every method R R^T K_mm R R^T = R R^T and K_mm R R^T K_mm = K_mm up to the rank
// cut. qr gives pinv(K_mm); pivoted gives the same matrix when K_mm is nonsingular and
// the same fitted function when centres are duplicated (the common singular case).
template <class T>
struct NystromFactor {
    std::vector<Index> support;  // indices of the centres R acts on
    Matrix<T> R;                 // support.size() x rank
    bool upper_triangular = false;
    Index rank() const { return R.cols(); }
    // The full m x k factor (zero rows outside the support).
    Matrix<T> dense(Index m) const;
};

// `callback` (may be empty) is called between panels of the pivoted factor and about
// every 20 ms during the QR factor's LAPACK calls; it may throw to abort.
template <class T>
NystromFactor<T> nystrom_factor(const MatrixCRef<T>& K_mm, const FactorOptions& options = {},
                                int n_threads = 0, const Callback& callback = {});

}  // namespace nytro
