"""The paths on the client, in m dimensions. gd, nu and cg run on the core's path engine
(the in-memory fits' own: step, stopping rule, certified Lanczos iterates, Krylov bases),
fed Dask's products and hold-out errors (_engine_path); what remains a Python copy is
method "hybrid" (its hold-out images by TSQR over the chunks) and the counts the cost
model of solver="auto" prices."""
from __future__ import annotations

import math

import numpy as np

from .. import options as opt
from .. import reference
from ._centres import _kernel_bound
from ._cluster import _broadcast, _chunk_tasks, _CORE_LOCK, _task_threads, _tree_sum
from ._data import _chunk_rows, _exponents, _row_blocks
from ._passes import _images_part, _tree_r


# The core's kMostCertified (paths/gradient_path.hpp): past it gd always steps.
_MOST_CERTIFIED = 1 << 17


def _lanczos_applies(iterates, method, dtype, max_iter) -> bool:
    """Whether gd's iterates may come from Lanczos bases, as the core's lanczos_applies:
    method "gd", iterates "lanczos", or "auto" in float64 compute (float32's rounding the
    basis would amplify), max_iter within what the bound certifies."""
    if method != "gd" or iterates == "stepwise" or max_iter > _MOST_CERTIFIED:
        return False
    return iterates == "lanczos" or np.dtype(dtype) == np.float64


def _lanczos_products(max_iter, k) -> float:
    """Products that gd's Lanczos iterates take for max_iter iterates, as the core's
    cost model counts them (lanczos_products in solvers/nytro.cpp)."""
    return min(float(max_iter), 8.0 + 4.0 * math.sqrt(math.sqrt(max_iter)), float(k))


# The iteration "cg" and "hybrid" are expected to select: kExpectedKrylovBest in
# solvers/nytro.cpp (docs/design.md, "How many products auto prices"; measured:
# benchmarks/results/auto/history.md, "How many products auto prices").
_EXPECTED_KRYLOV_BEST = 100


def _priced_products(planned, method, validated, stopping, patience) -> float:
    """The products the cost model prices for a path planned to take `planned` (max_iter,
    or gd's Lanczos count), as the core's expected_path_length: for "cg" and "hybrid"
    ending `patience` iterations after their best on a hold-out set (stopping="best"),
    the expected best plus the patience, at most `planned`."""
    if method in ("cg", "hybrid") and validated and stopping == "best" and patience:
        return float(min(planned, _EXPECTED_KRYLOV_BEST + patience))
    return float(planned)


def _block_limit(m, q) -> int:
    """The most iterates validated in one pass: their m x q coefficients within 32 MiB of
    float64 (the client's copy and the hold-out rows' predictions of a chunk), 4096 at most."""
    return max(1, min(4096, (32 << 20) // (8 * max(1, m * q))))


def _engine_path(apply, c, R, holdout, values, *, n_train, kernel_bound, iteration_bytes, storage_epsilon, tol,
                 holdout_bytes, report):
    """Methods gd, nu and cg by the core's path engine (nytro._core.operator_path), the
    in-memory fits' own: its step, stopping rule, gd's certified Lanczos iterates and cg's
    Krylov basis, over Dask's operators. apply(B) = H B on the client (the gram mode's
    A^T A) or a pass over the workers' blocks (direct); holdout(alphas) the hold-out
    values of the m x (L q) coefficient sets alphas (None without a hold-out set), a pass
    over the hold-out rows per call, which the engine makes once per chunk of iterates
    (holdout_bytes: one call's cost, as the in-memory streamed hold-out kernel counts
    it). values: the family's parameters (DASK_NYTRO's rows); tol: the rule's, for the
    scaled targets. Returns the core's path dict (coef m x q in the targets' scaled units)."""
    from .. import _core
    dtype = c.dtype
    core = opt.core_options(opt.DASK_NYTRO, values)
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
    most = _block_limit(m, q) if not reach else min(_block_limit(m, q), max(64, 4 * reach))
    raw = getattr(_core, f"operator_path_{np.dtype(dtype).name}")(
        apply=applied, rhs=np.ascontiguousarray(c, dtype=dtype), lift=np.ascontiguousarray(R, dtype=dtype),
        holdout=None if holdout is None else validated, holdout_bytes=holdout_bytes, holdout_most=most,
        iteration_bytes=iteration_bytes, storage_epsilon=storage_epsilon, n=n_train, kernel_bound=kernel_bound,
        options=core)
    if holdout is not None:
        report("validation", raw["iterations_run"], values["max_iter"])
    return raw


def _shifted_solutions(a, b, shifts, norm):
    """z_k(shift) = (T_k + shift I)^-1 norm e_1 for every k = 1..len(a) and shift, T_k the
    leading k x k block of the tridiagonal (a, b), by elimination without pivoting as the
    C++ core does (T_k + shift I is positive definite for shift > 0): the forward sweep is
    shared by every k. Returns a list over k of (k, len(shifts)) arrays."""
    K = len(a)
    pivots = np.empty((K, len(shifts)))
    forward = np.empty((K, len(shifts)))
    upper = np.empty((K, len(shifts)))
    pivots[0] = a[0] + shifts
    forward[0] = norm / pivots[0]
    for i in range(1, K):
        upper[i - 1] = b[i - 1] / pivots[i - 1]
        pivots[i] = a[i] + shifts - b[i - 1] * upper[i - 1]
        forward[i] = -b[i - 1] * forward[i - 1] / pivots[i]
    solutions = []
    for k in range(1, K + 1):
        z = forward[:k].copy()
        for i in range(k - 2, -1, -1):
            z[i] -= upper[i] * z[i + 1]
        solutions.append(z)
    return solutions


def _hybrid(data, fraction, seed, C, R, H, c, sigma, n_train, n_val, max_iter, stopping, tol, window, patience,
            n_threads, split_every, scales, grid=None, eps=None, metric="rmse"):
    """Method "hybrid" from A^T A: Lanczos on the client, the hold-out images' R factors
    by TSQR on the workers, then the core's selection of (t, lambda) on `grid` (None: the
    paper's; without a hold-out set its first lambda is taken); eps: the rounding of a
    product with H (None: H's dtype's). metric "error": the path of (weighted) error
    rates, from every hold-out row's prediction at every (t, lambda) as the core's tally
    (_hybrid_error_part). Returns (coef m x q for the scaled targets, path, selected,
    stopped, lambda, Lanczos steps)."""
    if grid is None:  # the core's hybrid_lambda_grid: the paper's by its pow, times the kernel's bound
        grid = np.array([10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(100)]) * _kernel_bound(
            data, sigma, fraction, seed)
    q = c.shape[1]
    # The outputs' Lanczos processes in lockstep: one product with H (in direct mode a pass
    # over the workers' blocks) per step for all of them, as the in-memory block product.
    # As the core's, each stops where its remainder, or a Ritz value, is at the rounding of
    # a product with H (float32's for a float32 H); at such an invariant space a Ritz value
    # of rounding is dropped from the last solve (reference._invariant_solver).
    eps = reference._krylov_eps(H.dtype) if eps is None else eps
    rhs = [c[:, j].astype(np.float64) for j in range(q)]
    running = [j for j in range(q) if np.linalg.norm(rhs[j]) != 0]
    processes = reference._lanczos_columns(lambda B: (H @ B.astype(H.dtype)).astype(np.float64),
                                           [rhs[j] for j in running], min(max_iter, H.shape[0]), eps=eps,
                                           stop_when_singular=True)
    columns = [None] * q  # per output: (coefficients R V, tridiagonal a, b, |c|, invariant) or None for c = 0
    for j, (V, a, b, complete, scale) in zip(running, processes):
        norm = float(np.linalg.norm(rhs[j]))
        T = np.diag(a) + np.diag(b, 1) + np.diag(b, -1)
        invariant = reference._invariant_solver(T, norm, eps, scale) if complete else None
        columns[j] = (R @ V.astype(H.dtype), a, b, norm, invariant)
    sizes = [0 if col is None else col[0].shape[1] for col in columns]
    k_run = max(sizes)
    shifts = grid * float(n_train)
    solutions = [None if col is None else _shifted_solutions(col[1], col[2], shifts, col[3]) for col in columns]
    for col, solved in zip(columns, solutions):
        if col is not None and col[4] is not None:
            solved[-1] = np.column_stack([col[4](shift) for shift in shifts])

    def coef_at(k, lam):
        out = np.zeros((R.shape[0], q), dtype=H.dtype)
        for j, col in enumerate(columns):
            if col is not None:
                kc = min(k, sizes[j])
                out[:, j] = col[0][:, :kc] @ solutions[j][kc - 1][:, lam].astype(H.dtype)
        return out

    if n_val == 0:
        return coef_at(k_run, 0), np.zeros(0), max_iter, max_iter, float(grid[0]), k_run
    bases = np.hstack([col[0] for col in columns if col is not None] or [np.zeros((R.shape[0], 0), H.dtype)])
    if metric == "error":
        path, best_lambdas = _hybrid_error_path(data, fraction, seed, C, bases, columns, solutions, shifts, sigma,
                                                n_threads, split_every, scales)
        selected, stopped = reference._select(np.asarray(path), stopping, tol, window, patience, metric)
        lam = best_lambdas[selected - 1]
        return (coef_at(min(selected, k_run), lam), np.asarray(path[:stopped]), selected, stopped,
                float(grid[lam]), k_run)
    C_b, bases_b = _broadcast(C, bases)
    parts = _chunk_tasks(data, _images_part, fraction, seed, C_b, bases_b, sizes, sigma, data.dtype,
                         data.estimator, n_threads, _exponents(scales))
    factors = _tree_r(parts, split_every)
    images = []
    for j, size in enumerate(sizes):
        S, g, rho = factors[j][:size, :size], factors[j][:size, size], factors[j][size, size]
        residual = np.empty(size + 1)  # residual[k] = ||y - Q_k g_k||^2, as sums of squares
        residual[size] = rho * rho
        for k in range(size - 1, -1, -1):
            residual[k] = residual[k + 1] + g[k] * g[k]
        images.append((S, g, residual))
    # Column j's squared errors weighted as the core weights them (chk.TargetScales).
    weights = scales.weights() or [1.0] * q
    path, best_lambdas = [], []
    for k in range(1, k_run + 1):
        squared = np.zeros(len(grid))
        for j, (S, g, residual) in enumerate(images):
            kc = min(k, sizes[j])
            if kc == 0:
                squared += weights[j] * residual[0]
                continue
            top = np.triu(S[:kc, :kc]) @ solutions[j][kc - 1] - g[:kc, None]
            squared += weights[j] * ((top * top).sum(0) + residual[kc])
        finite = np.isfinite(squared)
        best = int(np.argmin(np.where(finite, squared, np.inf))) if finite.any() else 0
        path.append(float(np.sqrt(squared[best] / (n_val * q))) if finite.any() else np.inf)
        best_lambdas.append(best)
    # As in memory, the path ends where every Krylov space is invariant (later t repeat the
    # last solution); where every column of c is 0 it holds t = 1 alone (predictions 0).
    if not path:
        zero = sum(w * r[0] for w, (_, _, r) in zip(weights, images))
        path, best_lambdas = [float(np.sqrt(zero / (n_val * q)))], [0]
    selected, stopped = reference._select(np.asarray(path), stopping, tol, window, patience)
    lam = best_lambdas[selected - 1]
    return (coef_at(min(selected, k_run), lam), np.asarray(path[:stopped]), selected, stopped, float(grid[lam]),
            k_run)


def _hybrid_error_path(data, fraction, seed, C, bases, columns, solutions, shifts, kern, n_threads, split_every,
                       scales):
    """hybrid's error-rate path: per t, the rate of the best lambda (the smallest, a tie
    going to the larger lambda, as the core's), from one pass over the hold-out rows; t = 1
    alone (predictions 0) where every column of c is 0. Returns (path, best lambda per t)."""
    # The projected problems travel as their tridiagonals (the tasks solve them, O(k^2 L)),
    # not as their k_run^2 L / 2 solutions; an invariant space's last solve is sent as is.
    projected = [None if col is None else (col[1], col[2], col[3], solutions[j][-1] if col[4] is not None else None)
                 for j, col in enumerate(columns)]
    k_run, L = max([0] + [len(p[0]) for p in projected if p is not None]), len(shifts)
    C_b, bases_b = _broadcast(C, bases)
    parts = _chunk_tasks(data, _hybrid_error_part, fraction, seed, C_b, bases_b, projected, shifts, kern,
                         data.dtype, data.estimator, n_threads, _exponents(scales))
    summed = _tree_sum(parts, ((k_run + 1) * L + 1,), split_every).compute(optimize_graph=False)
    rates = summed[:-1].reshape(k_run + 1, L) / summed[-1]
    if k_run == 0:
        return [float(rates[0, 0])], [0]
    path, best_lambdas = [], []
    for row in rates[1:]:
        best = len(row) - 1 - int(np.argmin(row[::-1]))  # the last of the smallest
        path.append(float(row[best]))
        best_lambdas.append(best)
    return path, best_lambdas


def _hybrid_error_part(X, Y, start, stop, fraction, seed, C, bases, projected, shifts, kern, dtype, estimator,
                       n_threads, exponents):
    """This chunk's summed w' of the hold-out rows misclassified at every (t, lambda) of
    hybrid's path, t = 0 (predictions 0) to the longest basis, then the total w' of its
    hold-out rows ((t_max + 1) L + 1,). projected: per output, None (c = 0) or (a, b, |c|,
    last) of its Lanczos process, last its invariant space's solutions at its full size
    (None: the plain solve). Predictions P_j = k(X_val, C) bases_j z_j(t, lambda), the
    class of a row that of reference._classes, as the core's ErrorTally."""
    X, Y, scale = _chunk_rows(X, Y, start, stop, fraction, seed, dtype, estimator, exponents, True)
    weights = np.ones(len(Y)) if scale is None else scale * scale
    sizes = [0 if p is None else len(p[0]) for p in projected]
    solutions = []
    for p in projected:
        solved = None if p is None else _shifted_solutions(p[0], p[1], shifts, p[2])
        if p is not None and p[3] is not None:
            solved[-1] = p[3]
        solutions.append(solved)
    K, L, q = max([0] + sizes), len(shifts), len(projected)
    wrong = np.zeros((K + 1, L))
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        for r0, r1 in _row_blocks(len(X), max(C.shape[0], bases.shape[1], L * q)):
            images = (kern(X[r0:r1], C, threads) @ bases).astype(np.float64)
            truth = reference._classes(Y[r0:r1].astype(np.float64))
            for t in range(K + 1):
                P = np.zeros((r1 - r0, L, q))
                first = 0
                for j, size in enumerate(sizes):
                    kc = min(t, size)
                    if kc:
                        P[:, :, j] = images[:, first:first + kc] @ solutions[j][kc - 1]
                    first += size
                # The class of each row: the sign of one column, or the first largest column.
                predicted = P[:, :, 0] > 0 if q == 1 else np.argmax(P, axis=2)
                wrong[t] += weights[r0:r1] @ (predicted != truth[:, None])
    return np.append(wrong.ravel(), np.sum(weights))
