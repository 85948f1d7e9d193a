"""Plain-NumPy versions of every core routine, written to be read and used by the tests.

Each function has the signature of its C++-backed twin in ``nytro`` and returns the
same result up to rounding. The arguments that only steer how the C++ core computes
(``solver``, ``iterates``, ``storage``, ``n_threads``, ``progress``) are accepted and
ignored: there is one way to compute everything here, the most direct one.

Symbols follow the paper: K_nm = k(X, centres), R R^T = pinv(K_mm) (or the reflexive
generalised inverse of the pivoted factor), A = K_nm R, beta the iterate in the k
coordinates of A, alpha = R beta the coefficients over the centres.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from . import _checks as chk
from . import options as opt
from ._results import PathResult, TikhonovResult

_MASK64 = (1 << 64) - 1
# The Nystrom factor's default rank_tol with storage="float16" (options.hpp).
FLOAT16_RANK_TOL = 1e-4
# Lanczos: a remainder below this many eps sqrt(k) |H| is rounding (the core's kBreakdown).
LANCZOS_BREAKDOWN = 4.0


# --------------------------------------------------------------------------- kernel
def gaussian_kernel(X, Z, sigma, *, n_threads=None, dtype=None, progress=None):
    """K[i, j] = exp(-||X[i] - Z[j]||^2 / (2 sigma^2)), with the distances from the norms
    and the products, as the core: both sides first shifted by the mean of Z (which leaves
    the kernel unchanged), else a common offset c cancels away everything below
    eps ||c||^2 of the distances."""
    dt = chk.compute_dtype(dtype, X, Z)
    X = chk.as_matrix(X, "X", dt)
    Z = chk.as_matrix(Z, "Z", dt)
    sigma = chk.check_sigma(sigma)
    with np.errstate(over="ignore", invalid="ignore"):
        shift = Z.astype(np.float64).mean(0).astype(dt) if len(Z) else np.zeros(Z.shape[1], dt)
    if not np.all(np.isfinite(shift)):
        shift = np.zeros(Z.shape[1], dt)
    X, Z = X - shift, Z - shift
    squared = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2 * X @ Z.T
    return np.exp(-np.maximum(squared, 0) / dt.type(2 * sigma * sigma)).astype(dt, copy=False)


def kernel_matrix(X, Z, *, kernel="gaussian", sigma=1.0, matern_nu=1.5, n_threads=None, dtype=None, out=None,
                  progress=None):
    """K[i, j] = k(X[i], Z[j]) for the kernels of nytro.kernel_matrix, as the core forms it:
    distance-based kernels on the data less the mean of Z, divided feature by feature by
    the bandwidths (ARD), squared distances from the norms and the products; the linear
    kernel on the data as they are (a shift changes x.z)."""
    dt = chk.compute_dtype(dtype, X, Z)
    X = chk.as_matrix(X, "X", dt)
    Z = chk.as_matrix(Z, "Z", dt)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    if kernel == "linear":
        K = X @ Z.T
    else:
        shift = Z.astype(np.float64).mean(0).astype(dt) if len(Z) else np.zeros(Z.shape[1], dt)
        bandwidths = np.broadcast_to(np.asarray(spec.sigma, dtype=np.float64), (X.shape[1],)).astype(dt)
        X, Z = (X - shift) / bandwidths, (Z - shift) / bandwidths
        squared = np.maximum((X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2 * X @ Z.T, 0)
        if kernel == "gaussian":
            K = np.exp(-squared / 2)
        else:
            nu = 0.5 if kernel == "laplacian" else spec.nu
            u = np.sqrt(2 * nu) * np.sqrt(squared)
            polynomial = {0.5: 1, 1.5: 1 + u, 2.5: 1 + u + u * u / 3}[nu]
            K = polynomial * np.exp(-u)
    K = K.astype(dt, copy=False)
    if out is not None:
        out[...] = K
        return out
    return K


def _kernel(kernel, sigma, matern_nu):
    """k(A, B) for the fits below."""
    return lambda A, B: kernel_matrix(A, B, kernel=kernel, sigma=sigma, matern_nu=matern_nu)


def kernel_predict(X, centers, coef, sigma, *, kernel="gaussian", matern_nu=1.5, n_threads=None, progress=None):
    return _kernel(kernel, sigma, matern_nu)(X, centers) @ np.asarray(coef)


# ---------------------------------------------------------------------- centres
def _splitmix64(state: int):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        yield z ^ (z >> 31)


def sample_centers(n, m, seed):
    """m distinct indices from range(n): partial Fisher-Yates driven by SplitMix64, the
    shuffled positions kept in a dict (O(m) memory, the same swaps as a dense shuffle)."""
    stream = _splitmix64(int(seed))
    moved = {}
    drawn = np.empty(m, dtype=np.int64)
    for i in range(m):
        bound = n - i
        limit = (_MASK64 // bound) * bound  # reject the top so no value is favoured
        x = next(stream)
        while x >= limit:
            x = next(stream)
        j = i + x % bound
        drawn[i] = moved.get(j, j)
        moved[j] = moved.get(i, i)
    return drawn


# ----------------------------------------------------------------- Nystrom factor
def _pivoted_cholesky(K, rank_tol):
    """Diagonal-pivoted Cholesky K[P, P] ~ L L^T, stopped when the largest remaining
    Schur diagonal is <= rank_tol * max(diag K). Returns (pivots, L) with L k x k."""
    m = K.shape[0]
    A = K.astype(np.float64 if K.dtype == np.float64 else K.dtype, copy=True)
    d = np.diag(A).copy()
    order = np.arange(m)
    L = np.zeros_like(A)
    threshold = rank_tol * d.max()
    k = 0
    for j in range(m):
        p = j + int(np.argmax(d[j:]))
        if not d[p] > threshold:
            break
        for arr in (order, d):
            arr[[j, p]] = arr[[p, j]]
        L[[j, p], :j] = L[[p, j], :j]
        A[[j, p], :] = A[[p, j], :]
        A[:, [j, p]] = A[:, [p, j]]
        L[j, j] = np.sqrt(d[j])
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
        d[j + 1:] -= L[j + 1:, j] ** 2
        k = j + 1
    if k == 0:
        raise RuntimeError("K_mm is numerically zero: no Nystrom centre can be used")
    return order[:k], L[:k, :k]


def nystrom_factor(K_mm, *, method="pivoted", rank_tol=None, jitter=1e-10, n_threads=None):
    """R (m x k) with R R^T K_mm R R^T = R R^T and K_mm R R^T K_mm = K_mm.

    pivoted : pivoted Cholesky on the k pivots J; R[J] = L^-T, other rows 0.
    qr      : the paper's text: K_mm P = S D (pivoted QR, rank k), T^T T = S^T K_mm S,
              R = S T^-1, i.e. R R^T = pinv(K_mm).
    cholesky: the authors' code: L L^T = K_mm + jitter I, R = L^-T.
    """
    dt = chk.compute_dtype(None, K_mm)
    K = chk.as_matrix(K_mm, "K_mm", dt)
    m = K.shape[0]
    chk.check_choice("method", method, chk.FACTOR_METHODS)
    tol = m * np.finfo(dt).eps if rank_tol is None else float(rank_tol)
    if method == "pivoted":
        pivots, L = _pivoted_cholesky(K, tol)
        R = np.zeros((m, len(pivots)), dtype=dt)
        R[pivots] = scipy.linalg.solve_triangular(L, np.eye(len(pivots), dtype=dt), lower=True).T
        return R
    if method == "cholesky":
        L = np.linalg.cholesky(K + jitter * np.eye(m, dtype=dt))
        return scipy.linalg.solve_triangular(L, np.eye(m, dtype=dt), lower=True).T
    Q, D, _ = scipy.linalg.qr(K, pivoting=True, mode="economic")
    diag = np.abs(np.diag(D))
    k = int(np.sum(diag > tol * diag[0]))
    S = Q[:, :k]
    M = S.T @ K @ S
    try:
        T = np.linalg.cholesky(M).T
        return scipy.linalg.solve_triangular(T, S.T, trans="T", lower=False).T
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(M)
        keep = w > tol * np.abs(w).max()
        return S @ V[:, keep] / np.sqrt(w[keep])


# ------------------------------------------------------------------ stopping rules
def _select(path, stopping, tol, window, patience=None, metric="rmse"):
    """Apply a stopping rule to a validation path: (t_selected, t_stopped), 1-based.

    best     : argmin over the whole path, or over the path up to `patience`
               iterations after its last improvement.
    relative : stop at the first t > window where the best RMSE inside the last
               `window` iterations improves on the best before them by <= tol
               (relative); select the argmin up to the stop.
    window   : stop at the first t >= window where a least-squares line through the
               last `window` RMSEs falls by less than tol over the window; select t.

    metric "error": the iterations of the starting plateau (values equal to the first)
    are not counted: `window` and `patience` count from the first t whose value differs
    (none while the path stays at its first value); "window" stops where the fitted
    fall is <= tol times the window's mean error.
    """
    path = np.asarray(path)
    plateau = 0
    if metric == "error":
        moved = np.flatnonzero(path != path[0]) if len(path) else np.zeros(0, int)
        plateau = int(moved[0]) if moved.size else len(path)

    def judged(t):  # the last `window` values all lie past the plateau
        return t - plateau >= window

    if stopping == "best":
        if patience:  # end the path `patience` iterations after its last improvement
            best = 1
            for t in range(1, len(path) + 1):
                if path[t - 1] < path[best - 1]:
                    best = t
                if t - max(best, plateau) >= patience:
                    return best, t
        return int(np.argmin(path)) + 1, len(path)
    if stopping == "relative":
        tol = 0.05 if tol is None else tol
        for t in range(window + 1, len(path) + 1):
            if not judged(t):
                continue
            before, inside = path[:t - window].min(), path[t - window:t].min()
            if before - inside <= tol * before:
                return int(np.argmin(path[:t])) + 1, t
        return int(np.argmin(path)) + 1, len(path)
    tol = 1e-4 if tol is None else tol
    x = np.arange(window, dtype=float)
    for t in range(window, len(path) + 1):
        if not judged(t):
            continue
        fall = -window * np.polyfit(x, path[t - window:t], 1)[0]
        if (fall <= tol * path[t - window:t].mean()) if metric == "error" else (fall < tol):
            return t, t
    return len(path), len(path)


def _rmse(predictions, targets):
    return float(np.sqrt(np.mean((predictions.astype(np.float64) - targets) ** 2)))


def _classes(values):
    """The class of each row of +-1 coded values: the sign of one column (f > 0 is the
    positive class), or the column of a row's largest entry (the first on a tie)."""
    return values[:, 0] > 0 if values.shape[1] == 1 else np.argmax(values, axis=1)


def _misclassified(predictions, targets, weights=None):
    """The rows whose class is wrong: their number, or the sum of their weights."""
    wrong = _classes(predictions.astype(np.float64)) != _classes(targets)
    return int(np.count_nonzero(wrong)) if weights is None else float(np.sum(weights[wrong]))


def _error_rate(predictions, targets, weights=None):
    """The fraction of rows whose class is wrong, or with hold-out weights w_v,
    sum_v w_v [wrong_v] / sum_v w_v (a row of weight 0 counts for nothing)."""
    total = max(len(targets), 1) if weights is None else float(np.sum(weights))
    return _misclassified(predictions, targets, weights) / total


def _score(predictions, targets, metric, weights=None):
    """The hold-out measure the selection minimises: the RMSE, or (metric "error") the
    (weighted) fraction of rows whose class is wrong. weights: the hold-out row weights
    of the error rate (the RMSE's are folded into its rows, see _weighted_holdout)."""
    if metric == "error":
        return _error_rate(predictions, targets, weights)
    return _rmse(predictions, targets)


def _best_lambda(values, metric):
    """The grid index of the smallest finite value; error rates tie often, and their tie
    goes to the last index (the grid ascends: the stronger regularisation)."""
    values = np.where(np.isfinite(values), values, np.nan)
    if metric == "error":
        return len(values) - 1 - int(np.nanargmin(values[::-1]))
    return int(np.nanargmin(values))


def _step(step_size, n, gram, bound=1.0):
    if step_size == "paper":
        # gamma / n with gamma = 1 / max_i k(x_i, x_i): 1 for the distance-based kernels
        return 1.0 / (n * (bound if bound > 0 else 1.0))
    if step_size == "auto":
        return 1.0 / float(np.linalg.eigvalsh(gram.astype(np.float64))[-1])
    return float(step_size)


def _nu_coefficients(k, nu):
    """mu_k, omega_k of Brakhage's nu-method (Engl, Hanke, Neubauer, sec. 6.3)."""
    if k == 1:
        return 0.0, (4 * nu + 2) / (4 * nu + 1)
    # Products of ratios, as the core: the quotient of products overflows for large nu.
    mu = ((k - 1) / (k + 2 * nu - 1)) * ((2 * k - 3) / (2 * k + 4 * nu - 1)) \
        * ((2 * k + 2 * nu - 1) / (2 * k + 2 * nu - 3))
    omega = 4 * ((2 * k + 2 * nu - 1) / (2 * k + 4 * nu - 1)) * ((k + nu - 1) / (k + 2 * nu - 1))
    return mu, omega


def _iterates(apply, rhs, method, step, nu, max_iter):
    """beta_1, ..., beta_max_iter of an iterative regulariser for H beta = rhs, beta_0 = 0:
    gd: beta + s (c - H beta);  nu: the nu-method;  cg: conjugate gradients per column, from
    a Lanczos basis (_cg_iterates)."""
    if method == "cg":
        yield from _cg_iterates(apply, rhs, max_iter)
        return
    dt = rhs.dtype.type
    beta = np.zeros_like(rhs)
    previous = beta
    rhs_norm = np.linalg.norm(rhs.astype(np.float64))
    for k in range(1, max_iter + 1):
        # With a stable step |c - H beta| <= |c|: a residual past 2 |c| is divergence.
        gradient = rhs - apply(beta)
        if np.linalg.norm(gradient.astype(np.float64)) > 2 * rhs_norm:
            raise RuntimeError(f"the iterations diverged at t={k} (step_size={step:.6g}): a stable step is "
                               "below 2 / lambda_max(A^T A)")
        if method == "gd":
            beta = beta + dt(step) * gradient
        else:
            mu, omega = _nu_coefficients(k, nu)
            previous, beta = beta, beta + dt(mu) * (beta - previous) + dt(omega) * dt(step) * gradient
        yield beta


def _lanczos(apply, c, steps, with_complete=False, eps=np.finfo(np.float64).eps, stop_when_singular=False):
    """Lanczos with full reorthogonalisation (twice) from c, at most `steps` steps:
    (V dim x k, diagonal, off-diagonal[, complete, |H| from below]), stopped early at an
    invariant subspace. eps: the relative rounding of `apply` (float32's where H is applied
    in float32). stop_when_singular: stop also where a pivot of T_k's LDL^T is within
    rounding (T_k singular: a Ritz value below the remainder's floor, the core's
    LanczosProcess::start)."""
    out = _lanczos_columns(apply, [c], steps, eps, stop_when_singular)[0]
    return out if with_complete else out[:3]


def _lanczos_columns(apply, columns, steps, eps=np.finfo(np.float64).eps, stop_when_singular=False):
    """_lanczos (with_complete) from each vector of `columns` (all of one dtype), the
    processes in lockstep: each step applies H once, to the (dim, p) block of the p
    processes still running, as the core's block products do (one pass over the data per
    step, not one per column, where a product is a pass). Returns one tuple per column."""
    processes = [_lanczos_process(c, steps, eps, stop_when_singular) for c in columns]
    results = [None] * len(columns)

    def advance(j, w):
        try:
            pending[j] = processes[j].send(w)
        except StopIteration as done:
            results[j] = done.value

    pending = {}
    for j in range(len(columns)):
        advance(j, None)
    while pending:
        running = list(pending)
        block = np.stack([pending[j][0] for j in running], axis=1).astype(columns[running[0]].dtype)
        W = apply(block).astype(np.float64)
        pending = {}
        for i, j in enumerate(running):
            advance(j, W[:, i])
    return results


def _lanczos_process(c, steps, eps, stop_when_singular):
    """_lanczos from c as a generator: it yields each Lanczos vector v_k (float64) with the
    tridiagonal so far (the diagonal and off-diagonal lists, live: after the step, the
    off-diagonal's last entry couples v_k to v_{k+1}), is sent H v_k back, and returns (V,
    diagonal, off-diagonal, complete, |H| from below)."""
    dim = c.shape[0]
    V = np.zeros((dim, min(steps, dim) + 1))
    V[:, 0] = c / np.linalg.norm(c)
    diagonal, off = [], []
    scale, complete = 0.0, False
    for k in range(min(steps, dim)):
        w = yield V[:, k], diagonal, off
        scale = max(scale, float(np.linalg.norm(w)))  # |H| from below, as the core's
        diagonal.append(float(w @ V[:, k]))
        floor = LANCZOS_BREAKDOWN * eps * np.sqrt(k + 1) * scale
        if stop_when_singular and _has_ritz_value_below(diagonal, off, floor):
            complete = True
            break
        for _ in range(2):
            w = w - V[:, :k + 1] @ (V[:, :k + 1].T @ w)
        b = np.linalg.norm(w)
        # The remainder against eps sqrt(k) |H| (rounding), not against |H v_k|.
        if not b > floor or k + 1 == dim:
            complete = True
            break
        off.append(float(b))
        V[:, k + 1] = w / b
    return V[:, :len(diagonal)], np.asarray(diagonal), np.asarray(off[:len(diagonal) - 1]), complete, scale


def _has_ritz_value_below(diagonal, off, x):
    """Whether the tridiagonal (diagonal, off) has an eigenvalue <= x: a pivot <= 0 of
    its LDL^T minus x I (Sturm's count)."""
    pivot = 1.0
    for i, a in enumerate(diagonal):
        pivot = a - x - (off[i - 1] * (off[i - 1] / pivot) if i > 0 else 0.0)
        if not pivot > 0:
            return True
    return False


def _invariant_solver(T, norm, eps, scale):
    """For T of an invariant Krylov space: shift -> (T + shift I)^+ norm e_1 on the Ritz
    values above rounding (LANCZOS_BREAKDOWN eps sqrt(k) |H|, |H| the larger of |T| and
    the process' `scale`), or None where none is that small (the plain solve then). Drops
    c's null-space part, as the core's InvariantSolve."""
    theta, U = np.linalg.eigh(T)
    keep = theta > LANCZOS_BREAKDOWN * eps * np.sqrt(len(theta)) * max(np.abs(theta).max(), scale)
    if keep.all():
        return None
    theta, projected = theta[keep], norm * U[0, keep]
    return lambda shift: U[:, keep] @ (projected / (theta + shift))


def _krylov_bases(apply, rhs, max_iter, eps):
    """Per column of rhs: (V, T, |c|, invariant) of Lanczos from c, min(max_iter, dim)
    steps or fewer at an invariant space (invariant: _invariant_solver's, or None), or
    None where c = 0."""
    columns = [rhs[:, j].astype(np.float64) for j in range(rhs.shape[1])]
    running = [j for j, c in enumerate(columns) if np.linalg.norm(c) != 0]
    processes = _lanczos_columns(apply, [columns[j] for j in running], min(max_iter, rhs.shape[0]), eps,
                                 stop_when_singular=True)
    bases = [None] * len(columns)
    for j, (V, a, b, complete, scale) in zip(running, processes):
        T = np.diag(a) + np.diag(b, 1) + np.diag(b, -1)
        invariant = _invariant_solver(T, np.linalg.norm(columns[j]), eps, scale) if complete else None
        bases[j] = (V, T, np.linalg.norm(columns[j]), invariant)
    return bases


def _projected(basis, kc, shift):
    """V_k (T_k + shift I)^-1 |c| e_1 at k = kc, or through the pseudo-inverse of T on an
    invariant space where it is singular."""
    V, T, norm, invariant = basis
    if invariant is not None and kc == V.shape[1]:
        return V @ invariant(shift)
    e1 = np.zeros(kc)
    e1[0] = norm
    return V[:, :kc] @ np.linalg.solve(T[:kc, :kc] + shift * np.eye(kc), e1)


def _krylov_eps(dtype, storage_dtype=None):
    """The rounding of a product with H: the compute dtype's, or float32's where H's matrix
    is stored narrower (as the core's LinearProblem::storage_epsilon)."""
    eps = float(np.finfo(dtype).eps)
    if storage_dtype is not None and np.dtype(storage_dtype).itemsize < np.dtype(dtype).itemsize:
        eps = max(eps, float(np.finfo(np.float32).eps))
    return eps


def _cg_iterates(apply, rhs, max_iter, krylov_eps=None, until_invariant=False):
    """cg's iterates: beta_t = V_t T_t^-1 |c| e_1 per column (CG's t-th iterate in exact
    arithmetic) from a reorthogonalised Lanczos basis, and once the Krylov space is
    invariant with T singular (c outside H's range) the minimum-norm least-squares
    solution V T^+ |c| e_1, which later t repeat (the core's run_cg_path). until_invariant:
    end where every column's space is invariant (at least one iterate), as the core's path
    with a hold-out set does."""
    dt = rhs.dtype.type
    eps = _krylov_eps(rhs.dtype) if krylov_eps is None else krylov_eps
    bases = _krylov_bases(apply, rhs, max_iter, eps)
    last = max([0] + [basis[0].shape[1] for basis in bases if basis is not None])
    beta = np.zeros(rhs.shape, dtype=dt)
    for t in range(1, (max(last, 1) if until_invariant else max_iter) + 1):
        if t <= last:
            beta = np.zeros(rhs.shape, dtype=np.float64)
            for j, basis in enumerate(bases):
                if basis is not None:
                    beta[:, j] = _projected(basis, min(t, basis[0].shape[1]), 0.0)
            beta = beta.astype(dt)
        yield beta


def _hybrid_path(apply, rhs, to_alpha, n, max_iter, predict_val, Y_val, stopping, tol, window, patience,
                 krylov_eps, metric="rmse", hybrid_lambda=None, val_weight=None, bound=1.0):
    """Tikhonov projected on the Krylov space of (H, c): at each k, beta_k(lambda) =
    V_k (T_k + lambda n I)^-1 |c| e_1 for the paper's 100 lambdas times the kernel's bound
    max_i k(x_i, x_i) (1 where it is not finite and > 0), the path value the best
    hold-out RMSE over them (one lambda for all columns); (alpha*, path, k*, k_run, lambda*).
    Without a hold-out set: max_iter steps, smallest lambda. With one, the path ends where
    the Krylov space becomes invariant (k = dim at the latest): later t would repeat its
    last solution (t = 1 alone, the zero model, where c = 0)."""
    dt = rhs.dtype.type
    # The paper's grid with the core's rounding: 10 ** (15 i / 99 - 15) by C's pow (numpy's
    # logspace may differ in the last bit).
    lambdas = np.array([10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(100)])
    if 0 < bound < math.inf:
        lambdas = lambdas * bound
    bases = _krylov_bases(apply, rhs, max_iter, krylov_eps)
    k_run = max([0] + [basis[0].shape[1] for basis in bases if basis is not None])
    if predict_val is None:  # k_run steps, the lambda given or the grid's smallest
        lam = lambdas[0] if hybrid_lambda is None else hybrid_lambda
        beta = np.zeros(rhs.shape, dtype=np.float64)
        for j, basis in enumerate(bases):
            if basis is not None:
                beta[:, j] = _projected(basis, basis[0].shape[1], lam * n)
        return to_alpha(beta.astype(dt)), np.zeros(0), max_iter, max_iter, float(lam)
    path, candidates = [], []
    for k in range(1, k_run + 1):
        errors = np.zeros(len(lambdas))
        solutions = []
        for basis in bases:
            if basis is None:
                solutions.append(None)
                continue
            kc = min(k, basis[0].shape[1])
            solutions.append([_projected(basis, kc, lam * n) for lam in lambdas])
        for i in range(len(lambdas)):
            beta = np.stack([np.zeros(rhs.shape[0]) if s is None else s[i] for s in solutions], axis=1)
            prediction = predict_val(to_alpha(beta.astype(dt)))
            if metric == "error":
                errors[i] = _error_rate(prediction, Y_val, val_weight)
            else:
                errors[i] = np.sum((prediction.astype(np.float64) - Y_val) ** 2)
        best = _best_lambda(errors, metric)
        path.append(errors[best] if metric == "error" else float(np.sqrt(errors[best] / Y_val.size)))
        candidates.append((best, solutions))
    if not candidates:  # c = 0: the Krylov space is {0}, t = 1 predicts 0
        path.append(_score(np.zeros_like(Y_val), Y_val, metric, val_weight))
        candidates.append((0, [None] * rhs.shape[1]))
    selected, stopped = _select(path, stopping, tol, window, patience, metric)
    best, solutions = candidates[selected - 1]
    beta = np.stack([np.zeros(rhs.shape[0]) if s is None else s[best] for s in solutions], axis=1)
    return to_alpha(beta.astype(dt)), np.asarray(path[:stopped]), selected, stopped, float(lambdas[best])


def _iterative_path(apply, rhs, to_alpha, method, nu, step, max_iter, predict_val, Y_val, stopping, tol,
                    window, patience=None, n=None, storage=None, metric="rmse", hybrid_lambda=None,
                    val_weight=None, bound=1.0):
    """Run the regulariser recording the validation RMSE of alpha_t = to_alpha(beta_t);
    returns (alpha*, path, t*, t_run, lambda*) (lambda* = 0.0 except for "hybrid", which
    needs the number of training rows n, and scales its grid by the kernel's bound
    max_i k(x_i, x_i)). storage: the dtype H's matrix is kept in, where narrower than
    rhs's (the rounding of its products, for cg's and hybrid's Lanczos). val_weight: the
    hold-out row weights of metric "error" (see _weighted_holdout). bound: the kernel's."""
    krylov_eps = _krylov_eps(rhs.dtype, storage)
    if method == "hybrid":
        return _hybrid_path(apply, rhs, to_alpha, n, max_iter, predict_val, Y_val, stopping, tol, window,
                            patience, krylov_eps, metric, hybrid_lambda, val_weight, bound)
    alphas, path = [], []
    beta = None
    # cg: the iterate at the invariant space is also the one at max_iter past it.
    iterates = (_cg_iterates(apply, rhs, max_iter, krylov_eps, until_invariant=True) if method == "cg"
                else _iterates(apply, rhs, method, step, nu, max_iter))
    for beta in iterates:
        if predict_val is not None:
            alphas.append(to_alpha(beta))
            path.append(_score(predict_val(alphas[-1]), Y_val, metric, val_weight))
    if predict_val is None:
        return to_alpha(beta), np.zeros(0), max_iter, max_iter, 0.0
    selected, stopped = _select(path, stopping, tol, window, patience, metric)
    return alphas[selected - 1], np.asarray(path[:stopped]), selected, stopped, 0.0


def _prepare(X, y, X_val, y_val, dtype, centers=None):
    dt = chk.compute_dtype(dtype, X)
    X = chk.as_matrix(X, "X", dt)
    Y, one_d = chk.as_targets(y, "y", X.shape[0], dt)
    Xv, Yv = chk.check_holdout(X_val, y_val, X.shape[1], Y.shape[1], dt)
    if centers is not None:
        centers = chk.as_matrix(centers, "centers", dt)
    return dt, X, Y, one_d, Xv, Yv, centers


def _out(coef, one_d):
    return coef[:, 0] if one_d else coef


def _row_scale(sample_weight, n, name, dt):
    """sqrt(w n / sum w) (the weighted problem is the unweighted one on rows scaled by
    it), or None without weights."""
    w = chk.check_sample_weight(sample_weight, n, name)
    return None if w is None else np.sqrt(w * (n / w.sum())).astype(dt)


def _weighted_holdout(predict_val, Yv, sample_weight_val, dt, metric="rmse"):
    """(predictions, targets, weights) of the hold-out score. For the RMSE, rows scaled by
    sqrt(w_v n_val / sum w), whose plain RMSE is the weighted one, sqrt(sum_v w_v r_v^2 /
    (sum_v w_v q)), and no weights. For the error rate, the rows as given (scaling a row
    by 0 would lose its class) and the weights, which _error_rate applies."""
    w = chk.check_sample_weight(sample_weight_val, Yv.shape[0], "sample_weight_val")
    if w is None or predict_val is None:
        return predict_val, Yv, None
    if metric == "error":
        return predict_val, Yv, w.astype(np.float64)
    s = _row_scale(sample_weight_val, Yv.shape[0], "sample_weight_val", np.float64)
    return (lambda a: s[:, None] * predict_val(a)), s[:, None] * Yv, None


def _scaled_rows(M, s):
    return M if s is None else s[:, None] * M


# ----------------------------------------------------------------------- NYTRO
def _half_range_exponent(A, s=None):
    """The e that brings max_i ||a_i|| max(1, s_i) into [2^6, 2^7) times 2^e (0 for a
    zero A): the core's scale of the linear kernel's rows and centres in half precision."""
    norms = np.linalg.norm(A.astype(np.float64), axis=1) if len(A) else np.zeros(0)
    if s is not None:
        norms = norms * np.maximum(1.0, s.astype(np.float64))
    largest = float(norms.max()) if len(norms) else 0.0
    return 7 - math.frexp(largest)[1] if 0 < largest < math.inf else 0


def _half_rounded(K_nm, X, C, s):
    """The linear kernel's K_nm as float16 storage keeps it: 2^e K_nm rounded to half
    precision, e from the rows' and centres' norms (below 2^14 in magnitude, so within
    half's range, its largest entries at the top of it), and 2^-e folded back, exactly."""
    e = _half_range_exponent(X, s) + _half_range_exponent(C)
    return np.ldexp(np.ldexp(K_nm, e).astype(np.float16).astype(K_nm.dtype), -e)


def _bound(kernel, X):
    """max_i k(x_i, x_i): ||x_i||^2 for the linear kernel, 1 for the others."""
    return float((X.astype(np.float64) ** 2).sum(1).max()) if kernel == "linear" and len(X) else 1.0


def nytro_path(X, y, centers, sigma, *, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None,
               method="gd", nu=1.0, max_iter=500,
               step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None,
               iterates="auto", factor="pivoted", rank_tol=None, jitter=1e-10, solver="auto", storage=None,
               n_threads=None, options=None, progress=None, dtype=None, metric="rmse",
               hybrid_lambda=None, sample_weight=None, sample_weight_val=None) -> PathResult:
    """NYTRO (paper, eq. 13): beta_t = beta_{t-1} - step A^T (A beta_{t-1} - y) for method
    "gd"; "nu" and "cg" run the accelerated regularisers on the same A^T A beta = A^T y.
    Of the options (keywords or `options`), storage, factor, rank_tol and jitter change
    the result; the others only how the core computes it. Sample weights: A and y with
    rows scaled by sqrt(w n / sum w)."""
    values = opt.merged(opt.NYTRO, options, locals())
    storage, factor, rank_tol, jitter = (values[name] for name in ("storage", "factor", "rank_tol", "jitter"))
    dt, X, Y, one_d, Xv, Yv, C = _prepare(X, y, X_val, y_val, dtype, centers)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    Y = _scaled_rows(Y, s)
    k = _kernel(kernel, sigma, matern_nu)
    K_nm = k(X, C)
    storage = chk.float_dtype_name("storage", storage, chk.NYTRO_STORAGES)
    if storage == "float16":
        # Not only how K_nm is kept: its rounding, and the rank cut that goes with it
        # (options.hpp's kFloat16RankTol), change the model, so they are reproduced here.
        K_nm = _half_rounded(K_nm, X, C, s) if kernel == "linear" else K_nm.astype(np.float16).astype(dt)
        rank_tol = FLOAT16_RANK_TOL if rank_tol is None else rank_tol
    R = nystrom_factor(k(C, C), method=factor, rank_tol=rank_tol, jitter=jitter)
    A = _scaled_rows(K_nm, s) @ R
    step = 0.0 if method in ("cg", "hybrid") else _step(step_size, X.shape[0], A.T @ A, _bound(kernel, X))
    K_val = k(Xv, C) if len(Xv) else None
    predict_val, Yv, val_weight = _weighted_holdout((lambda alpha: K_val @ alpha) if K_val is not None else None,
                                                    Yv, sample_weight_val, dt, metric)
    alpha, path, selected, run, lam = _iterative_path(
        lambda beta: A.T @ (A @ beta), A.T @ Y, lambda beta: R @ beta, method, nu, step, max_iter,
        predict_val, Yv, stopping, tol, window, n_iter_no_change, X.shape[0], storage, metric, hybrid_lambda,
        val_weight, _bound(kernel, X))
    return PathResult(_out(alpha, one_d), path, selected, run, step, R.shape[1], "reference", run, lam)


def landweber_path(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None,
                   method="gd", nu=1.0, max_iter=500,
                   step_size="paper", stopping="best", tol=None, window=10, n_iter_no_change=None,
                   iterates="auto", n_threads=None, options=None, progress=None, dtype=None, metric="rmse",
                   hybrid_lambda=None, sample_weight=None, sample_weight_val=None) -> PathResult:
    """Landweber (paper, eq. 8): alpha_t = alpha_{t-1} - step (K alpha_{t-1} - y) for "gd";
    "nu" and "cg" run the accelerated regularisers on K alpha = y. The options change only
    how the core computes the path. Sample weights: the same on S K S beta = S y,
    alpha = S beta, S = diag(sqrt(w n / sum w))."""
    opt.merged(opt.LANDWEBER, options, locals())
    dt, X, Y, one_d, Xv, Yv, _ = _prepare(X, y, X_val, y_val, dtype)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    k = _kernel(kernel, sigma, matern_nu)
    K = k(X, X)
    if s is not None:
        K, Y = s[:, None] * K * s[None, :], s[:, None] * Y
    step = 0.0 if method in ("cg", "hybrid") else _step(step_size, X.shape[0], K, _bound(kernel, X))
    K_val = k(Xv, X) if len(Xv) else None
    predict_val, Yv, val_weight = _weighted_holdout((lambda alpha: K_val @ alpha) if K_val is not None else None,
                                                    Yv, sample_weight_val, dt, metric)
    alpha, path, selected, run, lam = _iterative_path(
        lambda alpha: K @ alpha, Y, lambda beta: _scaled_rows(beta, s), method, nu, step, max_iter,
        predict_val, Yv, stopping, tol, window, n_iter_no_change, X.shape[0], metric=metric,
        hybrid_lambda=hybrid_lambda, val_weight=val_weight, bound=_bound(kernel, X))
    return PathResult(_out(alpha, one_d), path, selected, run, step, X.shape[0], "reference", run, lam)


# -------------------------------------------------------------------- Tikhonov
def _tikhonov(gram, rhs, lambdas, n, lift, predict_val, Y_val, one_d, rank, metric="rmse", val_weight=None):
    """alpha(lambda) = lift((gram + lambda n I)^+ rhs) for each lambda, by one eigh;
    negative rounding-level eigenvalues are clipped at 0 (pseudo-inverse semantics)."""
    w, V = np.linalg.eigh(gram)
    w = np.maximum(w.astype(np.float64), 0)
    projected = V.T @ rhs
    coefs = [lift(V @ (projected / (w + lam * n)[:, None]).astype(gram.dtype)) for lam in lambdas]
    if predict_val is None:
        return TikhonovResult(_out(coefs[0], one_d), np.zeros(0), float(lambdas[0]), 0, rank)
    path = np.array([_score(predict_val(c), Y_val, metric, val_weight) for c in coefs])
    if metric == "error":  # ties to the largest lambda (the grid need not ascend)
        best = max(np.flatnonzero(path == np.nanmin(path)), key=lambda i: lambdas[i])
    else:
        best = int(np.argmin(path))
    return TikhonovResult(_out(coefs[best], one_d), path, float(lambdas[best]), best, rank)


def nkrls_path(X, y, centers, sigma, *, kernel="gaussian", matern_nu=1.5, lambdas=None,
               X_val=None, y_val=None, factor="pivoted",
               rank_tol=None, jitter=1e-10, solver="eigh", storage=None, n_threads=None, options=None,
               progress=None, dtype=None, metric="rmse", sample_weight=None,
               sample_weight_val=None) -> TikhonovResult:
    """Nystrom KRLS (paper, eq. 12): alpha = R (A^T A + lambda n I)^-1 A^T y (sample
    weights: A and y with rows scaled by sqrt(w n / sum w)). Of the options, factor,
    rank_tol and jitter change the result."""
    values = opt.merged(opt.NKRLS, options, locals())
    factor, rank_tol, jitter = (values[name] for name in ("factor", "rank_tol", "jitter"))
    dt, X, Y, one_d, Xv, Yv, C = _prepare(X, y, X_val, y_val, dtype, centers)
    lambdas = chk.check_lambdas(lambdas, kernel, X)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    k = _kernel(kernel, sigma, matern_nu)
    R = nystrom_factor(k(C, C), method=factor, rank_tol=rank_tol, jitter=jitter)
    A = _scaled_rows(k(X, C), s) @ R
    K_val = k(Xv, C) if len(Xv) else None
    predict_val, Yv, val_weight = _weighted_holdout((lambda a: K_val @ a) if K_val is not None else None, Yv,
                                                    sample_weight_val, dt, metric)
    return _tikhonov(A.T @ A, A.T @ _scaled_rows(Y, s), lambdas, X.shape[0], lambda beta: R @ beta,
                     predict_val, Yv, one_d, R.shape[1], metric, val_weight)


def krls_path(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, lambdas=None,
              X_val=None, y_val=None, solver="eigh", n_threads=None, options=None,
              progress=None, dtype=None, metric="rmse", sample_weight=None,
              sample_weight_val=None) -> TikhonovResult:
    """KRLS (paper, eq. 6): alpha = (K + lambda n I)^-1 y (sample weights: alpha =
    S (S K S + lambda n I)^-1 S y, S = diag(sqrt(w n / sum w)))."""
    opt.merged(opt.KRLS, options, locals())
    dt, X, Y, one_d, Xv, Yv, _ = _prepare(X, y, X_val, y_val, dtype)
    lambdas = chk.check_lambdas(lambdas, kernel, X)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    k = _kernel(kernel, sigma, matern_nu)
    K = k(X, X)
    if s is not None:
        K = s[:, None] * K * s[None, :]
    K_val = k(Xv, X) if len(Xv) else None
    predict_val, Yv, val_weight = _weighted_holdout((lambda a: K_val @ a) if K_val is not None else None, Yv,
                                                    sample_weight_val, dt, metric)
    return _tikhonov(K, _scaled_rows(Y, s), lambdas, X.shape[0], lambda b: _scaled_rows(b, s),
                     predict_val, Yv, one_d, X.shape[0], metric, val_weight)


def kols(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, rcond=None, n_threads=None, options=None, dtype=None,
         sample_weight=None):
    """KOLS (paper, eq. 3): alpha = pinv(K) y, eigenvalues <= rcond * max dropped (sample
    weights: alpha = S pinv(S K S) S y)."""
    rcond = opt.merged(opt.KOLS, options, locals())["rcond"]
    dt, X, Y, one_d, _, _, _ = _prepare(X, y, None, None, dtype)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    K = _kernel(kernel, sigma, matern_nu)(X, X)
    if s is not None:
        K, Y = s[:, None] * K * s[None, :], s[:, None] * Y
    w, V = np.linalg.eigh(K)
    cut = (X.shape[0] * np.finfo(dt).eps if rcond is None else rcond) * np.abs(w).max()
    inverse = np.where(w > cut, 1 / np.where(w > cut, w, 1), 0).astype(dt)
    return _out(_scaled_rows(V @ (inverse[:, None] * (V.T @ Y)), s), one_d)


# --------------------------------------------------------------- logistic loss
def logistic_path(X, y, centers, sigma, *, n_classes=None, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None,
                  method="nesterov", max_iter=1000, n_iter_no_change=100, selection="log_loss", factor="pivoted",
                  sample_weight=None, sample_weight_val=None, n_threads=None, return_iterates=False):
    """nytro._logistic.logistic_path written directly: the features A~ = [k(X, C) R, 1]
    formed here, the logits, probabilities and gradient recomputed from theta at every
    iterate, L from the dense eigenvalues of A~^T W A~, and Newton's Hessian formed as a
    matrix (block (k, l) of the multinomial one is A~^T diag(w (delta_kl p_k - p_k p_l) / n)
    A~), its CG run on that matrix. The rules (trust radius, backtracking, CG's stopping,
    the risk floor) are the module's own constants, and its selection rule (Selection), so
    both compute and select the same iterates."""
    from . import _logistic as lg  # its constants and result type; none of its arithmetic
    max_iter, patience = lg.check_path_arguments(method, selection, max_iter, n_iter_no_change)
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    y = np.asarray(y)
    n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
    k = _kernel(kernel, sigma, matern_nu)
    R = nystrom_factor(k(C, C), method=factor)
    n = X.shape[0]
    At = np.hstack([k(X, C) @ R, np.ones((n, 1))])
    Y = np.zeros((n, 1 if n_classes == 2 else n_classes))
    if n_classes == 2:
        Y[:, 0] = y == 1
    else:
        Y[np.arange(n), y] = 1.0
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    c = w / w.sum()  # (1/n) w n / sum(w)

    def probabilities(Z):
        if Z.shape[1] == 1:
            return 1.0 / (1.0 + np.exp(-Z))
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def losses(Z, T):
        if Z.shape[1] == 1:
            return np.logaddexp(0.0, Z[:, 0]) - T[:, 0] * Z[:, 0]
        top = Z.max(axis=1)
        return top + np.log(np.exp(Z - top[:, None]).sum(axis=1)) - (T * Z).sum(axis=1)

    def risk(theta):
        return float(c @ losses(At @ theta, Y))

    def gradient(theta):
        return At.T @ (c[:, None] * (probabilities(At @ theta) - Y))

    def hessian(theta):
        """The Hessian of the risk in vec(theta) (columns stacked)."""
        P = probabilities(At @ theta)
        q, K = At.shape[1], Y.shape[1]
        H = np.zeros((q * K, q * K))
        for a in range(K):
            for b in range(K):
                d = P[:, a] * (1 - P[:, a]) if K == 1 else P[:, a] * ((a == b) - P[:, b])
                H[a * q:(a + 1) * q, b * q:(b + 1) * q] = At.T @ ((c * d)[:, None] * At)
        return H

    held_out = X_val is not None and len(X_val) > 0
    if held_out:
        Av = np.hstack([k(np.asarray(X_val, dtype=np.float64), C) @ R, np.ones((len(X_val), 1))])
        y_val = np.asarray(y_val)
        Yv = np.zeros((len(y_val), Y.shape[1]))
        if n_classes == 2:
            Yv[:, 0] = y_val == 1
        else:
            Yv[np.arange(len(y_val)), y_val] = 1.0
        wv = np.ones(len(y_val)) if sample_weight_val is None else np.asarray(sample_weight_val, dtype=np.float64)
    step = 0.0
    if method != "newton":
        L = (0.25 if n_classes == 2 else 0.5) * np.linalg.eigvalsh(At.T @ (w[:, None] * At))[-1] / w.sum()
        step = 1.0 / L
    theta = previous = np.zeros((At.shape[1], Y.shape[1]))
    train_loss, iterates = [], [] if return_iterates else None
    chosen = lg.Selection(selection, patience, theta)  # the selection rule is the module's, as its constants
    for t in range(1, max_iter + 1):
        if method == "newton":
            g = gradient(theta).ravel(order="F")
            H = hessian(theta)
            if Y.shape[1] > 1:  # restricted to theta's with columns summing to 0 (the module's reason)
                K = Y.shape[1]
                flat = np.kron(np.eye(K) - 1.0 / K, np.eye(At.shape[1]))
                g, H = flat @ g, flat @ H @ flat
            # CG on H p = -g from p = 0 (the module's stopping rule)
            p, r = np.zeros_like(g), -g
            d, rr = r.copy(), r @ r
            target = lg._CG_RTOL * np.sqrt(rr)
            for _ in range(lg._CG_STEPS):
                curvature = d @ H @ d
                if not curvature > 0:
                    break
                a = rr / curvature
                p, r = p + a * d, r - a * (H @ d)
                if np.sqrt(r @ r) <= target:
                    break
                d, rr = r + (r @ r) / rr * d, r @ r
            if not np.any(p):
                p = -g
            P_step = p.reshape(theta.shape, order="F")
            if P_step.shape[1] > 1:
                P_step = P_step - P_step.mean(axis=1, keepdims=True)
            reach = np.abs(At[w > 0] @ P_step).max()
            if reach > lg._RADIUS:
                P_step = P_step * (lg._RADIUS / reach)
            now, slope, a = risk(theta), float(g @ P_step.ravel(order="F")), 1.0
            for _ in range(lg._BACKTRACKS):
                if risk(theta + a * P_step) <= now + lg._ARMIJO * a * slope + lg._ROUNDING * now:
                    break
                a /= 2
            else:
                break
            theta = theta + a * P_step
        else:
            beta = (t - 2) / (t + 1) if method == "nesterov" and t > 1 else 0.0
            point = theta + beta * (theta - previous)
            previous, theta = theta, point - step * gradient(point)
        train_loss.append(risk(theta))
        if iterates is not None:
            iterates.append(theta.copy())
        scores = None
        if held_out:
            Zv = Av @ theta
            predicted = (Zv[:, 0] > 0).astype(int) if Zv.shape[1] == 1 else Zv.argmax(axis=1)
            scores = float(np.average(losses(Zv, Yv), weights=wv)), float(np.mean(predicted != y_val))
        if chosen.record(t, theta, scores) or train_loss[-1] <= lg._RISK_FLOOR:
            break
    return chosen.result(R, train_loss, step, iterates)
