// The paper's estimators, each computing its whole regularisation path and selecting
// on a hold-out set. Conventions shared by all:
//   X (n x d), Y (n x q) are the training rows; X_val, Y_val the hold-out rows (pass
//   0-row matrices for none). Coefficients alpha are over the centres given (the
//   training rows themselves for the full-kernel methods), so that the prediction is
//   k(x, centres) alpha, k the kernel (nytro/kernel.hpp; a double sigma converts to the
//   Gaussian). Validation RMSE is sqrt(mean squared error over all n_val x q
//   entries). The paths take targets with max |y| and max |y_val| in [2^-400, 2^400]
//   (or 0), whose squared errors float64 holds; others throw std::invalid_argument:
//   divide them by a power of two (exact) and multiply the coefficients by it.
#pragma once

#include "nytro/kernel.hpp"
#include "nytro/options.hpp"
#include "nytro/types.hpp"

#include <functional>
#include <vector>

namespace nytro {

template <class T>
struct PathResult {
    Matrix<T> coef;                        // centres x q: alpha at the selected t
    std::vector<double> validation_rmse;   // RMSE after iterations 1..len (empty without hold-out)
    Index n_iter = 0;                      // the selected t (max_iter without hold-out)
    Index iterations_run = 0;              // iterations computed (< max_iter after an early stop,
                                           // or for hybrid at an invariant Krylov space)
    Index products = 0;                    // products with A^T A (K for Landweber) taken: one
                                           // per iteration stepwise, far fewer by Lanczos
    double step_size = 0.0;                // the step actually used
    Index rank = 0;                        // columns of R (NYTRO) or n (Landweber)
    Solver solver = Solver::direct;        // the solver that ran
    double lambda = 0.0;                   // method hybrid: the selected lambda (before the
                                           // factor n); 0 for the other methods
};

template <class T>
struct TikhonovResult {
    Matrix<T> coef;                        // centres x q: alpha at the selected lambda
    std::vector<double> validation_rmse;   // one per lambda (empty without hold-out)
    Index selected = 0;                    // index of the selected lambda in the grid
    Index rank = 0;                        // columns of R (NKRLS) or numerical rank of K
};

// NYTRO: gradient descent on A = K_nm R, beta_0 = 0, alpha_t = R beta_t, validation
// RMSE after every iteration; t picked by options.stopping.
template <class T>
PathResult<T> nytro_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                         const MatrixCRef<T>& centers, const KernelSpec& kernel,
                         const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                         const NytroOptions& options = {});

// The iterative path over operators the caller supplies, for backends whose data live
// elsewhere (nytro.dask: the products and the hold-out errors are computed where the
// chunks are). The path, its step, stopping rule, certification and Krylov bases are the
// in-memory solvers' own (options.method: gd, nu, cg or hybrid).
template <class T>
struct OperatorProblem {
    Index dim = 0;  // rows of an iterate (k: H is k x k)
    Index q = 1;    // outputs
    // out = H p for p of dim rows and any number of columns (H symmetric positive semidefinite).
    std::function<void(const Matrix<T>& p, Matrix<T>& out)> apply;
    Matrix<T> rhs;   // c, dim x q
    Matrix<T> lift;  // R (alpha_rows x dim): an iterate's coefficients are R beta
    // The hold-out values (pooled RMSE, or error rates with options.metric = error) of the
    // coefficient sets alphas (alpha_rows x c q, c blocks of q columns): c values. Empty:
    // no hold-out set (the path then runs max_iter steps).
    std::function<std::vector<double>(const Matrix<T>& alphas, Index q)> holdout;
    // Optional, for method hybrid with the RMSE: for each output column c, the R factor of
    // the hold-out images [W K_val B_c, W y_c] of its basis coefficients B_c (alpha_rows x
    // k_c), (k_c + 1) x (k_c + 1) upper triangular, times sqrt of the column's weight in
    // the pooled RMSE (W: the rows' weight scales). The path then grows its Krylov spaces
    // to the end and validates every (k, lambda) from this one call (holdout_rows: what
    // the pooled RMSE divides by, n_val); holdout is still called where c is 0.
    std::function<std::vector<Eigen::MatrixXd>(const std::vector<Matrix<T>>& bases)> holdout_factors;
    double holdout_rows = 0;
    double holdout_bytes = 0;   // what one holdout call costs, in bytes read
    Index holdout_most = 0;     // the most coefficient sets one call should take (0: the path's own)
    double iteration_bytes = 0; // what one apply reads (0: unknown)
    double storage_epsilon = 0; // float's epsilon where H is kept in float32 under a float64 fit
    Index n = 1;                // training rows: step rule "paper", hybrid's lambda n
    double kernel_bound = 1.0;  // max k(x, x) over the training rows (step rule "paper")
};

// Fills coef (R beta at the selected t), validation_rmse, n_iter, iterations_run,
// step_size, products and lambda as nytro_path does; rank = dim.
template <class T>
PathResult<T> operator_path(const OperatorProblem<T>& problem, const IterativeOptions& options);

// What a path of `options` is priced at before it runs, by solver="auto"'s cost model:
// the products with H and the iterates validated that it is expected to take for an H of
// dimension k, with a hold-out set (validated) or without; `planned` is the most products
// it can take (max_iter, or the count of gd's Lanczos basis where its iterates come from
// one). A backend that chooses between its own solvers (nytro.dask) prices them by it.
struct PathLength {
    double products = 0, iterations = 0, planned = 0;
};

template <class T>
PathLength expected_path_length(const IterativeOptions& options, Index k, bool validated);

// Landweber / early stopping on the full kernel: alpha_t = alpha_{t-1} - s (K alpha - y).
template <class T>
PathResult<T> landweber_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                             const MatrixCRef<T>& X_val, const MatrixCRef<T>& Y_val,
                             const IterativeOptions& options = {});

// Nystrom KRLS along a lambda grid: alpha = R (A^T A + lambda n I)^-1 A^T y.
template <class T>
TikhonovResult<T> nkrls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y,
                             const MatrixCRef<T>& centers, const KernelSpec& kernel,
                             const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                             const MatrixCRef<T>& Y_val, const TikhonovOptions& options = {});

// KRLS (Tikhonov on the full kernel) along a lambda grid: alpha = (K + lambda n I)^-1 y.
template <class T>
TikhonovResult<T> krls_path(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel,
                            const std::vector<double>& lambdas, const MatrixCRef<T>& X_val,
                            const MatrixCRef<T>& Y_val, const TikhonovOptions& options = {});

// KOLS: alpha = pinv(K) y, singular values below rcond * max cut (rcond < 0: n * eps).
// `callback` (may be empty) is called about every 20 ms during the eigendecomposition and
// may throw to abort it. sample_weights (empty: all 1; see TikhonovOptions::sample_weights):
// alpha = S pinv(S K S) S y with S = diag(sqrt(w')).
template <class T>
Matrix<T> kols(const MatrixCRef<T>& X, const MatrixCRef<T>& Y, const KernelSpec& kernel, double rcond = -1.0,
               int n_threads = 0, const Callback& callback = {},
               const std::vector<double>& sample_weights = {});

}  // namespace nytro
