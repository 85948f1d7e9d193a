// Options of the solvers: one plain struct per family, a field a line.
#pragma once

#include "nytro/types.hpp"

#include <string>
#include <vector>

namespace nytro {

// How R with R R^T = pinv(K_mm) is computed (see nystrom.hpp).
enum class FactorMethod {
    pivoted,   // rank-revealing pivoted Cholesky (default: fast, same fitted function as qr)
    qr,        // the paper's text: column-pivoted QR of K_mm, then Cholesky of S^T K_mm S
    cholesky,  // the authors' code: Cholesky of K_mm + jitter I
};

// Step size rule of the gradient iterations.
enum class StepRule {
    automatic,  // 1 / lambda_max(A^T A): the largest stable step (authors' code)
    paper,      // gamma / n with gamma = 1 / max_i k(x_i, x_i) (paper's text)
    fixed,      // the value of IterativeOptions::step_size
};

// How t is picked from the validation path.
enum class Stopping {
    best,      // argmin of the validation RMSE over all max_iter iterations
    relative,  // paper's text: stop when the RMSE has not improved by more than tol
               // (relative) over the last `window` iterations; t* = argmin so far
    window,    // authors' code: least-squares line through the last `window` RMSEs,
               // stop when the fitted decrease -window*slope < tol (absolute); t* = stop
};

// What the hold-out selection minimises: the RMSE of the predictions, or, for targets
// coding classes as +-1 (one column: the sign is the class; several: one-vs-all, the
// column of the largest entry is the class), the fraction of hold-out rows whose
// predicted class is wrong. Ties in the error rate go to the smaller t, and to the larger
// lambda (the stronger regularisation) along a lambda grid. The stopping rules read an
// error path as a step function: they skip its starting plateau, a tie is no
// improvement, and "window"'s tol is relative to the error (see StoppingRule).
enum class Metric {
    rmse,
    error,
};

// The iterative regulariser run along the path (each step costs one product with A^T A).
enum class Method {
    gd,  // gradient descent (Landweber): the paper's NYTRO
    nu,  // Brakhage's nu-method: Chebyshev-type acceleration, ~sqrt(t) steps for GD's t
    cg,  // conjugate gradients on the normal equations (fastest, not a fixed linear filter)
    hybrid,  // Tikhonov projected onto the growing Krylov space of (A^T A, A^T y): every
             // lambda of the paper's grid at every basis size k, (k, lambda) picked on the
             // hold-out set (NKRLS's accuracy in a few hundred products; src/paths/hybrid_path.hpp)
};

// How the iterates of method gd are computed (the same iterates up to rounding; nu and
// cg always step).
enum class Iterates {
    automatic,  // lanczos in float64 compute, unless a product with A^T A costs as little
                // as an iterate (the spectral solver); stepwise in float32 compute, whose
                // rounding per product the basis would amplify
    lanczos,    // from a Lanczos basis of the Krylov space of (A^T A, A^T y), each iterate
                // within 64 eps of the stepwise one by a computed bound: tens of products
                // with A^T A for hundreds of iterations (see src/paths/lanczos_path.hpp); paths
                // longer than 2^17 iterations step (the bound's cost grows with max_iter)
    stepwise,   // one product with A^T A per iteration, as the paper writes it
};

// How NYTRO's iterations are carried out (same iterates up to rounding).
enum class Solver {
    automatic,  // chosen by a cost model from n, m, max_iter and memory
    direct,     // K_nm stored, one fused pass over it per iteration
    gram,       // A^T A formed once from streamed row blocks, iterations in m dimensions
    spectral,   // A^T A = V diag(s) V^T once; each iteration then costs O(m), and the
                // validation O(n_val m), so t_max of 1e5 is affordable
};

// Precision of the large stored matrices (K_nm, A^T A, K_val); iterates, sums and the
// factor always stay in the compute precision.
enum class Storage {
    same,     // the compute precision
    float32,  // float32 storage and float32 products accumulated in float64: half the
              // memory and bytes per iteration, for double compute (no effect in float32)
    float16,  // NYTRO's direct solver only: K_nm in IEEE half precision (K_val in float32),
              // sums in the compute precision: a quarter of float64's memory and bytes per
              // iteration. Its rounding (2^-11 relative) would be amplified by R along
              // centres that K_mm barely separates, so the factor's default rank_tol
              // becomes kFloat16RankTol: the centres within that Schur residual of the
              // others are dropped (see nytro.cpp)
};

// The factor's default relative rank cut with float16 storage (see Storage::float16).
constexpr double kFloat16RankTol = 1e-4;

// How the Tikhonov methods (KRLS, NKRLS) solve along the lambda grid.
enum class TikhonovSolver {
    eigh,      // one eigendecomposition serves every lambda exactly
    cholesky,  // the paper's form: one Cholesky solve per lambda (eigh fallback if singular)
};

struct IterativeOptions {
    Method method = Method::gd;            // see Method
    double nu = 1.0;                       // order of the nu-method (> 0)
    Index max_iter = 500;                  // iterations to run at most (t_max)
    StepRule step_rule = StepRule::automatic;  // see StepRule
    double step_size = 0.0;                // the step when step_rule == fixed
    Stopping stopping = Stopping::best;    // see Stopping
    double tol = -1.0;                     // < 0: 0.05 for relative, 1e-4 for window
    Index window = 10;                     // iterations the early rules look back
    Index patience = 0;                    // best: end the path this many iterations after
                                           // its last improvement (0: run to max_iter)
    Iterates iterates = Iterates::automatic;  // see Iterates (method gd only)
    std::vector<double> validation_weights;  // see TikhonovOptions::validation_weights
    Metric metric = Metric::rmse;          // see Metric (validation_weights apply to rmse)
    double hybrid_lambda = -1.0;           // method hybrid without a hold-out set: the lambda of
                                           // the projected problems (< 0: the grid's smallest),
                                           // e.g. one selected before, to refit at (t, lambda)
    std::vector<double> sample_weights;      // see TikhonovOptions::sample_weights
    std::vector<double> validation_sample_weights;  // see TikhonovOptions::validation_sample_weights
    int n_threads = 0;                     // <= 0: nytro::default_threads()
    Callback callback;                     // progress / interruption, may be empty
};

struct FactorOptions {
    FactorMethod method = FactorMethod::pivoted;  // see FactorMethod
    double rank_tol = -1.0;                // relative rank cut; < 0: m * machine epsilon
    double jitter = 1e-10;                 // added to the diagonal by FactorMethod::cholesky
};

struct NytroOptions : IterativeOptions {
    FactorOptions factor;                  // Nystrom factor
    Solver solver = Solver::automatic;     // see Solver
    Storage storage = Storage::same;       // see Storage
};

struct TikhonovOptions {
    FactorOptions factor;                  // Nystrom factor (NKRLS only)
    TikhonovSolver solver = TikhonovSolver::eigh;  // see TikhonovSolver
    Storage storage = Storage::same;       // K_val and the kernel blocks of A^T A (NKRLS only)
    // Weight of each output column's squared hold-out errors in the pooled RMSE (empty:
    // all 1). Targets whose columns were divided by different powers of two s_j (the
    // Python API, for targets near the ends of the range) are weighted (s_j / max s)^2,
    // so that the path is the unscaled one divided by max s.
    std::vector<double> validation_weights;
    Metric metric = Metric::rmse;          // see Metric (validation_weights apply to rmse)
    // Weight of each training row's squared error (empty: all 1): weighted least squares,
    // (1/n) sum_i w'_i (f(x_i) - y_i)^2 with w' = w n / sum(w), so that lambda keeps its
    // meaning and integer weights fit exactly what repeating the rows would (the loss is
    // (1/sum w) sum_i w_i r_i^2 either way). It is the unweighted problem on the rows of
    // K_nm and Y scaled by sqrt(w'_i) (for the full-kernel methods, K on both sides and
    // alpha = sqrt(w') beta). Finite, >= 0, not all 0, one per row of X.
    std::vector<double> sample_weights;
    // Weight of each hold-out row's squared error in the validation RMSE (empty: all 1),
    // normalised to sum to n_val: sqrt(sum_v w_v r_v^2 / sum_v w_v); with Metric::error,
    // of its misclassification: sum_v w_v [wrong_v] / sum_v w_v (a row of weight 0
    // counts for nothing). Finite, >= 0, not all 0, one per row of X_val.
    std::vector<double> validation_sample_weights;
    int n_threads = 0;                     // <= 0: nytro::default_threads()
    Callback callback;                     // progress / interruption, may be empty
};

// Parse the option strings used by the Python API; unknown values throw
// std::invalid_argument naming the argument and the accepted values. to_string gives
// the same names back (StepRule::fixed is "fixed", which parse_step_rule refuses: a
// numeric step selects it).
FactorMethod parse_factor_method(const std::string& value);
Method parse_method(const std::string& value);
StepRule parse_step_rule(const std::string& value);
Stopping parse_stopping(const std::string& value);
Iterates parse_iterates(const std::string& value);
Metric parse_metric(const std::string& value);
Solver parse_solver(const std::string& value);
TikhonovSolver parse_tikhonov_solver(const std::string& value);
Storage parse_storage(const std::string& value);
const char* to_string(FactorMethod value);
const char* to_string(Method value);
const char* to_string(StepRule value);
const char* to_string(Stopping value);
const char* to_string(Iterates value);
const char* to_string(Metric value);
const char* to_string(Solver value);
const char* to_string(TikhonovSolver value);
const char* to_string(Storage value);

}  // namespace nytro
