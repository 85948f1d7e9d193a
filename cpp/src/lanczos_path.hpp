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
// stepwise path itself accumulates. Kernel spectra decay fast, so on Insurance (m = 2000)
// 32 products with H certify all 500 iterates.
//
// The validation set then needs only the images of the basis vectors (K_val R V: k
// columns, not one per iterate), and the coefficients only at the selected t. Where the
// bound still fails at the basis' size limit (long paths on a flat spectrum) the path is
// run stepwise instead, at a cost of at most half the products it would have taken.
#pragma once

#include "gradient_path.hpp"

#include <vector>

namespace nytro::detail {

template <class T>
class LanczosGradient {
public:
    // Builds the basis. step must be stable (< 2 / lambda_max(H)): the bound relies on it.
    LanczosGradient(const LinearProblem<T>& problem, double step, Index max_iter, const Callback& callback);

    // Every iterate up to max_iter is certified; otherwise the path must be run stepwise.
    bool covers_path() const { return certified_ >= max_iter_; }

    // Products with H taken.
    Index products() const { return products_; }

    // The whole path from the basis: validation RMSE of every iterate, the stopping rule,
    // coefficients of the selected one (as run_path, which calls this).
    void run(const Validation<T>* validation, const IterativeOptions& options, PathResult<T>& result) const;

private:
    // One column of c: its Lanczos basis and projected matrix.
    struct Column {
        double norm_c = 0;            // |c|: the projected right-hand side is norm_c e_1
        Eigen::MatrixXd basis;        // dim x (k + 1): v_1..v_k and the next vector v'
        std::vector<double> diagonal, off;  // T's diagonal (k) and off-diagonal (k - 1)
        double coupling = 0;          // b in H V = V T + b v' e_k^T (0: the space is invariant)
        bool complete = false;        // invariant subspace found: every iterate is exact
        Index size() const { return Index(diagonal.size()); }
    };

    void extend(Index steps);                          // more Lanczos steps on every open column
    Index certified(const Column& column) const;       // the last t whose bound holds
    void step_projected(const Column& column, Eigen::VectorXd& z) const;  // z += s (|c| e_1 - T z)
    Index capacity() const;                            // the basis size limit
    // alpha_rows x k: the coefficients the basis vectors map to.
    Matrix<T> coefficient_basis(const Column& column, int n_threads) const;

    const LinearProblem<T>& problem_;
    double step_;
    Index max_iter_;
    Callback callback_;
    double tolerance_;
    std::vector<Column> columns_;
    Index certified_ = 0, products_ = 0;
};

}  // namespace nytro::detail
