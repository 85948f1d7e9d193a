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

import numpy as np
import scipy.linalg

from . import _checks as chk
from ._results import PathResult, TikhonovResult

_MASK64 = (1 << 64) - 1
# The Nystrom factor's default rank_tol with storage="float16" (options.hpp).
FLOAT16_RANK_TOL = 1e-4
# CG stops on a direction whose curvature is below this many epsilons of the compute dtype
# times the largest Rayleigh quotient seen (gradient_path.cpp's kCgCurvatureFloor).
CG_CURVATURE_FLOOR = 4.0
# Lanczos: a remainder below this many eps sqrt(k) |H| is rounding (the core's kBreakdown).
LANCZOS_BREAKDOWN = 4.0


# --------------------------------------------------------------------------- kernel
def gaussian_kernel(X, Z, sigma, *, n_threads=None, dtype=None):
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


def kernel_predict(X, centers, coef, sigma, *, n_threads=None, progress=None):
    return gaussian_kernel(X, centers, sigma) @ np.asarray(coef)


# ---------------------------------------------------------------------- centres
def _splitmix64(state: int):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        yield z ^ (z >> 31)


def sample_centers(n, m, seed):
    """m distinct indices from range(n): partial Fisher-Yates driven by SplitMix64."""
    stream = _splitmix64(int(seed))
    order = np.arange(n, dtype=np.int64)
    for i in range(m):
        bound = n - i
        limit = (_MASK64 // bound) * bound  # reject the top so no value is favoured
        x = next(stream)
        while x >= limit:
            x = next(stream)
        j = i + x % bound
        order[i], order[j] = order[j], order[i]
    return order[:m].copy()


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
def _select(path, stopping, tol, window, patience=None):
    """Apply a stopping rule to a validation path: (t_selected, t_stopped), 1-based.

    best     : argmin over the whole path, or over the path up to `patience`
               iterations after its last improvement.
    relative : stop at the first t > window where the best RMSE inside the last
               `window` iterations improves on the best before them by <= tol
               (relative); select the argmin up to the stop.
    window   : stop at the first t >= window where a least-squares line through the
               last `window` RMSEs falls by less than tol over the window; select t.
    """
    path = np.asarray(path)
    if stopping == "best":
        if patience:  # end the path `patience` iterations after its last improvement
            best = 1
            for t in range(1, len(path) + 1):
                if path[t - 1] < path[best - 1]:
                    best = t
                if t - best >= patience:
                    return best, t
        return int(np.argmin(path)) + 1, len(path)
    if stopping == "relative":
        tol = 0.05 if tol is None else tol
        for t in range(window + 1, len(path) + 1):
            before, inside = path[:t - window].min(), path[t - window:t].min()
            if before - inside <= tol * before:
                return int(np.argmin(path[:t])) + 1, t
        return int(np.argmin(path)) + 1, len(path)
    tol = 1e-4 if tol is None else tol
    x = np.arange(window, dtype=float)
    for t in range(window, len(path) + 1):
        slope = np.polyfit(x, path[t - window:t], 1)[0]
        if -window * slope < tol:
            return t, t
    return len(path), len(path)


def _rmse(predictions, targets):
    return float(np.sqrt(np.mean((predictions.astype(np.float64) - targets) ** 2)))


def _step(step_size, n, gram):
    if step_size == "paper":
        return 1.0 / n  # gamma / n with gamma = 1 / max_i k(x_i, x_i) = 1 (Gaussian)
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
    gd: beta + s (c - H beta);  nu: the nu-method;  cg: conjugate gradients per column."""
    dt = rhs.dtype.type
    beta = np.zeros_like(rhs)
    previous = beta
    residual, direction = rhs.copy(), rhs.copy()
    rr = (residual.astype(np.float64) ** 2).sum(0)
    rayleigh_max = np.zeros(rhs.shape[1])
    rhs_norm = np.linalg.norm(rhs.astype(np.float64))
    for k in range(1, max_iter + 1):
        if method in ("gd", "nu"):
            # With a stable step |c - H beta| <= |c|: a residual past 2 |c| is divergence.
            gradient = rhs - apply(beta)
            if np.linalg.norm(gradient.astype(np.float64)) > 2 * rhs_norm:
                raise RuntimeError(f"the iterations diverged at t={k} (step_size={step:.6g}): a stable step is "
                                   "below 2 / lambda_max(A^T A)")
        if method == "gd":
            beta = beta + dt(step) * gradient
        elif method == "nu":
            mu, omega = _nu_coefficients(k, nu)
            previous, beta = beta, beta + dt(mu) * (beta - previous) + dt(omega) * dt(step) * gradient
        else:
            product = apply(direction)
            beta = beta.copy()
            for j in range(rhs.shape[1]):
                curvature = float(direction[:, j].astype(np.float64) @ product[:, j].astype(np.float64))
                dd = float((direction[:, j].astype(np.float64) ** 2).sum())
                if dd > 0:
                    rayleigh_max[j] = max(rayleigh_max[j], curvature / dd)
                # A direction in H's numerical null space (curvature within rounding of the
                # largest): stepping along it would amplify rounding by 1 / eps. Converged.
                if not curvature > CG_CURVATURE_FLOOR * np.finfo(rhs.dtype).eps * rayleigh_max[j] * dd or rr[j] == 0:
                    rr[j] = 0
                    continue
                a = dt(rr[j] / curvature)
                beta[:, j] += a * direction[:, j]
                residual[:, j] -= a * product[:, j]
                rr_new = float((residual[:, j].astype(np.float64) ** 2).sum())
                direction[:, j] = residual[:, j] + dt(rr_new / rr[j]) * direction[:, j]
                rr[j] = rr_new
        yield beta


def _lanczos(apply, c, steps, with_complete=False):
    """Lanczos with full reorthogonalisation (twice) from c, at most `steps` steps:
    (V dim x k, diagonal, off-diagonal[, complete]), stopped early at an invariant subspace."""
    dim = c.shape[0]
    V = np.zeros((dim, min(steps, dim) + 1))
    V[:, 0] = c / np.linalg.norm(c)
    diagonal, off = [], []
    scale, complete = 0.0, False
    for k in range(min(steps, dim)):
        w = apply(V[:, k:k + 1].astype(c.dtype)).astype(np.float64)[:, 0]
        scale = max(scale, float(np.linalg.norm(w)))  # |H| from below, as the core's
        diagonal.append(float(w @ V[:, k]))
        for _ in range(2):
            w = w - V[:, :k + 1] @ (V[:, :k + 1].T @ w)
        b = np.linalg.norm(w)
        # The remainder against eps sqrt(k) |H| (rounding), not against |H v_k|.
        if not b > LANCZOS_BREAKDOWN * np.finfo(np.float64).eps * np.sqrt(k + 1) * scale or k + 1 == dim:
            complete = True
            break
        off.append(float(b))
        V[:, k + 1] = w / b
    out = V[:, :len(diagonal)], np.asarray(diagonal), np.asarray(off[:len(diagonal) - 1])
    return out + (complete,) if with_complete else out


def _invariant_solver(T, norm):
    """For T of an invariant Krylov space: shift -> (T + shift I)^+ norm e_1 on the Ritz
    values above rounding (LANCZOS_BREAKDOWN eps sqrt(k) |T|), or None where none is that
    small (the plain solve then). Drops c's null-space part, as the core's InvariantSolve."""
    theta, U = np.linalg.eigh(T)
    keep = theta > LANCZOS_BREAKDOWN * np.finfo(np.float64).eps * np.sqrt(len(theta)) * np.abs(theta).max()
    if keep.all():
        return None
    theta, projected = theta[keep], norm * U[0, keep]
    return lambda shift: U[:, keep] @ (projected / (theta + shift))


def _hybrid_path(apply, rhs, to_alpha, n, max_iter, predict_val, Y_val, stopping, tol, window, patience):
    """Tikhonov projected on the Krylov space of (H, c): at each k, beta_k(lambda) =
    V_k (T_k + lambda n I)^-1 |c| e_1 for the paper's 100 lambdas, the path value the best
    hold-out RMSE over them (one lambda for all columns); (alpha*, path, k*, k_run, lambda*).
    Without a hold-out set: max_iter steps, smallest lambda. With one, the path ends where
    the Krylov space becomes invariant (k = dim at the latest): later t would repeat its
    last solution (t = 1 alone, the zero model, where c = 0)."""
    dt = rhs.dtype.type
    # The paper's grid with the core's rounding: 10 ** (15 i / 99 - 15) by C's pow (numpy's
    # logspace may differ in the last bit).
    lambdas = np.array([10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(100)])
    bases = []  # per column: (V, T, |c|) or None for c = 0
    for j in range(rhs.shape[1]):
        c = rhs[:, j].astype(np.float64)
        if np.linalg.norm(c) == 0:
            bases.append(None)
            continue
        V, a, b, complete = _lanczos(apply, c, min(max_iter, rhs.shape[0]), with_complete=True)
        T = np.diag(a) + np.diag(b, 1) + np.diag(b, -1)
        invariant = _invariant_solver(T, np.linalg.norm(c)) if complete else None
        bases.append((V, T, np.linalg.norm(c), invariant))

    def projected(basis, kc, lam):
        V, T, norm, invariant = basis
        if invariant is not None and kc == V.shape[1]:
            return V @ invariant(lam * n)
        e1 = np.zeros(kc)
        e1[0] = norm
        return V[:, :kc] @ np.linalg.solve(T[:kc, :kc] + lam * n * np.eye(kc), e1)
    k_run = max([0] + [basis[0].shape[1] for basis in bases if basis is not None])
    if predict_val is None:  # k_run steps, the grid's smallest lambda
        beta = np.zeros(rhs.shape, dtype=np.float64)
        for j, basis in enumerate(bases):
            if basis is not None:
                beta[:, j] = projected(basis, basis[0].shape[1], lambdas[0])
        return to_alpha(beta.astype(dt)), np.zeros(0), max_iter, max_iter, float(lambdas[0])
    path, candidates = [], []
    for k in range(1, k_run + 1):
        errors = np.zeros(len(lambdas))
        solutions = []
        for basis in bases:
            if basis is None:
                solutions.append(None)
                continue
            kc = min(k, basis[0].shape[1])
            solutions.append([projected(basis, kc, lam) for lam in lambdas])
        for i in range(len(lambdas)):
            beta = np.stack([np.zeros(rhs.shape[0]) if s is None else s[i] for s in solutions], axis=1)
            prediction = predict_val(to_alpha(beta.astype(dt)))
            errors[i] = np.sum((prediction.astype(np.float64) - Y_val) ** 2)
        best = int(np.nanargmin(np.where(np.isfinite(errors), errors, np.nan)))
        path.append(float(np.sqrt(errors[best] / Y_val.size)))
        candidates.append((best, solutions))
    if not candidates:  # c = 0: the Krylov space is {0}, t = 1 predicts 0
        path.append(float(np.sqrt(np.sum(Y_val.astype(np.float64) ** 2) / Y_val.size)))
        candidates.append((0, [None] * rhs.shape[1]))
    selected, stopped = _select(path, stopping, tol, window, patience)
    best, solutions = candidates[selected - 1]
    beta = np.stack([np.zeros(rhs.shape[0]) if s is None else s[best] for s in solutions], axis=1)
    return to_alpha(beta.astype(dt)), np.asarray(path[:stopped]), selected, stopped, float(lambdas[best])


def _iterative_path(apply, rhs, to_alpha, method, nu, step, max_iter, predict_val, Y_val, stopping, tol,
                    window, patience=None, n=None):
    """Run the regulariser recording the validation RMSE of alpha_t = to_alpha(beta_t);
    returns (alpha*, path, t*, t_run, lambda*) (lambda* = 0.0 except for "hybrid", which
    needs the number of training rows n)."""
    if method == "hybrid":
        return _hybrid_path(apply, rhs, to_alpha, n, max_iter, predict_val, Y_val, stopping, tol, window,
                            patience)
    alphas, path = [], []
    beta = None
    for beta in _iterates(apply, rhs, method, step, nu, max_iter):
        if predict_val is not None:
            alphas.append(to_alpha(beta))
            path.append(_rmse(predict_val(alphas[-1]), Y_val))
    if predict_val is None:
        return to_alpha(beta), np.zeros(0), max_iter, max_iter, 0.0
    selected, stopped = _select(path, stopping, tol, window, patience)
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


def _weighted_holdout(predict_val, Yv, sample_weight_val, dt):
    """The hold-out predictions and targets with rows scaled by sqrt(w_v n_val / sum w):
    their plain RMSE is the weighted one, sqrt(sum_v w_v r_v^2 / (sum_v w_v q))."""
    s = _row_scale(sample_weight_val, Yv.shape[0], "sample_weight_val", np.float64)
    if s is None or predict_val is None:
        return predict_val, Yv
    return (lambda a: s[:, None] * predict_val(a)), s[:, None] * Yv


def _scaled_rows(M, s):
    return M if s is None else s[:, None] * M


# ----------------------------------------------------------------------- NYTRO
def nytro_path(X, y, centers, sigma, *, X_val=None, y_val=None, method="gd", nu=1.0, max_iter=500,
               step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None,
               iterates="auto", factor="pivoted", rank_tol=None, jitter=1e-10, solver="auto", storage=None,
               n_threads=None, progress=None, dtype=None, sample_weight=None, sample_weight_val=None) -> PathResult:
    """NYTRO (paper, eq. 13): beta_t = beta_{t-1} - step A^T (A beta_{t-1} - y) for method
    "gd"; "nu" and "cg" run the accelerated regularisers on the same A^T A beta = A^T y.
    Sample weights: A and y with rows scaled by sqrt(w n / sum w)."""
    dt, X, Y, one_d, Xv, Yv, C = _prepare(X, y, X_val, y_val, dtype, centers)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    Y = _scaled_rows(Y, s)
    K_nm = gaussian_kernel(X, C, sigma)
    if chk.float_dtype_name("storage", storage, chk.NYTRO_STORAGES) == "float16":
        # Not only how K_nm is kept: its rounding, and the rank cut that goes with it
        # (options.hpp's kFloat16RankTol), change the model, so they are reproduced here.
        K_nm = K_nm.astype(np.float16).astype(dt)
        rank_tol = FLOAT16_RANK_TOL if rank_tol is None else rank_tol
    R = nystrom_factor(gaussian_kernel(C, C, sigma), method=factor, rank_tol=rank_tol, jitter=jitter)
    A = _scaled_rows(K_nm, s) @ R
    step = 0.0 if method in ("cg", "hybrid") else _step(step_size, X.shape[0], A.T @ A)
    K_val = gaussian_kernel(Xv, C, sigma) if len(Xv) else None
    predict_val, Yv = _weighted_holdout((lambda alpha: K_val @ alpha) if K_val is not None else None, Yv,
                                        sample_weight_val, dt)
    alpha, path, selected, run, lam = _iterative_path(
        lambda beta: A.T @ (A @ beta), A.T @ Y, lambda beta: R @ beta, method, nu, step, max_iter,
        predict_val, Yv, stopping, tol, window, n_iter_no_change, X.shape[0])
    return PathResult(_out(alpha, one_d), path, selected, run, step, R.shape[1], "reference", run, lam)


def landweber_path(X, y, sigma, *, X_val=None, y_val=None, method="gd", nu=1.0, max_iter=500,
                   step_size="paper", stopping="best", tol=None, window=10, n_iter_no_change=None,
                   iterates="auto", n_threads=None, progress=None, dtype=None, sample_weight=None,
                   sample_weight_val=None) -> PathResult:
    """Landweber (paper, eq. 8): alpha_t = alpha_{t-1} - step (K alpha_{t-1} - y) for "gd";
    "nu" and "cg" run the accelerated regularisers on K alpha = y. Sample weights: the
    same on S K S beta = S y, alpha = S beta, S = diag(sqrt(w n / sum w))."""
    dt, X, Y, one_d, Xv, Yv, _ = _prepare(X, y, X_val, y_val, dtype)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    K = gaussian_kernel(X, X, sigma)
    if s is not None:
        K, Y = s[:, None] * K * s[None, :], s[:, None] * Y
    step = 0.0 if method in ("cg", "hybrid") else _step(step_size, X.shape[0], K)
    K_val = gaussian_kernel(Xv, X, sigma) if len(Xv) else None
    predict_val, Yv = _weighted_holdout((lambda alpha: K_val @ alpha) if K_val is not None else None, Yv,
                                        sample_weight_val, dt)
    alpha, path, selected, run, lam = _iterative_path(
        lambda alpha: K @ alpha, Y, lambda beta: _scaled_rows(beta, s), method, nu, step, max_iter,
        predict_val, Yv, stopping, tol, window, n_iter_no_change, X.shape[0])
    return PathResult(_out(alpha, one_d), path, selected, run, step, X.shape[0], "reference", run, lam)


# -------------------------------------------------------------------- Tikhonov
def _tikhonov(gram, rhs, lambdas, n, lift, predict_val, Y_val, one_d, rank):
    """alpha(lambda) = lift((gram + lambda n I)^+ rhs) for each lambda, by one eigh;
    negative rounding-level eigenvalues are clipped at 0 (pseudo-inverse semantics)."""
    w, V = np.linalg.eigh(gram)
    w = np.maximum(w.astype(np.float64), 0)
    projected = V.T @ rhs
    coefs = [lift(V @ (projected / (w + lam * n)[:, None]).astype(gram.dtype)) for lam in lambdas]
    if predict_val is None:
        return TikhonovResult(_out(coefs[0], one_d), np.zeros(0), float(lambdas[0]), 0, rank)
    path = np.array([_rmse(predict_val(c), Y_val) for c in coefs])
    best = int(np.argmin(path))
    return TikhonovResult(_out(coefs[best], one_d), path, float(lambdas[best]), best, rank)


def nkrls_path(X, y, centers, sigma, *, lambdas=None, X_val=None, y_val=None, factor="pivoted",
               rank_tol=None, jitter=1e-10, solver="eigh", storage=None, n_threads=None, progress=None,
               dtype=None, sample_weight=None, sample_weight_val=None) -> TikhonovResult:
    """Nystrom KRLS (paper, eq. 12): alpha = R (A^T A + lambda n I)^-1 A^T y (sample
    weights: A and y with rows scaled by sqrt(w n / sum w))."""
    dt, X, Y, one_d, Xv, Yv, C = _prepare(X, y, X_val, y_val, dtype, centers)
    lambdas = chk.check_lambdas(lambdas)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    R = nystrom_factor(gaussian_kernel(C, C, sigma), method=factor, rank_tol=rank_tol, jitter=jitter)
    A = _scaled_rows(gaussian_kernel(X, C, sigma), s) @ R
    K_val = gaussian_kernel(Xv, C, sigma) if len(Xv) else None
    predict_val, Yv = _weighted_holdout((lambda a: K_val @ a) if K_val is not None else None, Yv,
                                        sample_weight_val, dt)
    return _tikhonov(A.T @ A, A.T @ _scaled_rows(Y, s), lambdas, X.shape[0], lambda beta: R @ beta,
                     predict_val, Yv, one_d, R.shape[1])


def krls_path(X, y, sigma, *, lambdas=None, X_val=None, y_val=None, solver="eigh", n_threads=None,
              progress=None, dtype=None, sample_weight=None, sample_weight_val=None) -> TikhonovResult:
    """KRLS (paper, eq. 6): alpha = (K + lambda n I)^-1 y (sample weights: alpha =
    S (S K S + lambda n I)^-1 S y, S = diag(sqrt(w n / sum w)))."""
    dt, X, Y, one_d, Xv, Yv, _ = _prepare(X, y, X_val, y_val, dtype)
    lambdas = chk.check_lambdas(lambdas)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    K = gaussian_kernel(X, X, sigma)
    if s is not None:
        K = s[:, None] * K * s[None, :]
    K_val = gaussian_kernel(Xv, X, sigma) if len(Xv) else None
    predict_val, Yv = _weighted_holdout((lambda a: K_val @ a) if K_val is not None else None, Yv,
                                        sample_weight_val, dt)
    return _tikhonov(K, _scaled_rows(Y, s), lambdas, X.shape[0], lambda b: _scaled_rows(b, s),
                     predict_val, Yv, one_d, X.shape[0])


def kols(X, y, sigma, *, rcond=None, n_threads=None, dtype=None, sample_weight=None):
    """KOLS (paper, eq. 3): alpha = pinv(K) y, eigenvalues <= rcond * max dropped (sample
    weights: alpha = S pinv(S K S) S y)."""
    dt, X, Y, one_d, _, _, _ = _prepare(X, y, None, None, dtype)
    s = _row_scale(sample_weight, X.shape[0], "sample_weight", dt)
    K = gaussian_kernel(X, X, sigma)
    if s is not None:
        K, Y = s[:, None] * K * s[None, :], s[:, None] * Y
    w, V = np.linalg.eigh(K)
    cut = (X.shape[0] * np.finfo(dt).eps if rcond is None else rcond) * np.abs(w).max()
    inverse = np.where(w > cut, 1 / np.where(w > cut, w, 1), 0).astype(dt)
    return _out(_scaled_rows(V @ (inverse[:, None] * (V.T @ Y)), s), one_d)
