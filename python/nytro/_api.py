"""The C++-backed functions: check arguments, hand contiguous arrays to nytro._core,
wrap the results. nytro.reference has the same functions written in plain NumPy."""
from __future__ import annotations

import numpy as np

from . import _checks as chk
from . import _core
from . import options as opt
from ._results import PathResult, TikhonovResult


def _native(name: str, dtype: np.dtype):
    return getattr(_core, f"{name}_{dtype.name}")


# The LAPACK/BLAS pool (SciPy's OpenBLAS, which runs the core's eigendecompositions) is
# process-wide state and is left as the caller set it: n_threads counts the core's own
# threads. Capping the pool from a fit and restoring it after left it shrunk for good when
# fits overlapped in several threads (each restored what another had set), and even
# serialised under a lock OpenBLAS did not reliably take a limit set while other threads
# ran BLAS calls. A caller who wants it capped uses threadpoolctl around the fit.


def default_n_threads() -> int:
    """The threads the C++ core uses when n_threads is None, resolved now on this thread:
    OpenMP's default (OMP_NUM_THREADS, or a threadpoolctl limit such as joblib's and
    dask's workers set), capped at the CPUs of the process's affinity mask and its cgroup
    CPU quota."""
    return int(_core.default_threads())


def _training_data(X, y, X_val, y_val, dtype, centers=None):
    dt = chk.compute_dtype(dtype, X)
    X = chk.as_matrix(X, "X", dt)
    Y, one_d = chk.as_targets(y, "y", X.shape[0], dt)
    Xv, Yv = chk.check_holdout(X_val, y_val, X.shape[1], Y.shape[1], dt)
    if centers is not None:
        centers = chk.as_matrix(centers, "centers", dt)
        if centers.shape[1] != X.shape[1]:
            raise ValueError(f"centers have {centers.shape[1]} features but X has {X.shape[1]}")
        if centers.shape[0] > X.shape[0]:
            raise ValueError(f"there are more centres ({centers.shape[0]}) than training rows ({X.shape[0]})")
    # Targets near the ends of the dtype's range go to the core divided, column by column,
    # by powers of two (exact), so that their squared errors neither underflow nor
    # overflow; the results are scaled back (_scaled_back). See TargetScales.
    scales = chk.TargetScales(Y, Yv)
    return dt, X, scales.scaled(Y), one_d, Xv, scales.scaled(Yv), centers, scales


# Sample weights, shared by every fit: weighted least squares
#     (1/n) sum_i w'_i (f(x_i) - y_i)^2 (+ lambda ||f||^2), w' = w n / sum(w),
# i.e. (1/sum w) sum_i w_i (f(x_i) - y_i)^2: lambda keeps its meaning, the scale of the
# weights does not matter, and integer weights fit what repeating each row w_i times
# would. The hold-out RMSE is weighted alike, sqrt(sum_v w_v r_v^2 / sum_v w_v).


def _sample_weights(sample_weight, sample_weight_val, X, X_val):
    """The weights in the core's form (empty vectors for none), checked by name."""
    w = chk.check_sample_weight(sample_weight, X.shape[0], "sample_weight")
    wv = None
    if sample_weight_val is not None:
        if X_val is None or X_val.shape[0] == 0:
            raise ValueError("sample_weight_val is given but there is no hold-out set (X_val)")
        wv = chk.check_sample_weight(sample_weight_val, X_val.shape[0], "sample_weight_val")
    return chk.weights_argument(w), chk.weights_argument(wv)


def _coef(coef: np.ndarray, one_d: bool) -> np.ndarray:
    return coef[:, 0] if one_d else coef


def _scaled_coef(coef: np.ndarray, scales: chk.TargetScales) -> np.ndarray:
    if not scales.active:
        return coef
    coef = scales.unscaled(coef)
    if not np.all(np.isfinite(coef)):
        advice = "compute in float64 (dtype='float64') or rescale y" if coef.dtype == np.float32 else "rescale y"
        raise ValueError(f"the coefficients overflow {coef.dtype} in units of y (max |y| about "
                         f"2^{scales.top}): {advice}")
    return coef


def _scaled_back(raw: dict, scales: chk.TargetScales, metric: str = "rmse") -> dict:
    """The core's coef and validation_rmse for the scaled targets, in units of y (the same
    arrays where nothing was scaled; an error rate has no units)."""
    if not scales.active:
        return raw
    if metric == "error":
        return {**raw, "coef": _scaled_coef(raw["coef"], scales)}
    # The selection was made on the scaled path; an entry whose RMSE in units of y lies
    # beyond float64 (y near its top, a poor t or lambda) is inf, as IEEE overflow gives.
    with np.errstate(over="ignore"):
        unscaled_path = np.ldexp(raw["validation_rmse"], scales.top)
    return {**raw, "coef": _scaled_coef(raw["coef"], scales), "validation_rmse": unscaled_path}


def _path_result(raw: dict, one_d: bool, scale: chk.TargetScales, metric: str = "rmse") -> PathResult:
    raw = _scaled_back(raw, scale, metric)
    return PathResult(coef=_coef(raw["coef"], one_d), validation_rmse=raw["validation_rmse"],
                      n_iter=int(raw["n_iter"]), iterations_run=int(raw["iterations_run"]),
                      step_size=float(raw["step_size"]), rank=int(raw["rank"]), solver=raw["solver"],
                      products=int(raw["products"]), lambda_=float(raw["lambda"]))


def _tikhonov_result(raw: dict, lambdas: list, one_d: bool, scale: chk.TargetScales,
                     metric: str = "rmse") -> TikhonovResult:
    raw = _scaled_back(raw, scale, metric)
    selected = int(raw["selected"])
    return TikhonovResult(coef=_coef(raw["coef"], one_d), validation_rmse=raw["validation_rmse"],
                          lambda_=float(lambdas[selected]), selected=selected, rank=int(raw["rank"]))


def gaussian_kernel(X, Z, sigma, *, n_threads=None, dtype=None, out=None, progress=None):
    """K[i, j] = exp(-||X[i] - Z[j]||^2 / (2 sigma^2)), fused and blocked in C++: the
    shorthand of kernel_matrix(X, Z, kernel="gaussian", sigma=sigma).

    out: an existing C-contiguous, writable array of shape (len(X), len(Z)) and of the
    computation's dtype to write K into (it is returned). Reusing one saves the first
    touch of a fresh result's pages, which costs a sizeable share of the kernel's own
    time on a fresh n x m array (measured:
    benchmarks/results/bench_kernels/history.md, "Measurements behind the code").
    progress: None, or a callable progress("kernel", rows_done, len(X)) called while K is
    formed and once it is; an exception from it aborts the call (out is then partly
    written). Ctrl-C interrupts the call either way.
    """
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    return _kernel_into(X, Z, lambda d: chk.check_sigma(sigma), n_threads, dtype, out, progress)


def kernel_matrix(X, Z, *, kernel="gaussian", sigma=1.0, matern_nu=1.5, n_threads=None, dtype=None, out=None,
                  progress=None):
    """K[i, j] = k(X[i], Z[j]), fused and blocked in C++, with r = ||(X[i] - Z[j]) / sigma||:

    - "gaussian":  exp(-r^2 / 2)  (scikit-learn's RBF(length_scale=sigma))
    - "laplacian": exp(-r), the Euclidean distance (scikit-learn's laplacian_kernel uses
      the L1 distance instead); the same as "matern" with matern_nu=0.5
    - "matern":    u = sqrt(2 matern_nu) r; matern_nu = 0.5: exp(-u), 1.5: (1 + u) exp(-u),
      2.5: (1 + u + u^2 / 3) exp(-u) (scikit-learn's Matern(length_scale=sigma,
      nu=matern_nu), which scales r by sqrt(2 nu) the same way)
    - "linear":    X[i] . Z[j] (sigma unused; scikit-learn's linear_kernel)

    sigma: one bandwidth, or an array of one per feature (ARD: r is the distance of the
    features divided by their own bandwidths), as scikit-learn's length_scale.
    out, progress: as gaussian_kernel's.
    """
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    return _kernel_into(X, Z, lambda d: chk.check_kernel(kernel, sigma, matern_nu, d), n_threads, dtype, out,
                        progress)


def _kernel_into(X, Z, spec_for, n_threads, dtype, out, progress):
    dt = chk.compute_dtype(dtype, X, Z)
    X = chk.as_matrix(X, "X", dt)
    Z = chk.as_matrix(Z, "Z", dt)
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}")
    spec, n_threads = spec_for(X.shape[1]), chk.check_n_threads(n_threads)
    chk.check_progress(progress)
    if out is None:
        return _native("kernel_matrix", dt)(X=X, Z=Z, kernel=spec, n_threads=n_threads, progress=progress)
    chk.check_output_array(out, "out", (X.shape[0], Z.shape[0]), dt)
    _native("kernel_matrix_into", dt)(X=X, Z=Z, kernel=spec, out=out, n_threads=n_threads, progress=progress)
    return out


def kernel_predict(X, centers, coef, sigma, *, kernel="gaussian", matern_nu=1.5, n_threads=None, progress=None):
    """kernel_matrix(X, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu) @ coef,
    streaming rows of X (no n x m kernel kept)."""
    opt.check_parameters(opt.KERNEL_FUNCTIONS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    coef = np.asarray(coef)
    dt = chk.compute_dtype(None, centers, coef)
    X = chk.as_matrix(X, "X", dt)
    centers = chk.as_matrix(centers, "centers", dt)
    one_d = coef.ndim == 1
    coef = chk.as_matrix(coef.reshape(-1, 1) if one_d else coef, "coef", dt)
    if X.shape[1] != centers.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but the centres have {centers.shape[1]}")
    if coef.shape[0] != centers.shape[0]:
        raise ValueError(f"coef has {coef.shape[0]} rows but there are {centers.shape[0]} centres")
    chk.check_progress(progress)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    out = _native("kernel_predict", dt)(X=X, centers=centers, coef=coef, kernel=spec,
                                        n_threads=chk.check_n_threads(n_threads), progress=progress)
    return out[:, 0] if one_d else out



def _block_normal_equations(X, Y, centers, R, kernel, sigma, matern_nu, row_scale=None, *, support=None,
                            upper_triangular=False, kernel_first=False, low_precision=False, n_threads=None):
    """(A^T A, A^T Y) over these rows, A = diag(row_scale) k(X, centers[support]) R, by the
    core's streamed Gram pass (nytro/normal_equations.hpp), in X's dtype (float32 or
    float64; Y, centers, R and row_scale taken in it): R (len(support) x k) as the core
    holds it (see _nystrom_factor_parts), upper triangular when upper_triangular (its
    strict lower part then unread); support None: every centre, in order. R None:
    (K^T K, K^T Y) on all the centres, summed as the kernel-first route sums them, no
    factor applied. Y comes already multiplied by row_scale. kernel_first: K^T K summed
    first and R applied once. low_precision (float64): the core's float32 accumulation, as
    for storage="float32". For nytro.dask's chunks: the arrays are the caller's; shapes and
    indices are checked by the core (ValueError naming the argument)."""
    dt = np.dtype(X.dtype)
    as_dt = lambda a: None if a is None else np.ascontiguousarray(a, dtype=dt)  # noqa: E731
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    if support is not None:
        support = np.asarray(support)
        if support.dtype.kind not in "iu":
            raise ValueError(f"support must hold integer indices into the centres, got dtype {support.dtype}")
        support = np.ascontiguousarray(support, dtype=np.intp)
    return _native("_normal_equations", dt)(X=as_dt(X), Y=as_dt(Y), centers=as_dt(centers), R=as_dt(R),
                                            support=support, upper_triangular=bool(upper_triangular),
                                            kernel=spec, row_scale=as_dt(row_scale), kernel_first=kernel_first,
                                            low_precision=low_precision, n_threads=chk.check_n_threads(n_threads))

def _block_normal_product(K, B, n_threads=None):
    """K^T (K B) by the core's fused pass (nytro/normal_equations.hpp's
    block_normal_product), K read in place: K (n x k) C-ordered float32 or float64, B
    (k x p) of the computation's dtype (float64 with a float32 K: storage="float32"'s
    widened product). For nytro.dask's kept blocks: the arrays are the caller's,
    unchecked beyond the core's shape check."""
    dt = np.dtype(B.dtype)
    B = np.ascontiguousarray(B)
    if K.dtype == dt:
        return _native("_block_normal_product", dt)(K=np.ascontiguousarray(K), B=B,
                                                    n_threads=chk.check_n_threads(n_threads))
    if dt == np.float64 and K.dtype == np.float32:
        return _core._block_normal_product_float64_from_float32(K=np.ascontiguousarray(K), B=B,
                                                                n_threads=chk.check_n_threads(n_threads))
    raise ValueError(f"K of dtype {K.dtype} cannot be multiplied in {dt}")


def sample_centers(n, m, seed):
    """m distinct indices drawn uniformly from range(n) (SplitMix64 + partial Fisher-Yates)."""
    n = chk.check_int("n", n, 1)
    m = chk.check_int("n_centers", m, 1)
    if m > n:
        raise ValueError(f"n_centers={m} must be <= n={n}")
    seed = chk.check_int("seed", seed, 0, 2**64 - 1)
    return _core.sample_centers(n=n, m_centers=m, seed=seed)


def nystrom_factor(K_mm, *, method="pivoted", rank_tol=None, jitter=1e-10, n_threads=None, progress=None):
    """R (m x k) with R R^T K_mm R R^T = R R^T and K_mm R R^T K_mm = K_mm (see nystrom.hpp).

    progress: None, or a callable progress(stage, done, total) called between blocks of
    the long stages ("factor", "inverse", ...); an exception from it aborts the call."""
    opt.check_parameters(opt.NYSTROM_FACTOR, locals(), ())  # each by its row, before any work
    return _factor_call("nystrom_factor", K_mm, method, rank_tol, jitter, n_threads, progress)


def _nystrom_factor_parts(K_mm, *, method="pivoted", rank_tol=None, jitter=1e-10, n_threads=None, progress=None):
    """The factor of nystrom_factor as the core holds it (nytro/nystrom.hpp): (support, R,
    upper_triangular), support the indices (int64) of the centres R acts on, R
    (len(support) x k) nystrom_factor's rows there (its other rows are zero), upper
    triangular when upper_triangular (strict lower part zero): for "pivoted" the k pivots
    and a k x k triangle. nytro.dask's gram mode evaluates the kernel on those centres only
    and applies R as a triangle, as the in-memory gram solver does."""
    opt.check_parameters(opt.NYSTROM_FACTOR, locals(), ())  # each by its row, before any work
    return _factor_call("_nystrom_factor_parts", K_mm, method, rank_tol, jitter, n_threads, progress)


def _factor_call(name, K_mm, method, rank_tol, jitter, n_threads, progress):
    """The core's factor function `name` (nystrom_factor: the dense R; _nystrom_factor_parts:
    (support, R, upper_triangular)) on K_mm, checked."""
    dt = chk.compute_dtype(None, K_mm)
    K_mm = chk.as_matrix(K_mm, "K_mm", dt)
    if K_mm.shape[0] != K_mm.shape[1]:
        raise ValueError(f"K_mm must be square, got shape {K_mm.shape}")
    factor = _core.FactorOptions()  # the factor's rows of the options table, set by name
    factor.method = method
    factor.rank_tol = opt.RANK_TOL.to_core(rank_tol)["factor.rank_tol"]
    factor.jitter = opt.JITTER.to_core(jitter)["factor.jitter"]
    n_threads = chk.check_n_threads(n_threads)
    chk.check_progress(progress)
    # A kernel matrix is positive semidefinite: its diagonal is >= 0, and a factor of
    # rank 0 (every pivot <= 0) means an indefinite or negative K_mm, not an empty model.
    diagonal = np.diagonal(K_mm)
    if K_mm.shape[0] > 0 and np.min(diagonal) < 0:
        i = int(np.argmin(diagonal))
        raise ValueError(f"K_mm must be positive semidefinite (a kernel matrix), but K_mm[{i}, {i}] = "
                         f"{float(diagonal[i]):.6g} < 0")
    out = _native(name, dt)(K_mm=K_mm, options=factor, n_threads=n_threads, progress=progress)
    R = out if isinstance(out, np.ndarray) else out[1]
    if K_mm.shape[0] > 0 and R.shape[1] == 0 and np.any(K_mm != 0):
        raise ValueError("K_mm has no positive pivot: it is not positive semidefinite (not a kernel matrix)")
    return out


def nytro_path(X, y, centers, sigma, *, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None, method="gd",
               nu=1.0, max_iter=500,
               step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None,
               iterates="auto", factor="pivoted", rank_tol=None, jitter=1e-10, solver="auto", storage=None,
               n_threads=None, options=None, progress=None, dtype=None, metric="rmse",
               hybrid_lambda=None, sample_weight=None, sample_weight_val=None) -> PathResult:
    """NYTRO's path on A = K_nm R (method "gd": the paper's gradient descent; "nu", "cg",
    "hybrid": accelerated), with the validation RMSE at every iteration.

    The defaults compute the paper's algorithm (method "gd", the whole path);
    NytroRegressor defaults to method "hybrid" with n_iter_no_change=50. The result's
    `products` counts the products with A^T A taken, `solver` the solver that ran.
    sample_weight (one per row of X) and sample_weight_val (one per row of X_val):
    weighted least squares, the loss (1/sum w) sum_i w_i r_i^2 (integer weights fit
    what repeating rows would), and the hold-out RMSE weighted alike.
    """
    opt.check_parameters(opt.NYTRO, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    values = opt.merged(opt.NYTRO, options, locals())
    dt, X, Y, one_d, Xv, Yv, centers, scale = _training_data(X, y, X_val, y_val, dtype, centers)
    w, wv = _sample_weights(sample_weight, sample_weight_val, X, Xv)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    chk.check_progress(progress)
    core = opt.core_options(opt.NYTRO, values, validation_weights=scale.weights(), sample_weights=w,
                            validation_sample_weights=wv)
    core.tol = chk.tol_for_scaled_targets(tol, stopping, scale)
    raw = _native("nytro_path", dt)(X=X, Y=Y, centers=centers, kernel=spec, X_val=Xv, Y_val=Yv,
                                    options=core, progress=progress)
    return _path_result(raw, one_d, scale, metric)


def landweber_path(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, X_val=None, y_val=None, method="gd", nu=1.0,
                   max_iter=500,
                   step_size="paper", stopping="best", tol=None, window=10, n_iter_no_change=None,
                   iterates="auto", n_threads=None, options=None, progress=None, dtype=None, metric="rmse",
                   hybrid_lambda=None, sample_weight=None, sample_weight_val=None) -> PathResult:
    """Landweber iteration (early stopping) on the full n x n kernel (method gd), or its
    accelerated forms (nu, cg, hybrid) on K alpha = y; step_size defaults to the paper's
    "paper". sample_weight, sample_weight_val: as for nytro_path."""
    opt.check_parameters(opt.LANDWEBER, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    values = opt.merged(opt.LANDWEBER, options, locals())
    dt, X, Y, one_d, Xv, Yv, _, scale = _training_data(X, y, X_val, y_val, dtype)
    w, wv = _sample_weights(sample_weight, sample_weight_val, X, Xv)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    chk.check_progress(progress)
    core = opt.core_options(opt.LANDWEBER, values, validation_weights=scale.weights(), sample_weights=w,
                            validation_sample_weights=wv)
    core.tol = chk.tol_for_scaled_targets(tol, stopping, scale)
    raw = _native("landweber_path", dt)(X=X, Y=Y, kernel=spec, X_val=Xv, Y_val=Yv, options=core,
                                        progress=progress)
    return _path_result(raw, one_d, scale, metric)


def nkrls_path(X, y, centers, sigma, *, kernel="gaussian", matern_nu=1.5, lambdas=None, X_val=None, y_val=None,
               factor="pivoted",
               rank_tol=None, jitter=1e-10, solver="eigh", storage=None, n_threads=None, options=None,
               progress=None, dtype=None, metric="rmse", sample_weight=None,
               sample_weight_val=None) -> TikhonovResult:
    """Nystrom KRLS along a lambda grid (default: the paper's 100 values in [1e-15, 1],
    times max_i k(x_i, x_i): 1 but for the linear kernel).
    sample_weight, sample_weight_val: as for nytro_path."""
    opt.check_parameters(opt.NKRLS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    values = opt.merged(opt.NKRLS, options, locals())
    dt, X, Y, one_d, Xv, Yv, centers, scale = _training_data(X, y, X_val, y_val, dtype, centers)
    w, wv = _sample_weights(sample_weight, sample_weight_val, X, Xv)
    lambdas = chk.check_lambdas(lambdas, kernel, X)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    core = opt.core_options(opt.NKRLS, values, validation_weights=scale.weights(), sample_weights=w,
                            validation_sample_weights=wv)
    chk.check_progress(progress)
    raw = _native("nkrls_path", dt)(X=X, Y=Y, centers=centers, kernel=spec, lambdas=lambdas, X_val=Xv, Y_val=Yv,
                                    options=core, progress=progress)
    return _tikhonov_result(raw, lambdas, one_d, scale, metric)


def krls_path(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, lambdas=None, X_val=None, y_val=None, solver="eigh",
              n_threads=None, options=None,
              progress=None, dtype=None, metric="rmse", sample_weight=None,
              sample_weight_val=None) -> TikhonovResult:
    """KRLS (Tikhonov on the full kernel) along a lambda grid. Of
    :class:`~nytro.TikhonovOptions` it uses solver and n_threads; its Nystrom fields are
    refused. sample_weight, sample_weight_val: as for nytro_path (alpha = S (S K S +
    lambda n I)^-1 S y)."""
    opt.check_parameters(opt.KRLS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    values = opt.merged(opt.KRLS, options, locals())
    dt, X, Y, one_d, Xv, Yv, _, scale = _training_data(X, y, X_val, y_val, dtype)
    w, wv = _sample_weights(sample_weight, sample_weight_val, X, Xv)
    lambdas = chk.check_lambdas(lambdas, kernel, X)
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    core = opt.core_options(opt.KRLS, values, validation_weights=scale.weights(), sample_weights=w,
                            validation_sample_weights=wv)
    chk.check_progress(progress)
    raw = _native("krls_path", dt)(X=X, Y=Y, kernel=spec, lambdas=lambdas, X_val=Xv, Y_val=Yv, options=core,
                                   progress=progress)
    return _tikhonov_result(raw, lambdas, one_d, scale, metric)


def kols(X, y, sigma, *, kernel="gaussian", matern_nu=1.5, rcond=None, n_threads=None, options=None, dtype=None,
         sample_weight=None):
    """KOLS: alpha = pinv(K) y (eigenvalues at or below rcond * max dropped).
    sample_weight: alpha = S pinv(S K S) S y with S = diag(sqrt(w n / sum w))."""
    opt.check_parameters(opt.KOLS, locals(), opt.FUNCTION_SHARED)  # each by its row, before any work
    values = opt.merged(opt.KOLS, options, locals())
    dt, X, Y, one_d, _, _, _, scale = _training_data(X, y, None, None, dtype)
    w, _ = _sample_weights(sample_weight, None, X, X[:0])
    spec = chk.check_kernel(kernel, sigma, matern_nu, X.shape[1])
    keywords = opt.core_options(opt.KOLS, values)  # rcond and n_threads, checked by their rows
    coef = _native("kols", dt)(X=X, Y=Y, kernel=spec, sample_weights=w, **keywords)
    return _coef(_scaled_coef(coef, scale), one_d)


# The functions' Parameters sections, generated from the parameters' one declaration.
for _function, _family in ((nytro_path, opt.NYTRO), (landweber_path, opt.LANDWEBER), (nkrls_path, opt.NKRLS),
                           (krls_path, opt.KRLS), (kols, opt.KOLS)):
    opt.document_function(_function, _family)
