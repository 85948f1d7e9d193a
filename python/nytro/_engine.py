"""NYTRO's path over operators: the core's path engine (nytro._core.operator_path, the
in-memory fits' own: step, stopping rule, certified Lanczos iterates, Krylov bases,
hybrid's lambda grid) fed products with A^T A and hold-out errors from Python. Its
callers supply only the operators: nytro.dask (passes over the chunks) and the
estimators' partial_fit (sums kept between calls, nytro._batches). Nystrom KRLS from a
held A^T A (shifted_solves, best_lambda) is theirs in common too."""
from __future__ import annotations

import functools

import numpy as np
import scipy.linalg

from . import _checks as chk
from . import options as opt
from ._api import _scaled_coef


def block_limit(m, q) -> int:
    """The most iterates validated in one pass: their m x q coefficients within 32 MiB of
    float64 (the client's copy and the hold-out rows' predictions of a chunk), 4096 at most."""
    return max(1, min(4096, (32 << 20) // (8 * max(1, m * q))))


def engine_path(apply, c, R, holdout, values, *, family, n_train, kernel_bound, iteration_bytes, storage_epsilon, tol,
                holdout_bytes, report, image_factors=None, n_val=0):
    """Every method (gd, nu, cg, hybrid) by the core's path engine
    (nytro._core.operator_path), the in-memory fits' own: its step, stopping rule, gd's
    certified Lanczos iterates, the Krylov bases of cg and hybrid and hybrid's lambda grid
    (kernel_bound times the paper's), over the caller's operators. apply(B) = H B (H =
    A^T A, k x k, in whatever form the caller holds it); c = A^T Y (k x q) and R (m x k)
    the factor that lifts a k-vector to the m coefficients of the centres; holdout(alphas)
    the hold-out values of the m x (L q) coefficient sets alphas (None without a hold-out
    set), which the engine asks for once per chunk of iterates (holdout_bytes: one call's
    cost, as the in-memory streamed hold-out kernel counts it; the chunk's length at most
    block_limit's); image_factors (hybrid with the RMSE): factors(bases) -> the hold-out
    images' R factors of the whole path, over n_val rows (HoldOut::image_factors).
    values: the parameters of `family` (a nytro.options family whose rows the core's
    struct is built from); tol: the rule's, for the scaled targets; report(stage, done,
    total): progress. Returns the core's path dict (coef m x q in the targets' scaled
    units)."""
    from . import _core
    dtype = c.dtype
    core = opt.core_options(family, values)
    core.tol = tol
    m, q = R.shape[0], c.shape[1]
    done = [0]

    def applied(B):
        return np.ascontiguousarray(apply(B), dtype=dtype)

    def validated(alphas, q):
        if done[0]:  # the sets validated before this call were all read by the rule: the path went on
            report("validation", done[0], values["max_iter"])
        done[0] += alphas.shape[1] // q
        return np.asarray(holdout(alphas), dtype=np.float64).tolist()

    # Each validation is a pass over the hold-out rows: a path that runs to max_iter
    # validates as many iterates at once as the block's memory allows; one whose rule can
    # stop, at most a few times what the rule needs before it can (patience or window),
    # since the engine iterates a whole chunk before reading its errors (in "direct" mode
    # each iterate a pass over the workers' blocks).
    reach = core.patience if values["stopping"] == "best" else core.window
    most = block_limit(m, q) if not reach else min(block_limit(m, q), max(64, 4 * reach))
    raw = getattr(_core, f"operator_path_{np.dtype(dtype).name}")(
        apply=applied, rhs=np.ascontiguousarray(c, dtype=dtype), lift=np.ascontiguousarray(R, dtype=dtype),
        holdout=None if holdout is None else validated, holdout_bytes=holdout_bytes, holdout_most=most,
        holdout_factors=image_factors if holdout is not None else None, holdout_rows=float(n_val),
        iteration_bytes=iteration_bytes, storage_epsilon=storage_epsilon, n=n_train, kernel_bound=kernel_bound,
        options=core)
    if holdout is not None:
        report("validation", raw["iterations_run"], values["max_iter"])
    return raw


def pooled_rmse(errors, scales: chk.TargetScales, n_val):
    """The hold-out RMSE path in units of 2^E (as the core's) from the summed squared
    errors per column ((L, q), scaled targets): column j weighted by (2^e_j / 2^E)^2."""
    weights = np.asarray(scales.weights() or np.ones(errors.shape[1]))
    return np.sqrt((errors @ weights) / (n_val * errors.shape[1]))


def unscaled(coef, path, scales: chk.TargetScales, metric="rmse"):
    """coef and the path in units of y, as the in-memory functions return them (the
    same ValueError where coef overflows; an error rate has no units)."""
    if not scales.active:
        return coef, path
    if metric != "error":
        with np.errstate(over="ignore"):
            path = np.ldexp(path, scales.top)
    return _scaled_coef(coef, scales), path


def shifted_solves(H, c, shifts, solver, dtype):
    """(H + shift I)^-1 c for every shift, side by side (k x q L, shift l's output j in
    column l q + j), as the core's Tikhonov solves, for the callers that hold H
    (nytro.dask, nytro._batches): "eigh", one eigendecomposition of H, its eigenvalues
    clipped at 0 (so that the tiny end of a grid keeps pseudo-inverse semantics); "cholesky", one Cholesky
    factorisation per shift in dtype, falling back to the eigendecomposition for a shift
    whose factorisation fails or whose solution is not finite."""
    H, c = H.astype(dtype, copy=False), c.astype(dtype, copy=False)

    @functools.cache
    def eigen():
        w, V = np.linalg.eigh(H)
        return np.maximum(w.astype(np.float64), 0), V, V.T @ c

    M = np.empty_like(H) if solver == "cholesky" else None  # factored in place, shift after shift

    def solve(shift):
        if solver == "cholesky":
            np.copyto(M, H)
            M[np.diag_indices_from(M)] += dtype.type(shift)
            try:
                factor = scipy.linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
                solution = scipy.linalg.cho_solve(factor, c, check_finite=False)
                if np.all(np.isfinite(solution)):
                    return solution
            except np.linalg.LinAlgError:
                pass  # not positive definite: the eigendecomposition, as the core
        w, V, projected = eigen()
        return V @ (projected / (w + shift)[:, None]).astype(dtype)

    return np.hstack([solve(shift) for shift in shifts])


def best_lambda(path, lambdas, metric) -> int:
    """The core's selection along the grid: the smallest finite value, a tie of error
    rates going to the larger lambda (the stronger regularisation), of RMSEs to the first."""
    best = -1
    for i, value in enumerate(path):
        if np.isfinite(value) and (best < 0 or value < path[best]
                                   or (metric == "error" and value == path[best] and lambdas[i] > lambdas[best])):
            best = i
    if best < 0:
        raise RuntimeError("the solution is not finite for any lambda of the grid (overflow)")
    return best
