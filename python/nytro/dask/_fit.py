"""The public functions: nytro_path, nkrls_path and predict on Dask arrays."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import dask.array as da

from .. import _checks as chk
from .. import _dask_options as dopt
from .. import options as opt
from .._api import _nystrom_factor_parts, kernel_predict
from .._engine import best_lambda, engine_path, pooled_rmse, shifted_solves, unscaled
from .._results import PathResult, TikhonovResult
from ._centres import _center_seed, _centers, _checked_centers, _early_draw, _given_centers, _kernel_bound, _picked_rows
from ._cluster import _auto_mode, _broadcast, _client_product, _CORE_LOCK, _task_threads
from ._data import (_as_dask_data, _as_dask_weights, _check_fraction, _check_seed, _dense, _exponents, _Factor, _Kernel,
                    _split_counts)
from ._passes import _DirectOperator, _holdout_errors, _normal_equations, _Reported
from ._paths import _expected_path_length, _image_factors


@dataclass
class DaskFit:
    """A Dask fit: the in-memory result record, and where its centres came from.

    Attributes
    ----------
    result : PathResult or TikhonovResult
        As the in-memory ``nytro.nytro_path`` / ``nytro.nkrls_path`` return it
        (solver "gram" or "direct").
    centers : ndarray (m, d)
        The Nystrom centres: rows of X, or the points given as centers.
    center_rows : ndarray (m,) or None
        Their global row indices in X (None for centres given as points).
    n_train, n_val : int
        Training and hold-out rows of the split.
    lambdas : ndarray or None
        The lambda grid searched (nkrls_path; the default scaled by the kernel's bound),
        None for nytro_path.
    """

    result: PathResult | TikhonovResult
    centers: np.ndarray
    center_rows: np.ndarray
    n_train: int
    n_val: int
    lambdas: np.ndarray | None = None


def _reporter(progress):
    """progress (checked), or a callable that reports nothing."""
    chk.check_progress(progress)
    return progress or (lambda stage, done, total: None)


def _setup(X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype,
           sample_weight, estimator, progress=None, before_factor=None):
    """The passes shared by both paths: data, split, centres, factor (dense, m x k; and as
    the core holds it, a _Factor). values: the family's parameters (kernel, matern_nu,
    factor, rank_tol, jitter). before_factor: None, or called as before_factor(data, kern,
    fraction, seed, C, scales) once the centres are known, before the client factors K_mm
    (work sent to the workers then runs while it does)."""
    report = _reporter(progress)
    data = _as_dask_data(X, y, dtype, estimator)
    chk.check_kernel(values["kernel"], sigma, values["matern_nu"], int(data.X.shape[1]))  # ValueError by name
    kern = _Kernel(values["kernel"], np.asarray(sigma, dtype=np.float64) if np.ndim(sigma) else sigma,
                   values["matern_nu"])
    fraction = _check_fraction(validation_fraction)
    seed = _check_seed(seed)
    data.W = _as_dask_weights(sample_weight, data.X)
    early = _early_draw(data, n_centers, centers, center_selection, fraction, seed)
    counts, scales, picked = _split_counts(data, fraction, seed, () if early is None else early.wanted.values())
    report("split", 1, 1)
    n = int(data.X.shape[0])
    n_train = int(counts.sum())
    n_val = n - n_train
    if fraction is not None and (n_val < 1 or n_train < 1):
        raise ValueError(f"validation_fraction={fraction} leaves {n_train} training and {n_val} validation rows "
                         f"of n_samples={n}; at least 1 training and 1 validation row are needed")
    given = _given_centers(data, n_train, centers, center_selection)
    if given is not None:
        C, rows = given
    elif early is not None:
        if not np.array_equal(early.counts, counts):
            raise RuntimeError("the client's split of the rows differs from the workers'")
        rows, C = _picked_rows(data, early.chunk, dict(zip(early.wanted, picked)))
        C = _checked_centers(C, data)
    else:
        C, rows = _centers(data, counts, n_centers, fraction, seed, _center_seed(seed), center_selection, kern)
    report("centres", 1, 1)
    if before_factor is not None:
        before_factor(data, kern, fraction, seed, C, scales)
    # The core's compact factor (for the gram mode's chunks) and the dense one the other
    # passes apply: the same numbers (nystrom_factor's R is the compact one scattered).
    factor = _Factor(*_nystrom_factor_parts(kern(C, C, None), method=values["factor"], rank_tol=values["rank_tol"],
                                            jitter=values["jitter"], progress=progress))
    return data, kern, fraction, seed, C, rows, factor.dense(C.shape[0]), n_train, n_val, scales, factor


def _options(family, options, values: dict) -> dict:
    """The family's parameters (nytro.options, the Dask rows) from the keywords and the
    options object, each checked by its row; then the Dask-only ones (split_every)."""
    values = {**values, **opt.merged(family, options, values)}
    for param in family.params + dopt.DASK_ONLY:
        if param.name not in ("kernel", "matern_nu"):  # checked with sigma, once the features are known
            param.to_core(values[param.name])
    return values


def nytro_path(X, y, sigma, *, n_centers=None, kernel="gaussian", matern_nu=1.5, centers=None,
               center_selection="uniform", validation_fraction=0.2, seed=0, method="gd", nu=1.0, max_iter=500,
               step_size="auto", stopping="best", tol=None, window=10, n_iter_no_change=None, iterates="auto",
               factor="pivoted", rank_tol=None, jitter=1e-10, solver="auto", storage=None, n_threads=None,
               options=None, dtype=None, metric="rmse", hybrid_lambda=None, sample_weight=None, split_every=None,
               estimator=None, progress=None) -> DaskFit:
    """NYTRO's path on a Dask array X (chunked by rows) with a seeded hold-out split.

    Equals ``nytro.nytro_path(X[train], y[train], X[center_rows], sigma, X_val=X[val],
    y_val=y[val], sample_weight=w[train], sample_weight_val=w[val], solver=..., ...)`` up
    to rounding, with train/val from :func:`holdout_mask` (see the module's docstring for
    the passes) and the solver that ran (the result's ``solver``, "gram" or "direct").

    n_centers centres are drawn uniformly from the training rows (seeded by seed), or
    given: centers, as the estimators take it (an (m, d) array of points, or a 1-D array
    of row indices into X, before the split); center_selection="leverage" draws them as
    ``nytro.centers.leverage_centers`` does from the training rows, gathering each level's
    candidates from their chunks. sample_weight: None, a scalar, or one weight per row of X (a
    NumPy array, or a Dask array, rechunked as X's rows), split with the rows: the training
    rows' weights weigh the loss and the hold-out rows' the hold-out RMSE, as
    ``nytro.nytro_path``'s sample_weight and sample_weight_val (checked as the estimators'
    fit checks them). seed seeds the split and the centres. n_threads caps the threads of
    each worker's C++ calls (default: the worker's nthreads). estimator: a scikit-learn
    estimator's name, to validate the chunks as it does (its error messages). progress:
    None, or a callable progress(stage, done, total) called on the client after each
    pass over the chunks ("split", "centres", "gram", "validation"), between the blocks
    of the factor, and after each product in "direct" mode ("product", done, planned:
    max_iter, or the core's count of Lanczos products); an exception from it (a
    KeyboardInterrupt) stops the fit there. The other parameters are those of
    ``nytro.nytro_path``, with the same names and defaults, and the same options object;
    the values Dask does not take yet are refused (NotImplementedError), as their rows in
    ``nytro._dask_options`` (``DASK_NYTRO``) say.
    """
    values = _options(dopt.DASK_NYTRO, options, locals())
    method, solver, n_threads, metric = values["method"], values["solver"], values["n_threads"], values["metric"]
    chk.check_patience(n_iter_no_change)  # refused by name before a pass over the chunks
    report = _reporter(progress)
    # storage="float32" changes a float64 computation only, as in memory.
    low = (chk.check_storage(values["storage"], chk.NYTRO_STORAGES) == "float32" and isinstance(X, da.Array)
           and chk.compute_dtype(dtype, np.empty(0, X.dtype)) == np.float64)
    started = []

    def start_blocks(data, kern, fraction, seed, C, scales):
        # solver="direct": the kept blocks need the centres only, so they are computed on
        # the workers while the client factors K_mm.
        started.append(_DirectOperator(data, fraction, seed, C, None, dataclasses.replace(kern, low=low), n_threads,
                                       split_every, _exponents(scales)))

    data, kern, fraction, seed, C, rows, R, n_train, n_val, scales, factor = _setup(
        X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype, sample_weight,
        estimator, progress, before_factor=start_blocks if solver == "direct" and isinstance(X, da.Array) else None)
    exponents = _exponents(scales)
    k, q = R.shape[1], data.q
    kern = dataclasses.replace(kern, low=low)
    # gd's Lanczos iterates where the core's would take them (the mode decides "auto"'s
    # last condition): "direct" then costs tens of products, not max_iter.
    length = _expected_path_length(values, data.dtype, k, n_val > 0)
    planned, priced = int(length["planned"]), length["products"]
    mode = _auto_mode(solver, method, n_train, k, priced, data, C.shape[0], split_every,
                      itemsize=4 if low else None)
    if mode == "direct":
        operator = started[0] if started else _DirectOperator(data, fraction, seed, C, None, kern, n_threads,
                                                              split_every, exponents)
        operator.set_factor(R)
        H, c = (_Reported(operator, progress, planned) if progress else operator), operator.rhs()
    else:
        H, c = _normal_equations(data, fraction, seed, C, factor, kern, n_threads, split_every, exponents, n_train)
        report("gram", 1, 1)
        if low:  # the core's gram solver keeps A^T A in float32 and widens it in each product
            H = H.astype(np.float32).astype(H.dtype)
    # As nytro.nytro_path: the tasks divide Y's columns by their powers of two (exact), the
    # path runs in those units (the rule's tol too), the results are scaled back.
    rule_tol = chk.tol_for_scaled_targets(tol, stopping, scales)
    apply = H if mode == "direct" else (lambda B: _client_product(H, B))
    # hybrid's lambda grid and the step rule "paper" scale with max k(x, x) (a pass over the
    # chunks for the linear kernel); other steps need no bound.
    bound = (_kernel_bound(data, kern, fraction, seed)
             if method == "hybrid" or chk.check_step_size(step_size)[0] == "paper" else 1.0)

    def path_errors(alphas):
        errors = (operator.holdout_errors(alphas, metric) if mode == "direct" else
                  _holdout_errors(data, fraction, seed, C, alphas, kern, n_threads, split_every, exponents, metric))
        return errors if metric == "error" else pooled_rmse(errors, scales, n_val)

    # hybrid's hold-out RMSE of every (t, lambda) from the images of its bases, read in one
    # pass once the bases are built; its error rates, like every other path's values, from
    # the coefficient sets a stretch of the path validates.
    factors = (_image_factors(data, fraction, seed, C, kern, n_threads, split_every, scales)
               if method == "hybrid" and metric != "error" else None)
    # What a product reads, as the core's solvers count it (its choice of gd's Lanczos
    # iterates and of the chunks of iterates per validation): the kept blocks in
    # "direct" mode, A^T A's triangle in "gram" mode; a validation, the hold-out
    # kernel recomputed (counted at four times its size).
    kept = 4 if low else data.dtype.itemsize
    iteration_bytes = float(n_train) * C.shape[0] * kept if mode == "direct" else 0.5 * k * k * kept
    raw = engine_path(apply, c, R, path_errors if n_val else None, values, family=dopt.DASK_NYTRO, n_train=n_train,
                      kernel_bound=bound, iteration_bytes=iteration_bytes, tol=rule_tol,
                      holdout_bytes=4.0 * n_val * C.shape[0] * kept,
                      storage_epsilon=float(np.finfo(np.float32).eps) if low else 0.0, report=report,
                      image_factors=factors, n_val=n_val)
    coef, path, selected, stopped = raw["coef"], raw["validation_rmse"], raw["n_iter"], raw["iterations_run"]
    # direct: every pass over the workers' blocks, the step's estimate of lambda_max
    # included (what progress("product", ...) counted); gram: the core's count.
    step, products, lam = raw["step_size"], H.products if mode == "direct" else raw["products"], raw["lambda"]
    coef, path = unscaled(coef, path, scales, metric)
    result = PathResult(coef=coef[:, 0] if data.one_d else coef, validation_rmse=path, n_iter=selected,
                        iterations_run=stopped, step_size=step, rank=R.shape[1], solver=mode,
                        products=products, lambda_=lam)
    return DaskFit(result, C, rows, n_train, n_val)


def nkrls_path(X, y, sigma, *, n_centers=None, kernel="gaussian", matern_nu=1.5, centers=None,
               center_selection="uniform", lambdas=None, validation_fraction=0.2, seed=0, factor="pivoted",
               rank_tol=None, jitter=1e-10, solver="eigh", storage=None, n_threads=None, options=None, dtype=None,
               metric="rmse", sample_weight=None, split_every=None, estimator=None, progress=None) -> DaskFit:
    """Nystrom KRLS along a lambda grid on a Dask array X, with the split, centres and
    weights of :func:`nytro_path`: alpha(lambda) = R (A^T A + lambda n_train I)^+ A^T y
    from one eigendecomposition of A^T A (eigenvalues clipped at 0, as the core's "eigh";
    solver="cholesky": one Cholesky solve per lambda, as the core's),
    the hold-out errors of every lambda in one pass. progress: as :func:`nytro_path`'s
    ("split", "centres", the factor's stages, "gram", "validation"). The other parameters
    are those of ``nytro.nkrls_path`` (the rows of ``nytro._dask_options.DASK_NKRLS``)."""
    values = _options(dopt.DASK_NKRLS, options, locals())
    default_grid = lambdas is None
    lambdas = chk.check_lambdas(lambdas)
    if validation_fraction is None and len(lambdas) != 1:
        raise ValueError(f"without a hold-out set exactly one lambda is needed, got {len(lambdas)} in lambdas: pass "
                         "lambdas=[value], or a hold-out set to select among them")  # the core's message
    n_threads, metric = values["n_threads"], values["metric"]
    report = _reporter(progress)
    # storage="float32" changes a float64 computation only, as in memory.
    low = (chk.check_storage(values["storage"], chk.STORAGES) == "float32" and isinstance(X, da.Array)
           and chk.compute_dtype(dtype, np.empty(0, X.dtype)) == np.float64)
    data, kern, fraction, seed, C, rows, R, n_train, n_val, scales, factor = _setup(
        X, y, sigma, values, n_centers, centers, center_selection, validation_fraction, seed, dtype, sample_weight,
        estimator, progress)
    exponents = _exponents(scales)
    if default_grid:  # scaled by the kernel's bound, as the in-memory grid (chk.kernel_bound)
        lambdas = (np.asarray(lambdas) * _kernel_bound(data, kern, fraction, seed)).tolist()
    kern = dataclasses.replace(kern, low=low)
    H, c = _normal_equations(data, fraction, seed, C, factor, kern, n_threads, split_every, exponents, n_train)
    report("gram", 1, 1)
    q = c.shape[1]
    alphas = R @ shifted_solves(H, c, [lam * n_train for lam in lambdas], values["solver"], data.dtype)
    if n_val == 0:
        best, path = 0, np.zeros(0)
    else:
        errors = _holdout_errors(data, fraction, seed, C, alphas, kern, n_threads, split_every, exponents,
                                 metric)
        report("validation", 1, 1)
        path = errors if metric == "error" else pooled_rmse(errors, scales, n_val)
        best = best_lambda(path, lambdas, metric)
    coef, path = unscaled(alphas[:, best * q:(best + 1) * q], path, scales, metric)
    result = TikhonovResult(coef=coef[:, 0] if data.one_d else coef, validation_rmse=path,
                            lambda_=float(lambdas[best]), selected=best, rank=R.shape[1])
    return DaskFit(result, C, rows, n_train, n_val, np.asarray(lambdas))


def predict(X, centers, coef, sigma, *, kernel="gaussian", matern_nu=1.5, n_threads=None):
    """kernel_matrix(X, centers, kernel=kernel, sigma=sigma, matern_nu=matern_nu) @ coef
    for a Dask array X chunked by rows: a Dask array, one ``nytro.kernel_predict`` per
    chunk. With a distributed client, centres and coef are scattered to the workers once,
    and the result is to be computed through that client."""
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise ValueError("X must be a 2-D dask.array.Array")
    centers, coef = np.asarray(centers), np.asarray(coef)
    if centers.ndim != 2:  # kernel_predict's error, before centers.shape[1] is read
        raise ValueError(f"centers must be a 2-D array (n_samples, n_features), got shape {centers.shape}")
    if X.shape[1] != centers.shape[1]:  # known before any chunk is read
        raise ValueError(f"X has {X.shape[1]} features but the centres have {centers.shape[1]}")
    chk.check_kernel(kernel, sigma, matern_nu, int(X.shape[1]))  # before any chunk is read
    kern = _Kernel(kernel, np.asarray(sigma, dtype=np.float64) if np.ndim(sigma) else sigma, matern_nu)
    X = X.rechunk({1: -1})
    dt = chk.compute_dtype(None, centers, coef)
    # Scattered, not embedded in the graph: a graph carrying m x d centres is sent whole
    # to the scheduler (Dask warns from a few MiB on).
    centers_b, coef_b = _broadcast(centers, coef)
    # meta given: Dask would otherwise call the block function on empty arrays to find it.
    if coef.ndim == 1:
        return X.map_blocks(_predict_block, centers_b, coef_b, kern, n_threads, drop_axis=1, meta=np.empty(0, dt))
    return X.map_blocks(_predict_block, centers_b, coef_b, kern, n_threads, chunks=(X.chunks[0], (coef.shape[1],)),
                        meta=np.empty((0, 0), dt))


def _predict_block(x, centers, coef, kern, n_threads):
    x = _dense(x)
    if x.shape[0] == 0:  # an empty chunk (fit takes them): no rows to predict, not an empty X
        return np.zeros((0,) + coef.shape[1:], chk.compute_dtype(None, centers, coef))
    threads = _task_threads(n_threads)
    with _CORE_LOCK:
        return kernel_predict(x, centers, coef, kern.sigma, kernel=kern.kernel, matern_nu=kern.matern_nu,
                              n_threads=threads)


def _with_parameters(doc: str, family, options_class: str) -> str:
    """`doc` followed by a Parameters section of every row the function takes (the Dask
    rows say what is refused, so the options are listed in full, not as shortcuts)."""
    return f"""{doc.rstrip()}

    Parameters
    ----------
    options : {options_class} or None, default=None
        The options object of the in-memory function (see :class:`~nytro.{options_class}`);
        its fields are the option rows below, which are also keywords; a keyword and a field
        both set to different values are refused.
{opt.parameters_doc(family.params + dopt.DASK_ONLY)}
    """


# The functions' Parameters sections, generated from the rows they take (nytro.options).
nytro_path.__doc__ = _with_parameters(nytro_path.__doc__, dopt.DASK_NYTRO, "NytroOptions")
nkrls_path.__doc__ = _with_parameters(nkrls_path.__doc__, dopt.DASK_NKRLS, "TikhonovOptions")
