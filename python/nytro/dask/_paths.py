"""The paths run on the client in m dimensions: the step, gd's Lanczos iterates, the
stopping rule applied as the hold-out errors come, and the hybrid path."""
from __future__ import annotations

import collections
import math

import numpy as np
import scipy.linalg

from .. import _checks as chk
from .. import reference
from ._centres import _kernel_bound
from ._cluster import _broadcast, _chunk_tasks, _client_product, _CORE_LOCK, _task_threads, _tree_sum
from ._data import _chunk_rows, _exponents, _row_blocks
from ._passes import _images_part, _OVERFLOW, _tree_r


def _top_eigenvalue_process(dim, dtype):
    """lambda_max(H) as the C++ core estimates it for step_size="auto" (Lanczos with full
    reorthogonalisation from its fixed start vector, stopped when the top Ritz value moves
    by at most 1e-13 relative, 1e-6 in float32), so that the same step comes out: a
    generator that yields the vectors to multiply by H (float64, dim) and is sent their
    products, and returns the estimate (StopIteration's value)."""
    tol = 1e-6 if dtype == np.float32 else 1e-13
    most = min(120, dim)
    v = np.fmod(0.6180339887498949 * np.arange(1, dim + 1, dtype=np.float64), 1.0) - 0.5
    V = np.zeros((dim, most + 1))
    V[:, 0] = v / np.linalg.norm(v)
    diagonal, off = [], []
    value, coupling = 0.0, 0.0
    for k in range(most):
        w = np.asarray((yield V[:, k]), dtype=np.float64)
        applied = np.linalg.norm(w)
        diagonal.append(float(w @ V[:, k]))
        if k > 0:
            off.append(coupling)
        for _ in range(2):
            w = w - V[:, :k + 1] @ (V[:, :k + 1].T @ w)
        b = np.linalg.norm(w)
        complete = not b > 4 * np.finfo(np.float64).eps * applied or k + 1 == dim
        if not complete:
            coupling = b
            V[:, k + 1] = w / b
        top = float(scipy.linalg.eigh_tridiagonal(np.array(diagonal), np.array(off), eigvals_only=True)[-1])
        if (k + 1 >= 3 and abs(top - value) <= tol * abs(top)) or complete or k + 1 == most:
            return top
        value = top
    return value


def _top_eigenvalue(H, dim=None, dtype=None) -> float:
    """lambda_max(H) (a matrix, or a function applying it to a dim-vector of dtype) by
    _top_eigenvalue_process, one product at a time."""
    if not callable(H):
        matrix, dim, dtype = H, H.shape[0], H.dtype
        H = lambda v: matrix @ v  # noqa: E731
    process = _top_eigenvalue_process(dim, dtype)
    vector = next(process)
    while True:
        try:
            vector = process.send(H(vector.astype(dtype)))
        except StopIteration as stop:
            return stop.value


def _resolve_step(step_size, method, H, n_train, dim=None, dtype=None):
    if method == "cg":
        return 0.0
    if chk.check_step_size(step_size)[0] == "paper":
        return 1.0 / n_train
    return _step_from_top(step_size, method, _top_eigenvalue(H, dim, dtype))


def _step_from_top(step_size, method, top):
    """The step of rule "auto" or a given (checked) step, from lambda_max(A^T A) = top."""
    rule, value = chk.check_step_size(step_size)
    if rule == "auto":
        if not np.isfinite(top):  # the core's error: the kernel's products overflowed
            raise RuntimeError(f"lambda_max(A^T A) = {top}: {_OVERFLOW}")
        if not top > 0:
            raise RuntimeError(f"lambda_max(A^T A) = {top}: cannot set step_size='auto'")
        return 1.0 / top
    limit = (1.0 if method == "nu" else 2.0) / top
    if not value < limit * (1 + 1e-9):
        raise ValueError(f"step_size={value} is unstable for method '{method}': it must be below "
                         f"{'1' if method == 'nu' else '2'} / lambda_max(A^T A) = {limit}")
    return value


def _projected_gd(a, b, norm, step, max_iter):
    """z_1..z_max_iter (k x max_iter) of gd on T z = norm e_1 from z_0 = 0, T the
    tridiagonal (a, b): z_t = U diag(p_t(theta)) U^T norm e_1, p_t(x) = (1 - (1 - s x)^t)
    / x (s t at x = 0), by expm1 and log1p where s theta is small (1 - s theta near 1,
    whose power would lose the digits of s theta), by the plain power elsewhere (s theta
    up to 2 for a stable step: 1 - s theta may be negative)."""
    theta, U = scipy.linalg.eigh_tridiagonal(a, b) if len(a) > 1 else (a.copy(), np.ones((1, 1)))
    t = np.arange(1, max_iter + 1, dtype=np.float64)
    x = step * theta[:, None]
    small = np.abs(x) < 0.5
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gone = np.where(small, -np.expm1(t * np.log1p(-np.where(small, x, 0.0))), 1.0 - (1.0 - x) ** t)
        p = np.where(x == 0, step * t, gone / np.where(x == 0, 1.0, theta[:, None]))
    return U @ (p * (norm * U[0])[:, None])


def _certified(a, b, coupling, norm, step, max_iter, eps) -> np.ndarray | None:
    """The projected iterates Z (k x max_iter) of a basis of k = len(a) vectors whose
    remainder has norm `coupling`, where the core's bound certifies every one: |beta_t -
    V z_t| <= s coupling sum_{i<t} |z_i[k]| within 64 eps |z_t|; None where it does not."""
    Z = _projected_gd(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), norm, step, max_iter)
    drift = step * coupling * np.concatenate([[0.0], np.cumsum(np.abs(Z[-1]))[:-1]])
    return Z if np.all(drift <= 64 * eps * np.linalg.norm(Z, axis=0)) else None


# The core's kMostCertified (paths/gradient_path.hpp): past it gd always steps.
_MOST_CERTIFIED = 1 << 17


def _lanczos_applies(iterates, method, dtype, max_iter) -> bool:
    """Whether gd's iterates may come from Lanczos bases, as the core's lanczos_applies:
    method "gd", iterates "lanczos", or "auto" in float64 compute (float32's rounding the
    basis would amplify), max_iter within what the bound certifies."""
    if method != "gd" or iterates == "stepwise" or max_iter > _MOST_CERTIFIED:
        return False
    return iterates == "lanczos" or np.dtype(dtype) == np.float64


def _by_lanczos(applies, iterates, mode, k, low) -> bool:
    """Whether they do, as the core's by_lanczos: "auto" takes them where a product with
    H reads more than twice the basis' k doubles a step, as the core measures it: always
    in "direct" mode (n k kernel values), in "gram" mode for 0.5 k^2 entries of A^T A of
    8 bytes (4 with storage="float32") above 16 k bytes, i.e. k > 4 (k > 8)."""
    if not applies:
        return False
    return iterates == "lanczos" or mode == "direct" or 0.5 * k * k * (4 if low else 8) > 2.0 * k * 8


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


def _basis_limit(dim, q, max_iter) -> int:
    """The most vectors a column's basis may take, as the core's basis_limit
    (paths/lanczos_path.cpp): at most half the stepwise path's products (32 at least, never
    past max_iter), 512, and 256 MiB of float64 bases for the q columns."""
    by_memory = max(1, int(256 * 2**20 / (dim * q * 8.0)) - 1)
    return max(1, min(dim, min(max_iter, max(32, max_iter // 2)), 512, by_memory))


def _lanczos_gd(apply, c, step, max_iter, eps, top=None):
    """gd's iterates beta_1..beta_max_iter for H beta = c from Lanczos bases, as the core's
    iterates="lanczos" (paths/lanczos_path.hpp): each column's basis grows (all columns'
    vectors in one product per step) until the bound certifies all max_iter iterates within
    64 eps of stepping, at most _basis_limit vectors. step: the step; or, with `top` (a
    _top_eigenvalue_process), a function of its lambda_max giving the step: the estimate
    then runs in the same products as the bases (as the core's LanczosGradient), which
    grow meanwhile, and the certification starts once it is known. Returns (iterates,
    products, step), iterates None where a column is not certified by then (step
    instead)."""
    q = c.shape[1]
    columns = [c[:, j].astype(np.float64) for j in range(q)]
    norms = [float(np.linalg.norm(x)) for x in columns]
    most = _basis_limit(c.shape[0], q, max_iter)
    # One step past `most`, so that the last vector allowed comes with its coupling.
    processes = {j: reference._lanczos_process(columns[j], most + 1, eps, False) for j in range(q) if norms[j] > 0}
    pending = {j: next(process)[0] for j, process in processes.items()}  # the growing bases' next vectors
    bases = {j: [] for j in processes}
    grown = {}  # per column: its tridiagonal (a, b) and the remainder's norm (None: an invariant space)
    projected = {}
    estimate = None if top is None else next(top)  # the estimate's next vector, None once it is known
    products = 0
    while True:
        if estimate is None:  # the step is known: certify what the bases hold
            for j, (a, b, coupling) in list(grown.items()):
                k = len(a)
                # An invariant space, or t <= k: V z_t is beta_t itself.
                Z = (_projected_gd(a, b, norms[j], step, max_iter) if coupling is None or k >= max_iter
                     else _certified(a, b, coupling, norms[j], step, max_iter, eps))
                if Z is not None:
                    projected[j] = Z
                    del grown[j]
                    pending.pop(j, None)
                elif j not in pending:  # `most` vectors, not certified
                    return None, products, step
            if not pending:
                break
        running = list(pending)
        for j in running:
            bases[j].append(pending[j].copy())
        vectors = [pending[j] for j in running] + ([] if estimate is None else [estimate])
        W = apply(np.stack(vectors, axis=1).astype(c.dtype)).astype(np.float64)
        products += 1
        for i, j in enumerate(running):
            try:
                vector, a, b = processes[j].send(W[:, i])
            except StopIteration as stop:  # an invariant space: every iterate exact
                _, a, b, _, _ = stop.value
                grown[j] = (np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), None)
                del pending[j]
                continue
            k = len(a)
            grown[j] = (np.asarray(a, dtype=np.float64), np.asarray(b[:k - 1], dtype=np.float64), b[k - 1])
            if k >= most:
                del pending[j]
            else:
                pending[j] = vector
        if estimate is not None:
            try:
                estimate = top.send(W[:, -1])
            except StopIteration as stop:
                estimate, step = None, step(stop.value)
    betas = np.zeros((max_iter,) + c.shape)
    for j, Z in projected.items():
        V = np.stack(bases[j][:Z.shape[0]], axis=1)
        betas[:, :, j] = (V @ Z).T
    return [beta.astype(c.dtype) for beta in betas], products, step


class _StoppingWatch:
    """reference._select's rule applied one hold-out value at a time, as the core's
    StoppingRule (paths/stopping.cpp) applies it while iterating: push(value) says whether
    the path ends at that t; selection() is (t_selected, t_stopped) of the values pushed,
    reference._select's answer for them (NaN included: a first NaN is np.argmin's
    minimum, and never a `<` improvement). O(window) work and memory per value."""

    def __init__(self, stopping, tol, window, patience, metric):
        self.stopping, self.window, self.patience = stopping, window, patience or 0
        self.by_error = metric == "error"
        self.tol = (0.05 if stopping == "relative" else 1e-4) if tol is None else tol
        self.t, self.first = 0, None
        # metric "error": reference._select's plateau, the index of the first value that
        # differs from the first (None until one does: no iteration is counted before).
        self.plateau = None if self.by_error else 0
        self.improved, self.improved_value = 0, None  # the last strict (`<`) improvement
        self.lowest, self.lowest_value = 0, None      # np.argmin's 1-based answer so far
        self.before = None                            # min of the values older than the window
        self.recent = collections.deque(maxlen=window)
        self.stopped = None

    def push(self, value) -> bool:
        value = float(value)
        self.t += 1
        t = self.t
        if t == 1:
            self.first, self.improved, self.improved_value = value, 1, value
        if self.plateau is None and value != self.first:  # NaN differs from everything
            self.plateau = t - 1
        if self.lowest == 0 or (not math.isnan(self.lowest_value)
                                and (math.isnan(value) or value < self.lowest_value)):
            self.lowest, self.lowest_value = t, value
        if value < self.improved_value:
            self.improved, self.improved_value = t, value
        if len(self.recent) == self.window:
            old = self.recent[0]  # np.minimum propagates NaN, as np.min does
            self.before = old if self.before is None else float(np.minimum(self.before, old))
        self.recent.append(value)
        if self.stopped is None and self._ends(t):
            self.stopped = t
        return self.stopped is not None

    def _judged(self, t) -> bool:
        return self.plateau is not None and t - self.plateau >= self.window

    def _ends(self, t) -> bool:
        if self.stopping == "best":
            plateau = t if self.plateau is None else self.plateau
            return bool(self.patience) and t - max(self.improved, plateau) >= self.patience
        if self.stopping == "relative":
            if t < self.window + 1 or not self._judged(t):
                return False
            inside = float(np.min(self.recent))
            return bool(self.before - inside <= self.tol * self.before)
        if t < self.window or not self._judged(t):
            return False
        recent = np.asarray(self.recent)
        fall = -self.window * np.polyfit(np.arange(self.window, dtype=float), recent, 1)[0]
        return bool(fall <= self.tol * recent.mean() if self.by_error else fall < self.tol)

    def selection(self):
        end = self.stopped or self.t
        if self.stopping == "window":
            return end, end
        if self.stopping == "best" and self.patience and self.stopped is not None:
            return self.improved, end
        return self.lowest, end


def _block_limit(m, q) -> int:
    """The most iterates validated in one pass: their m x q coefficients within 32 MiB of
    float64 (the client's copy and the hold-out rows' predictions of a chunk), 4096 at most."""
    return max(1, min(4096, (32 << 20) // (8 * max(1, m * q))))


def _run_path(betas, R, q, path_errors, watch, step, max_iter, validated):
    """The path from the iterates `betas` (an iterator of k x q arrays, formed on demand):
    validated in blocks of growing size (path_errors(alphas) gives the hold-out values of
    the m x (L q) coefficients alphas), the stopping rule `watch` (a _StoppingWatch; None
    without a hold-out set: the last iterate) applied as the values come, so that the
    iterates formed and the memory held follow the iterations the rule runs, not max_iter
    (at most one block past the stop; the blocks double up to _block_limit). validated(done) is
    called after each block. Returns (coef at the selected t, the path to the stop,
    selected, stopped, iterates formed)."""
    def finite(beta):
        if not np.all(np.isfinite(beta)):
            raise RuntimeError(f"the iterations diverged (step_size={step}): a stable step is below "
                               "2 / lambda_max(A^T A)")
        return beta

    if watch is None:
        last, formed = None, 0
        for last in betas:
            formed += 1
        return _client_product(R, finite(last)), np.zeros(0), max_iter, max_iter, formed
    path, kept, formed = [], {}, 0
    most = _block_limit(R.shape[0], q)
    # Each block is a pass over the hold-out rows (a read of X's chunks in "gram" mode): a
    # rule that can stop starts with a few times the iterations it needs before it can
    # (patience or window), one that cannot (stopping="best" without patience) validates
    # as many as the block's memory allows at once.
    reach = watch.patience if watch.stopping == "best" else watch.window
    size = min(most, max(64, 4 * reach)) if reach else most
    while watch.stopped is None:
        block = [beta for _, beta in zip(range(size), betas)]
        if not block:
            break
        formed += len(block)
        finite(block[-1])
        alphas = _client_product(R, np.hstack(block))
        values = np.asarray(path_errors(alphas), dtype=np.float64)
        start = len(path)
        for i, value in enumerate(values):
            path.append(value)
            kept[start + i + 1] = alphas[:, i * q:(i + 1) * q]
            if watch.push(value):
                break
        validated(len(path))
        # Keep the coefficients a selection may still take (the best so far by either of
        # reference._select's counts, or the last), copied out of the block's array.
        kept = {t: alpha.copy() for t, alpha in kept.items() if t in (watch.lowest, watch.improved, len(path))}
        size = min(2 * size, most)
    selected, stopped = watch.selection()
    return kept[selected].copy(), np.asarray(path[:stopped]), selected, stopped, formed


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
