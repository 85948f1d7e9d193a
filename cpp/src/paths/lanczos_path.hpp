// Gradient-descent iterates through a Lanczos basis (nytro::Iterates::lanczos).
//
// GD from beta_0 = 0 keeps every iterate in the Krylov space of (H, c):
// beta_t = p_t(H) c with p_t(x) = s sum_{j<t} (1 - s x)^j. After k Lanczos steps from c,
// H V = V T + b v' e_k^T (V orthonormal, T tridiagonal k x k), and GD run on the projected
// system T z = |c| e_1 gives z_t with V z_t = beta_t exactly while t <= k. Beyond k the
// error e_t = beta_t - V z_t obeys e_{t+1} = (I - s H) e_t - s b z_t[k] v', and
// |I - s H| <= 1 for a stable step (s < 2 / lambda_max), so
//     |e_t| <= s b sum_{i<t} |z_i[k]|,
// computed alongside z_t at O(k) per iteration. The basis grows until this bound is
// below 64 machine epsilons of |beta_t| for every t <= max_iter: within the rounding the
// stepwise path itself accumulates (64 float epsilons where H is stored in float32: the
// rounding of H itself). Kernel spectra decay fast, so on Insurance (m = 2000)
// 32 products with H certify all 500 iterates.
//
// The validation set then needs only the images of the basis vectors (K_val R V: k
// columns, not one per iterate), and the coefficients only at the selected t. Where the
// bound still fails at the basis' size limit (long paths on a flat spectrum) the path is
// run stepwise instead, at a cost of at most half the products it would have taken.
#pragma once

#include "paths/gradient_path.hpp"
#include "paths/lanczos.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

namespace nytro::detail {

// One column c of a right-hand side and its Lanczos process from c (not started when
// c = 0): the projected right-hand side is norm_c e_1. Shared by gd's Lanczos iterates
// and the hybrid path (hybrid_path.hpp).
struct KrylovColumn {
    double norm_c = 0;
    LanczosProcess process;
    Index size() const { return process.size(); }
    bool complete() const { return norm_c == 0 || process.complete(); }  // every iterate exact
};

// One KrylovColumn per column of c, each with room for most_steps steps; epsilon and
// stop_when_singular as LanczosProcess::start's.
template <class T>
std::vector<KrylovColumn> start_columns(const Matrix<T>& c, Index most_steps,
                                        double epsilon = std::numeric_limits<double>::epsilon(),
                                        bool stop_when_singular = false);

// The column's basis vectors first.. as coefficients (alpha_rows x (k - first)).
template <class T>
Matrix<T> basis_as_coefficients(const LinearProblem<T>& problem, const KrylovColumn& column, Index first);

template <class T>
class LanczosGradient {
public:
    // Starts a basis for every column of c; with estimate_top, the Lanczos estimate of
    // lambda_max (for the automatic step) runs in the same block products, so that its
    // 8-20 products cost nothing beyond the basis' own.
    LanczosGradient(const LinearProblem<T>& problem, Index max_iter, const Callback& callback, bool estimate_top);

    // lambda_max(H), as largest_eigenvalue gives it (further products, if needed, also
    // grow the basis).
    double top_eigenvalue();

    // Grows the basis until the bound certifies every iterate up to `horizon` (at most
    // max_iter) for this step, or to its size limit. step must be stable
    // (< 2 / lambda_max(H)).
    void certify(double step, Index horizon);

    // Every iterate up to horizon (at most max_iter) is certified.
    bool covers(Index horizon) const { return certified_ >= std::min(horizon, max_iter_); }

    // Products with H taken.
    Index products() const { return products_; }

    // The whole path from the basis: validation RMSE of every iterate, the stopping rule,
    // coefficients of the selected one (as run_path, which calls this). Where the path
    // goes past the certified iterates (a rule that stops early has not stopped), the
    // basis grows to certify twice as far. Returns false, with `result` unusable, when
    // it cannot grow far enough: the path must then be run stepwise.
    bool run(const HoldOut<T>* validation, const IterativeOptions& options, PathResult<T>& result);

private:
    using Column = KrylovColumn;

    void extend(Index steps);                          // more steps on every open process
    bool open(const Column& column) const { return !column.complete() && column.size() < capacity_; }
    Index certified(const Column& column) const;       // the last t whose bound holds
    void step_projected(const Column& column, Eigen::VectorXd& z) const;  // z += s (|c| e_1 - T z)
    bool diverging(const std::vector<Eigen::VectorXd>& z) const;  // a projected residual > 2 |c|
    // The basis size limit: memory, reorthogonalisation cost, half the stepwise products.
    static Index basis_limit(const LinearProblem<T>& problem, Index max_iter);

    const LinearProblem<T>& problem_;
    Index max_iter_;
    Index capacity_;  // basis_limit(problem_, max_iter_)
    Callback callback_;
    double tolerance_;
    double step_ = 0;
    std::vector<Column> columns_;
    std::optional<TopEigenvalue> top_;
    Index certified_ = 0, products_ = 0;
};

}  // namespace nytro::detail
