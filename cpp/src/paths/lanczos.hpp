// The Lanczos process with full reorthogonalisation, one step at a time, for a symmetric
// positive semidefinite H applied elsewhere: the callers batch the products of several
// processes into one block product (H is read once whatever the number of columns).
// Used for lambda_max (the automatic step) and for gd's iterates (lanczos_path.hpp).
#pragma once

#include "nytro/types.hpp"

#include <limits>
#include <vector>

namespace nytro::detail {

// A remainder below kBreakdown eps sqrt(k) |H| after k steps is rounding: the Krylov space
// is (numerically) invariant. Also the rank threshold of T's Ritz values (hybrid_path.cpp).
// eps is that of the arithmetic H is applied in (LanczosProcess::start).
inline constexpr double kBreakdown = 4.0;

// Builds V (dim x k, orthonormal) and T (k x k, tridiagonal) with
// H V = V T + coupling v' e_k^T, from a start vector.
class LanczosProcess {
public:
    // start must be nonzero; it is normalised here. Room for `most_steps` steps is
    // allocated at once (growing the basis a column at a time would copy it every step).
    // epsilon: the relative rounding of a product with H (float's where H is applied in
    // float32: what it leaves of a vector in the span of V is then float rounding, which
    // measured against double's would pass for a direction past an invariant space).
    // With stop_when_singular, the process also ends (complete) at a step where T_k turns
    // singular to rounding: a Ritz value at or below kBreakdown eps sqrt(k) |H| (counted
    // by Sturm's sequence, O(k)). The space then holds a direction of curvature at
    // rounding (c's part in H's numerical null space), and the remainder test alone can
    // miss it: the Ritz vector of that value may lie mostly in the earlier basis vectors,
    // so the new remainder is not small (duplicate rows, 20 distinct points of 200: one
    // more step of noise, and T_21 solved through a Ritz value of 1e-16).
    void start(const Eigen::VectorXd& start, Index most_steps,
               double epsilon = std::numeric_limits<double>::epsilon(), bool stop_when_singular = false);

    // The vector whose product with H the next step takes (v' in the relation above).
    auto next_vector() const { return basis_.col(size()); }

    // One step, given product = H next_vector(), at most most_steps() times. Orthogonalises
    // against the whole basis twice (V stays orthonormal to rounding), and marks the
    // process complete when the remainder vanishes (an invariant subspace) or the basis
    // spans the space.
    void absorb(Eigen::VectorXd product);

    Index size() const { return Index(diagonal_.size()); }
    bool complete() const { return complete_; }
    double coupling() const { return coupling_; }  // 0 once complete
    const std::vector<double>& diagonal() const { return diagonal_; }
    const std::vector<double>& off_diagonal() const { return off_; }
    // v_1..v_k (the next vector excluded).
    auto basis() const { return basis_.leftCols(size()); }
    Index most_steps() const { return basis_.cols() - 1; }
    double epsilon() const { return epsilon_; }
    double scale() const { return scale_; }  // |H| from below: the largest |H v_i| met

    // The largest eigenvalue of T (its top Ritz value, a lower bound on lambda_max(H)).
    double top_ritz_value() const;

private:
    Eigen::MatrixXd basis_;             // dim x (most_steps + 1): v_1..v_k, the next vector, room
    std::vector<double> diagonal_, off_;
    double coupling_ = 0;
    double scale_ = 0;  // the largest |H v_i| met: H's norm, from below
    double epsilon_ = std::numeric_limits<double>::epsilon();
    bool stop_when_singular_ = false;
    // Whether T_k has an eigenvalue at or below x (Sturm's count of negative pivots of
    // T_k - x I, stable in the sense that it is exact for T's entries perturbed by rounding).
    bool has_ritz_value_below(double x) const;
    bool complete_ = false;
};

// lambda_max(H) by Lanczos from a fixed pseudo-random start (a Weyl sequence: deterministic,
// and never orthogonal to the top eigenvector in practice), stopped once the top Ritz
// value settles to `tolerance` (relative), at most 120 steps.
class TopEigenvalue {
public:
    TopEigenvalue(Index dim, double tolerance);

    bool done() const { return done_; }
    auto next_vector() const { return process_.next_vector(); }
    void absorb(const Eigen::VectorXd& product);
    double value() const { return value_; }
    Index steps() const { return process_.size(); }
    Index most_steps() const { return process_.most_steps(); }  // 120, or dim if smaller

private:
    LanczosProcess process_;
    double tolerance_;
    double value_ = 0;
    bool done_ = false;
};

}  // namespace nytro::detail
