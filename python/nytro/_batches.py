"""partial_fit's sums: what a NYTRO fit keeps between batches of rows, so that a fit on
batches equals one fit on their concatenation, to rounding.

The centres, the bandwidths, the Nystrom factor R of K_mm, the split's seed, the targets'
offset and their powers of two are fixed by the first batch. Row i of the concatenation
(counted over every batch) is held out when nytro._holdout.holdout_mask says so, a hash
of i and the seed: the same rows whatever the batches' sizes. Each batch then adds:

- over its training rows, with A = S k(X, C) R (S = sqrt(w), the identity without
  weights) and the targets less the first batch's offset mu0, divided by their powers of
  two: A^T A, A^T S (S Y), A^T S (S 1), the weights' sum and the weighted targets' sum,
  by the core's Gram pass (the in-memory gram solver's);
- over its hold-out rows: the triangular factor V of S [k(X, C), Y - mu0, 1] (orthogonal
  updates, V^T V the Gram matrix without forming it; one kernel block per block of rows)
  and the weights' sums. A refit on every row reads their A^T A, A^T S (S Y) and A^T
  S (S 1) from V (V[:, support] R is Q^T A: the same products, rotated).

From these, exactly in exact arithmetic: the intercept mu (the weighted mean of every
row's targets) moves the right-hand side by A^T W 1 (mu - mu0); each coefficient set
alpha has the hold-out residual V [alpha; -e_j; mu_j - mu0_j] for output j; hybrid's
hold-out images [S K B_j, S (y_j - mu_j)] have the triangular factor of V times a
(m + q + 1) x (k_j + 1) matrix. The path then runs on the core's engine
(nytro._engine), in m dimensions, whatever the number of rows seen: memory O(m^2 + m q)
between calls, and O(b m) for a batch of b rows while it is added. Nystrom KRLS reads the
same sums (tikhonov_path): one eigendecomposition of A^T A for its whole lambda grid, each
coefficient set validated by the same hold-out residuals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from . import _checks as chk
from . import options as opt
from ._api import _block_normal_equations, _nystrom_factor_parts, kernel_matrix
from ._engine import best_lambda, engine_path, pooled_rmse, shifted_solves, unscaled
from ._holdout import holdout_mask
from ._labels import class_index
from ._results import PathResult, TikhonovResult
from ._sparse_kernel import block as sparse_block, is_sparse, prepared, row_squares
from ._user_kernel import block as user_block, diagonal_max, is_user_kernel, rows_per_block

# Hold-out rows per block while their factor is updated: the kernel block and the QR's
# copy within about 32 MiB of float64, the core's streamed passes' largest blocks.
_BLOCK_ELEMENTS = 1 << 22


# What the sums are solved by, by the path's estimators (their `_path_kind`): NYTRO's
# A^T A in m dimensions is the gram solver's ("auto" chooses it); Nystrom KRLS's one
# eigendecomposition for every lambda is its solver "eigh".
SOLVERS = {"nytro": ("auto", "gram"), "nkrls": ("eigh",)}
_SOLVED_BY = {"nytro": "NYTRO's path there runs on partial_fit's sums, A^T A in m dimensions (the gram solver's; "
                       "solver_ is 'gram')",
              "nkrls": "Nystrom KRLS there solves partial_fit's sums by one eigendecomposition of A^T A for every "
                       "lambda"}


def refuse_options(solver, storage, where: str, path: str = "nytro") -> None:
    """chk.UnsupportedOption naming `solver` or `storage` (the options of the `path`'s
    family, keyword or options field, as merged) where set to what a path from these sums
    cannot do: they are A^T A, kept in float64 and handed to the path in the compute
    dtype, so no K_nm is stored (NYTRO's solver "direct", any storage) and the solve is
    the sums' own (NYTRO's "spectral", Nystrom KRLS's "cholesky"). `where`: the route,
    as the message says it ("by partial_fit", "on sparse X ...")."""
    if solver not in SOLVERS[path]:
        raise chk.UnsupportedOption(f"solver={solver!r} is not supported {where}: {_SOLVED_BY[path]}; supported: "
                                    + ", ".join(repr(name) for name in SOLVERS[path]))
    if chk.check_storage(storage, chk.NYTRO_STORAGES if path == "nytro" else chk.STORAGES) != "same":
        raise chk.UnsupportedOption(
            f"storage={storage!r} is not supported {where}: partial_fit's sums store no kernel and keep A^T A in "
            "float64 (the path runs in the compute dtype, `dtype`); supported: None")


@dataclass
class Part:
    """The sums over one part of the rows seen (training or hold-out), float64. A = S K R
    with S = sqrt(w / unit) (unit: the first batch's largest weight rounded to a power of
    two, so that the products of tiny or huge weights stay in range); targets less mu0,
    column j divided by 2^e_j. The hold-out part's H, c and a stay None: V holds them."""

    H: np.ndarray | None  # A^T A (k x k)
    c: np.ndarray | None  # A^T S (S Y) (k x q)
    a: np.ndarray | None  # A^T S (S 1) (k,)
    weight: float = 0.0  # sum of w / unit
    weighted: np.ndarray | None = None  # sum of (w / unit) (y - mu0), unscaled (q,)
    rows: int = 0

    @classmethod
    def empty(cls, k: int, q: int, sums: bool = True) -> Part:
        if not sums:
            return cls(None, None, None, 0.0, np.zeros(q), 0)
        return cls(np.zeros((k, k)), np.zeros((k, q)), np.zeros(k), 0.0, np.zeros(q), 0)


@dataclass
class Batches:
    """The state of a partial fit between calls (see the module's docstring)."""

    centers: np.ndarray  # (m, d), in the compute dtype
    support: np.ndarray  # the centres R acts on
    R: np.ndarray  # (len(support), k): the core's compact factor
    upper: bool  # R upper triangular
    R_dense: np.ndarray  # (m, k)
    kernel: str
    sigma: object
    matern_nu: float
    dtype: np.dtype
    fraction: float | None
    seed: int
    offset: np.ndarray  # mu0 (q,), zeros without an intercept
    fit_intercept: bool
    scales: chk.TargetScales
    unit: float
    train: Part
    val: Part
    V: np.ndarray  # the hold-out factor ((m + q + 1) x (m + q + 1), upper triangular)
    bound: float = 0.0  # max ||x||^2 over the training rows (the linear kernel's bound)
    seen: int = 0  # rows added so far: the next batch's first global index
    # A classifier's hold-out rows, kept: their kernel rows k(X_val, C) (float64), class
    # indices and weights, for the error rate and the calibration of probabilities, which
    # read each row's decision values (O(n_val m) memory); None for a regressor.
    kept: dict | None = None
    # For sparse X: the centres prepared for the sparse kernel blocks once per fit
    # (nytro._sparse_kernel.Centres: their CSR copy costs a scan of the m x d array).
    sparse_centres: object = None

    @property
    def q(self) -> int:
        return self.offset.size

    @property
    def m(self) -> int:
        return self.centers.shape[0]

    def intercept(self) -> np.ndarray:
        """mu, the weighted mean of every row's targets seen (float64, one per output)."""
        if not self.fit_intercept:
            return np.zeros(self.q)
        weight = self.train.weight + self.val.weight
        if weight == 0.0:
            return self.offset.copy()
        return self.offset + (self.train.weighted + self.val.weighted) / weight


def kernel_block(kernel, sigma, matern_nu, X, Z, n_threads) -> np.ndarray:
    """k(X, Z): the core's kernel, a callable's (nytro._user_kernel, float64), or for
    sparse X the sparse one (nytro._sparse_kernel, float64; Z dense or prepared)."""
    if is_user_kernel(kernel):
        return user_block(kernel, X, Z)
    if is_sparse(X):
        return sparse_block(X, Z, kernel=kernel, sigma=sigma, matern_nu=matern_nu)
    return kernel_matrix(X, Z, kernel=kernel, sigma=sigma, matern_nu=matern_nu, n_threads=n_threads)


def start(X0, Y0, w0, centers, sigma, *, kernel, matern_nu, fraction, seed, fit_intercept, factor, rank_tol, jitter,
          n_threads, keeps_rows=False) -> Batches:
    """The fixed parts from the first batch (X0, Y0 2-D, w0 its weights or None): the
    centres (points, in X0's dtype), the factor of their K_mm, the targets' offset (the
    first batch's weighted column means where fit_intercept) and powers of two (of the
    first batch's targets less it). keeps_rows: keep the hold-out rows' kernel and class
    indices (a classifier's Y: +-1 codes)."""
    dtype = X0.dtype
    centers = np.ascontiguousarray(centers, dtype=dtype)
    sparse_centres = prepared(centers, kernel, sigma, matern_nu) if is_sparse(X0) else None
    if sparse_centres is not None:  # the centres' own nonzeros: O(m nnz) where the dense kernel is O(m^2 d)
        K_mm = kernel_block(kernel, sigma, matern_nu, sparse_centres.csr, sparse_centres, n_threads)
    else:
        K_mm = kernel_block(kernel, sigma, matern_nu, centers, centers, n_threads)
    if is_user_kernel(kernel) or is_sparse(X0):
        # The factor reads one triangle: a callable's or the sparse products' rounding may differ across it.
        K_mm = np.ascontiguousarray((K_mm + K_mm.T) / 2, dtype=dtype)
    support, R, upper = _nystrom_factor_parts(K_mm, method=factor, rank_tol=rank_tol, jitter=jitter,
                                              n_threads=n_threads)
    R_dense = np.zeros((centers.shape[0], R.shape[1]), dtype=R.dtype)
    R_dense[support] = R
    Y64 = np.asarray(Y0, dtype=np.float64)
    offset = np.zeros(Y64.shape[1])
    if fit_intercept and np.isfinite(Y64).all():
        offset = np.average(Y64, axis=0, weights=None if w0 is None else w0 / w0.max())
    with np.errstate(over="ignore"):
        scales = chk.TargetScales((Y64 - offset).astype(dtype), None)
    unit = 1.0 if w0 is None else math.ldexp(1.0, math.frexp(float(np.max(w0)))[1])
    k, q, p = R.shape[1], Y64.shape[1], centers.shape[0] + Y64.shape[1] + 1
    kept = dict(K=[], index=[], weights=[]) if keeps_rows else None
    return Batches(centers, support, R, bool(upper), R_dense, kernel, sigma, matern_nu, dtype, fraction, seed, offset,
                   bool(fit_intercept), scales, unit, Part.empty(k, q), Part.empty(k, q, sums=False), np.zeros((p, p)),
                   kept=kept, sparse_centres=sparse_centres)


def add(state: Batches, X, Y, w, n_threads, held=None) -> None:
    """Adds one batch (X in the compute dtype, Y 2-D, w its weights or None) to the sums:
    its rows split by their global indices state.seen, state.seen + 1, ..., or by `held`
    (a boolean per row: held out) where given (a split drawn otherwise)."""
    if held is None:
        held = holdout_mask(np.arange(state.seen, state.seen + X.shape[0]), state.fraction, state.seed)
    Y = np.asarray(Y, dtype=np.float64) - state.offset
    scaled = _scaled(state, Y)
    for part, rows in ((state.train, ~held), (state.val, held)):
        if not rows.any():
            continue
        Xp, Yp, sp = X[rows], scaled[rows], None if w is None else w[rows] / state.unit
        part.weight += float(rows.sum()) if sp is None else float(np.sum(sp))
        part.weighted += Y[rows].sum(axis=0) if sp is None else sp @ Y[rows]
        part.rows += int(rows.sum())
        if part is state.val:
            _add_holdout_rows(state, Xp, Yp, sp, n_threads)
            if state.kept is not None:
                state.kept["index"].append(class_index(Y[rows]))
                state.kept["weights"].append(np.ones(int(rows.sum())) if w is None else w[rows])
            continue
        _add_normal_equations(state, Xp, Yp, sp, n_threads)
        if is_user_kernel(state.kernel):
            state.bound = max(state.bound, diagonal_max(state.kernel, Xp))
        elif state.kernel == "linear":
            squares = row_squares(Xp) if is_sparse(Xp) else np.einsum("ij,ij->i", Xp.astype(np.float64),
                                                                       Xp.astype(np.float64))
            state.bound = max(state.bound, float(squares.max()))
    state.seen += X.shape[0]


def _scaled(state: Batches, Y: np.ndarray) -> np.ndarray:
    """Y (less mu0) with column j divided by 2^e_j, refused by name where a later batch's
    targets lie so far beyond the first's that their squares would leave float64's range."""
    scaled = state.scales.scaled(Y) if state.scales.active else Y
    peak = float(np.max(np.abs(scaled))) if scaled.size else 0.0
    limit = 2.0 ** (32 if state.dtype == np.float32 else 128)
    if not math.isfinite(peak) or peak > limit:
        raise ValueError(f"y of this batch reaches {float(np.max(np.abs(Y))):.3g} (less the first batch's mean), "
                         "beyond the range the first batch's targets fixed for partial_fit; fit such targets with "
                         "fit, or rescale y")
    return scaled


def _add_normal_equations(state: Batches, X, Y, scale, n_threads) -> None:
    """A^T A, A^T S (S Y) and A^T S (S 1) of these training rows, added to state.train: by
    the core's Gram pass (in the compute dtype, then summed in float64), or for a callable
    kernel or sparse X in NumPy (float64), a block of rows per call of the kernel."""
    right = np.hstack([Y, np.ones((X.shape[0], 1))])
    row_scale = None if scale is None else np.sqrt(scale).astype(state.dtype)
    if row_scale is not None:
        right *= row_scale[:, None].astype(np.float64)
    every = state.support.size == state.m and np.array_equal(state.support, np.arange(state.m))
    used = state.centers if every else state.centers[state.support]  # no copy of m x d where all are used
    if is_user_kernel(state.kernel) or is_sparse(X):
        if is_sparse(X):  # the centres prepared once for every block
            used = state.sparse_centres if every and state.sparse_centres is not None else \
                prepared(used, state.kernel, state.sigma, state.matern_nu)
        H, c = 0.0, 0.0
        step = rows_per_block(used.m if is_sparse(X) else len(used))
        for r0 in range(0, X.shape[0], step):
            A = kernel_block(state.kernel, state.sigma, state.matern_nu, X[r0:r0 + step], used, n_threads)
            if row_scale is not None:
                A *= row_scale[r0:r0 + step, None].astype(np.float64)
            A = A @ state.R.astype(np.float64)
            H, c = H + A.T @ A, c + A.T @ right[r0:r0 + step]
    else:
        H, c = _block_normal_equations(X, right, used, state.R, state.kernel, state.sigma, state.matern_nu, row_scale,
                                       upper_triangular=state.upper, n_threads=n_threads)
    state.train.H += H
    state.train.c += c[:, :-1]
    state.train.a += c[:, -1]


def _add_holdout_rows(state: Batches, X, Y, scale, n_threads) -> None:
    """V <- the triangular factor of [V; S [k(X, C), Y, 1]], a block of rows at a time; the
    same kernel block kept for a classifier (state.kept)."""
    p = state.V.shape[0]
    rows = max(1, _BLOCK_ELEMENTS // max(1, p))
    centers = state.centers
    if is_sparse(X):
        centers = state.sparse_centres or prepared(centers, state.kernel, state.sigma, state.matern_nu)
    for r0 in range(0, X.shape[0], rows):
        r1 = min(X.shape[0], r0 + rows)
        K = kernel_block(state.kernel, state.sigma, state.matern_nu, X[r0:r1], centers,
                         n_threads).astype(np.float64, copy=False)
        if state.kept is not None:
            state.kept["K"].append(K)
        block = np.hstack([K, Y[r0:r1], np.ones((r1 - r0, 1))])
        if scale is not None:
            block *= np.sqrt(scale[r0:r1])[:, None]
        state.V = _triangle(np.vstack([state.V, block]), p)


def _holdout_normal_equations(state: Batches) -> tuple:
    """(A^T A, A^T S (S Y), A^T S (S 1)) of the hold-out rows seen, from V: V[:, :m] = Q^T S K,
    so G = V[:, support] R = Q^T A and G^T [G, V[:, m:]] are their products."""
    m = state.m
    G = state.V[:, state.support] @ state.R.astype(np.float64)
    right = G.T @ state.V[:, m:]
    return G.T @ G, right[:, :-1], right[:, -1]


def _triangle(M: np.ndarray, p: int) -> np.ndarray:
    """The p x p upper triangular R of M = Q R (zero rows below where M has fewer than p)."""
    R = scipy.linalg.qr(M, mode="r", check_finite=False)[0]
    out = np.zeros((p, M.shape[1]))
    out[:min(p, R.shape[0])] = R[:p]
    return out


def kept_rows(state: Batches) -> tuple:
    """(K, index, weights): the kept hold-out rows' kernel rows, class indices and
    weights (1 for a batch given without), joined."""
    kept = state.kept
    return np.vstack(kept["K"]), np.concatenate(kept["index"]), np.concatenate(kept["weights"])


def _sums(state: Batches, every_row: bool) -> tuple:
    """(mu, shift_scaled, H, c, rows): the intercept, its shift from mu0 in the targets'
    scaled units, and A^T W' A and A^T W' (Y - mu) (float64, w' = w n / sum w as the
    in-memory fits weigh the rows) over the training rows seen, or over every row seen
    (every_row: a refit's), and how many rows they sum."""
    mu = state.intercept()
    shift = (mu - state.offset) if state.fit_intercept else np.zeros(state.q)
    shift_scaled = state.scales.scaled(shift[None, :])[0] if state.scales.active else shift
    parts = (state.train, state.val) if every_row else (state.train,)
    rows = sum(p.rows for p in parts)
    weight = sum(p.weight for p in parts)
    H, c, a = state.train.H, state.train.c, state.train.a
    if every_row and state.val.rows:
        H_val, c_val, a_val = _holdout_normal_equations(state)
        H, c, a = H + H_val, c + c_val, a + a_val
    H = H * (rows / weight)
    c = (c - np.outer(a, shift_scaled)) * (rows / weight)
    if not (np.all(np.isfinite(H)) and np.all(np.isfinite(c))):
        raise ValueError("A^T A or A^T y is not finite: the kernel values or y overflow in the sums of partial_fit; "
                         "rescale X or y")
    return mu, shift_scaled, H, c, rows


def _holdout_rmse(state: Batches, shift_scaled: np.ndarray):
    """holdout(alphas): the pooled hold-out RMSE (scaled units, as the core's) of each of
    the L coefficient sets of alphas (m x (L q), set l's output j in column l q + j)."""
    def holdout(alphas):
        # Output j's residuals of the L sets: V [alpha; -e_j; mu_j - mu0_j], in the w' units
        # of the core (w' = w n_val / sum w).
        q, m = state.q, state.m
        L = alphas.shape[1] // q
        errors = np.empty((L, q))
        for j in range(q):
            vectors = np.zeros((state.V.shape[0], L))
            vectors[:m] = alphas[:, j::q].astype(np.float64)
            vectors[m + j] = -1.0
            vectors[-1] = shift_scaled[j]
            residual = state.V @ vectors
            errors[:, j] = np.einsum("ij,ij->j", residual, residual)
        return pooled_rmse(errors * (state.val.rows / state.val.weight), state.scales, state.val.rows)
    return holdout


def _holdout_error(state: Batches):
    """holdout_error(alphas): each coefficient set's error rate on the kept hold-out rows
    (a classifier's), as _holdout_rmse takes the sets."""
    K_val, truth, _ = kept_rows(state)

    def holdout_error(alphas):
        # The unweighted error rate of each set (as fit's selection="error"), from the
        # kept hold-out rows' decision values.
        q = state.q
        L = alphas.shape[1] // q
        predictions = K_val @ alphas.astype(np.float64)
        return [float(np.mean(class_index(predictions[:, i * q:(i + 1) * q]) != truth)) for i in range(L)]
    return holdout_error


def kernel_bound(state: Batches) -> float:
    """max k(x, x) over the training rows seen, as chk.kernel_bound reads it from the rows:
    1 for the distance kernels, the largest ||x||^2 for the linear kernel (a callable's
    largest diagonal value), 1 where that is not finite and > 0."""
    if state.kernel != "linear" and not is_user_kernel(state.kernel):
        return 1.0
    return state.bound if 0 < state.bound < math.inf else 1.0


def path(state: Batches, values: dict, *, report, refit_at=None) -> tuple[PathResult, np.ndarray]:
    """(result, intercept): NYTRO's path on the training rows seen, selected on the
    hold-out rows seen, by the core's engine (values: the NYTRO family's parameters, as
    nytro.nytro_path takes them). refit_at (n_iter, lambda): instead, the model at that
    t (and hybrid's lambda) on every row seen, without a hold-out set."""
    mu, shift_scaled, H, c, rows = _sums(state, every_row=refit_at is not None)
    dtype = state.dtype
    H, c, R = H.astype(dtype), np.ascontiguousarray(c, dtype=dtype), state.R_dense
    values = dict(values)
    n_val = state.val.rows if refit_at is None else 0
    if refit_at is not None:
        values.update(max_iter=int(refit_at[0]), hybrid_lambda=refit_at[1])
    k = R.shape[1]
    weights = np.asarray(state.scales.weights() or np.ones(state.q))
    metric = values["metric"]

    def image_factors(bases):
        # For output j, the triangular factor of S [K B_j, y_j - mu_j] = Q V M_j.
        out = []
        for j, B in enumerate(bases):
            M = np.zeros((state.V.shape[0], B.shape[1] + 1))
            M[:state.m, :-1] = B
            M[state.m + j, -1] = 1.0
            M[-1, -1] = -shift_scaled[j]
            factor = _triangle(state.V @ M, B.shape[1] + 1)
            out.append(np.ascontiguousarray(factor * math.sqrt(weights[j] * state.val.rows / state.val.weight)))
        return out

    tol = chk.tol_for_scaled_targets(values["tol"], values["stopping"], state.scales)
    use_images = values["method"] == "hybrid" and n_val > 0 and metric != "error"
    validate = None
    if n_val:
        validate = _holdout_error(state) if metric == "error" else _holdout_rmse(state, shift_scaled)
    raw = engine_path(lambda B: H @ B, c, R, validate, values, family=opt.NYTRO, n_train=rows,
                      kernel_bound=kernel_bound(state), iteration_bytes=0.5 * k * k * dtype.itemsize, tol=tol,
                      holdout_bytes=8.0 * state.V.size, storage_epsilon=0.0, report=report,
                      image_factors=image_factors if use_images else None, n_val=n_val)
    coef, validation = unscaled(raw["coef"], raw["validation_rmse"], state.scales, metric)
    result = PathResult(coef=coef, validation_rmse=validation, n_iter=raw["n_iter"],
                        iterations_run=raw["iterations_run"], step_size=raw["step_size"], rank=k, solver="gram",
                        products=raw["products"], lambda_=raw["lambda"])
    return result, mu


def tikhonov_path(state: Batches, lambdas, *, metric: str, refit_lambda=None) -> tuple[TikhonovResult, np.ndarray]:
    """(result, intercept): Nystrom KRLS along `lambdas` on the training rows seen,
    alpha = R (A^T W' A + lambda n I)^+ A^T W' y (n the training rows, w' as in _sums),
    selected on the hold-out rows seen, as nytro.reference.nkrls_path computes it: one
    eigendecomposition serves every lambda, and its rounding-level negative eigenvalues
    are taken as 0. The RMSE's best is its first minimum; an error rate's tie goes to the
    largest lambda (the strongest regularisation). Without a hold-out row, the first
    lambda's model and an empty path. refit_lambda: instead, the model at that lambda on
    every row seen (n all of them), without a hold-out set."""
    refit = refit_lambda is not None
    mu, shift_scaled, H, c, rows = _sums(state, every_row=refit)
    grid = [float(refit_lambda)] if refit else [float(lam) for lam in lambdas]
    # In the compute dtype, as the in-memory fit solves (float32 X: a float32 eigh).
    R = state.R_dense.astype(state.dtype)
    alphas = R @ shifted_solves(H, c, [lam * rows for lam in grid], "eigh", state.dtype)
    q = c.shape[1]
    n_val = 0 if refit else state.val.rows
    if n_val == 0:
        coef, _ = unscaled(alphas[:, :q], np.zeros(0), state.scales, metric)
        return TikhonovResult(coef, np.zeros(0), grid[0], 0, R.shape[1]), mu
    validate = _holdout_error(state) if metric == "error" else _holdout_rmse(state, shift_scaled)
    path_values = np.asarray(validate(alphas), dtype=np.float64)
    best = best_lambda(path_values, grid, metric)
    coef, validation = unscaled(alphas[:, best * q:(best + 1) * q], path_values, state.scales, metric)
    return TikhonovResult(coef, validation, grid[best], best, R.shape[1]), mu
