// The Nystrom factor as a fit holds it. The pivoted and jittered-Cholesky factors come
// as the triangular U whose inverse is R, and R is formed only when a consumer needs it
// as a matrix (A = K_nm R in the gram and spectral solvers and in NKRLS). The direct
// solver only lifts vectors, R p and R^T g, and does so by triangular solves with U: the
// inverse is never formed (triangular_solve.hpp).
#pragma once

#include "nytro/nystrom.hpp"

namespace nytro::detail {

template <class T>
class FitFactor {
public:
    FitFactor() = default;
    // `factor` holds R itself, or with `holds_U` the upper triangular U with R = U^-1.
    FitFactor(NystromFactor<T> factor, bool holds_U) : factor_(std::move(factor)), holds_U_(holds_U) {}

    Index rank() const { return factor_.rank(); }
    const std::vector<Index>& support() const { return factor_.support; }
    bool upper_triangular() const { return factor_.upper_triangular; }
    // Whether R is still to be formed: then needing it costs a k^3 / 3-flop inverse.
    bool inverse_pending() const { return holds_U_; }
    // Bytes read by one lift (the triangle or the whole of the stored matrix).
    double lift_bytes() const;

    // The factor with R formed (U inverted in place, once), calling `callback` between
    // the inverse's blocks (it may throw: the factor is then unusable, as the fit that
    // holds it is abandoned).
    const NystromFactor<T>& formed(int n_threads, const Callback& callback = {}) const;

    // out = R B and out = R^T B, by solves with U while R is not formed.
    void lift(const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) const;
    void lift_transposed(const MatrixCRef<T>& B, MatrixRef<T> out, int n_threads) const;

private:
    // Mutable: forming R changes how the factor is stored, not the factor.
    mutable NystromFactor<T> factor_;
    mutable bool holds_U_ = false;
};

// nystrom_factor without its input checks, for a K_mm computed here (square, finite,
// symmetric), which it overwrites instead of copying; the triangular factors are kept
// as U (FitFactor).
template <class T>
FitFactor<T> factor_of_kernel(Matrix<T>&& K_mm, const FactorOptions& options, int n_threads,
                              const Callback& callback = {});

}  // namespace nytro::detail
