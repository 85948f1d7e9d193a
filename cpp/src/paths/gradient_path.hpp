// The iterative path shared by NYTRO and Landweber: iterates beta_1, beta_2, ... of an
// iterative regulariser (gd, nu or cg; see nytro::Method) for H beta = c from beta_0 = 0,
// the validation RMSE of every iterate, and the stopping rule that picks t. Stepwise,
// iterates are buffered in chunks of 8 to 64 (sized from what an iteration and a
// validation read) so that mapping them to coefficients and predicting the validation
// set are matrix-matrix products rather than one matrix-vector product per iteration.
// gd's iterates may instead come from a Lanczos basis (lanczos_path.hpp); cg's always do,
// hybrid's path (hybrid_path.hpp).
#pragma once

#include "nytro/solvers.hpp"
#include "paths/validation.hpp"

#include <functional>

namespace nytro::detail {

template <class T>
struct LinearProblem {
    Index dim = 0;         // rows of an iterate
    Index q = 1;           // columns of an iterate (outputs)
    Index alpha_rows = 0;  // rows of the coefficients an iterate maps to
    // out = H p for p, out both dim x c (c = q on the stepwise path; the Lanczos blocks
    // and the lambda_max estimate pass other widths) (H symmetric positive semidefinite).
    std::function<void(const Matrix<T>& p, Matrix<T>& out)> apply;
    Matrix<T> rhs;         // c, dim x q
    double iteration_bytes = 0;  // what one `apply` reads from memory (0: unknown)
    // Relative rounding of H as stored: float's epsilon where K_nm or A^T A is kept in
    // float32 under a float64 fit, 0 where H is held in T. Iterates need be no closer to
    // the path than this (lanczos_path.hpp).
    double storage_epsilon = 0;
    // alphas = coefficients of a block of iterates (dim x c*q -> alpha_rows x c*q), in the
    // coordinates the validation set is given in.
    std::function<void(const MatrixCRef<T>& betas, MatrixRef<T> alphas)> to_alpha;
    // Optional last map of the selected coefficients to coefficients over the centres
    // (the spectral solver validates in eigen-coordinates).
    std::function<Matrix<T>(const Matrix<T>&)> finish;
};

// Runs the path; fills coef, validation_rmse, n_iter, iterations_run, step_size and
// products. gd's iterates come from a Lanczos basis where options.iterates allows it
// (lanczos_path.hpp), else one product with H per iteration.
// `step` (<= 1 / lambda_max(H) for stability of gd and nu) is ignored by cg.
template <class T>
void run_path(const LinearProblem<T>& problem, double step, const HoldOut<T>* validation,
              const IterativeOptions& options, PathResult<T>& result);

// The step from options (resolve_step with n training rows and kernel_bound = max_i
// k(x_i, x_i)) and then the path (hybrid: its lambda grid scaled by kernel_bound,
// hybrid_lambda_grid). Where gd's
// iterates come from a Lanczos basis, the Lanczos estimate of lambda_max for the automatic
// step runs in the basis' own block products instead of 8-20 products of its own.
template <class T>
void run_path_with_step(const LinearProblem<T>& problem, Index n, const HoldOut<T>* validation,
                        const IterativeOptions& options, PathResult<T>& result, double kernel_bound = 1.0);

// lambda_max of a symmetric positive semidefinite operator of size dim (applied to
// dim x 1 matrices), by Lanczos with full reorthogonalisation from a fixed start vector
// (so it is deterministic), to relative accuracy ~1e-12 for a separated top eigenvalue.
template <class T>
double largest_eigenvalue(Index dim, const std::function<void(const Matrix<T>&, Matrix<T>&)>& apply,
                          const Callback& callback);

// The Ritz value's settling tolerance: the operator is applied in T, so in float32 it
// settles at ~1e-7.
template <class T>
constexpr double top_eigenvalue_tolerance() {
    return sizeof(T) == 4 ? 1e-6 : 1e-13;
}

// Whether gd's iterates may come from a Lanczos basis (see lanczos_path.hpp): method gd,
// max_iter <= kMostCertified, and iterates lanczos, or automatic in float64 compute. In
// float32 compute each product's own rounding (sums in float) enters the basis'
// tridiagonal matrix as one fixed perturbation, which t iterates amplify coherently where
// the stepwise path's per-step errors partly cancel: over 400 iterates at m = 150 the
// direct solver's predictions moved 5e-4 to 1e-3 by Lanczos, 7e-5 to 3e-4 stepwise.
// float32 storage with float64 compute is not affected: its rounding is a fixed
// perturbation of the stored matrix, the same for both.
//
// Past kMostCertified iterations gd steps: the certificate steps the projected system
// through every iterate up to max_iter (O(k) each, k up to 512) at each basis size it
// tries, which would cost more than the products it saves (and grew without bound with
// max_iter: LandweberRegressor(max_iter=10**9) spent its time certifying).
constexpr Index kMostCertified = Index(1) << 17;

template <class T>
bool lanczos_applies(const IterativeOptions& options);

// Throws the error of a path whose iterates diverged at t (the step was unstable).
[[noreturn]] void throw_diverged(Index t, double step);

// Validates the options common to every iterative method.
void check_iterative_options(const IterativeOptions& options);

// The step from options: fixed, paper (gamma / n with gamma = 1 / kernel_bound, kernel_bound
// = max_i k(x_i, x_i): 1 for the distance-based kernels, max ||x_i||^2 for the linear one) or auto (1 / lambda_max, computed by `lambda_max`). cg needs
// no step (0 is returned without computing lambda_max).
double resolve_step(const IterativeOptions& options, Index n, const std::function<double()>& lambda_max,
                    double kernel_bound = 1.0);

}  // namespace nytro::detail
