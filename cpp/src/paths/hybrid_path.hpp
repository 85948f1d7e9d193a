// The hybrid Krylov-Tikhonov path (nytro::Method::hybrid): Tikhonov regularisation
// projected onto a growing Krylov space, both parameters selected on the hold-out set.
//
// After k Lanczos steps from c (H V = V T + b v' e_k^T), the projected Tikhonov solution
//     beta_k(lambda) = V (T + lambda n I)^-1 |c| e_1
// costs O(k) per lambda (a tridiagonal solve), and its hold-out predictions O(n_val k)
// given the images K_val R V of the basis, computed once per basis vector. Every lambda of
// the paper's grid (the default of NystromKRLSRegressor) is tried at every k; the path
// value at k is the best hold-out RMSE over the grid, and the stopping rule picks k along
// it. Two limits tie it to the other methods: lambda -> 0 gives CG's k-th iterate (in exact
// arithmetic), and a basis spanning the space gives NKRLS's solution for every lambda.
//
// Why: where the best model is nearly unregularised (Ijcnn, m = 5000: NKRLS picks
// lambda n = 1.5e-3 against lambda_max ~ 1e4), every polynomial filter needs hundreds to
// thousands of products to match Tikhonov on the hold-out set (CG's best: +3.5% RMSE at
// k = 373; the nu-method +2% at 2700; GD +12% at 1e5). The projected Tikhonov solution
// matches NKRLS's hold-out RMSE from k of about 300, with one product per basis vector and
// no eigendecomposition of H.
#pragma once

#include "paths/gradient_path.hpp"

#include <vector>

namespace nytro::detail {

// The paper's 100 values log-spaced in [1e-15, 1], 10^(15 i / 99 - 15) by std::pow.
std::vector<double> paper_lambda_grid();

// The grid tried at every k: the paper's values times kernel_bound = max_i k(x_i, x_i)
// (1 where it is not finite and > 0), each times the number of training rows n inside.
// The paper's lambdas presume a kernel bounded by 1, as its step 1 / (n kappa^2) does
// (kappa^2 = kernel_bound): lambda_max(K_nn / n) <= kappa^2, so the grid spans the
// operator's spectrum from its top down 15 decades. For the distance kernels (bound 1)
// the grid is the paper's, bit for bit; the linear kernel's spectrum scales as |x|^2,
// and an absolute grid over-regularised every lambda at |x| ~ 1e-10 (a zero model).
std::vector<double> hybrid_lambda_grid(double kernel_bound);

// Fills coef, validation_rmse (best over the grid at k = 1, 2, ...), n_iter (the selected
// k), iterations_run, products, lambda (the selected one, of the grid) and step_size = 0.
// Without a hold-out set (validation null) it takes max_iter steps and the grid's smallest
// lambda, 1e-15 kernel_bound. With one, the path ends where the Krylov space becomes invariant (at
// the latest k = dim), before max_iter: later k would repeat its last solution and
// hold-out RMSE (iterations_run is then that k, as after a rule's stop).
template <class T>
void run_hybrid_path(const LinearProblem<T>& problem, Index n, const HoldOut<T>* validation,
                     const IterativeOptions& options, PathResult<T>& result, double kernel_bound);

// Conjugate gradients (nytro::Method::cg) as the same projected path with lambda = 0:
// beta_k = V_k T_k^-1 |c| e_1, CG's k-th iterate in exact arithmetic, from the Lanczos
// basis (reorthogonalised) rather than CG's recursion. Once the Krylov space is invariant
// T_k may be singular (a singular H, e.g. duplicate rows, with c outside its range, or H
// singular to its rounding): the iterate is then V T_k^+ |c| e_1 = H^+ c on that space,
// the minimum-norm least-squares solution, and stays put. CG's recursion instead steps
// along a direction of zero curvature there, dividing rounding noise, or stops short of
// the least-squares solution. One product with H per k, as CG; the basis costs
// dim x min(dim, max_iter) doubles and 4 dim k flops of reorthogonalisation at step k.
// Fills the fields run_hybrid_path fills, lambda = 0.
template <class T>
void run_cg_path(const LinearProblem<T>& problem, const HoldOut<T>* validation, const IterativeOptions& options,
                 PathResult<T>& result);

}  // namespace nytro::detail
