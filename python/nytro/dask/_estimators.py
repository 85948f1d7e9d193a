"""The estimators' fit on Dask arrays: the classifiers' labels, the intercept, the refit."""
from __future__ import annotations

import math

import numpy as np

import dask
import dask.array as da

from .. import _checks as chk
from ._data import _as_dask_weights, _check_dask_x, _check_fraction, _check_seed, holdout_mask
from ._fit import nkrls_path, nytro_path


def _label_part(y, w, start, stop, fraction, seed):
    """The chunk's labels as a classifier's fit checks them (its kinds, and scikit-learn's
    classification-target check), and per part of the split (training, hold-out) their
    distinct labels and counts; then the distinct labels of positive weight (None without
    weights)."""
    from sklearn.utils.multiclass import check_classification_targets
    from ..estimators.classifiers import label_kinds
    y = np.asarray(y)
    kinds = label_kinds(y)
    if len(kinds) > 1:
        return kinds, None, None  # refused by the client, as in memory (they do not sort)
    check_classification_targets(y)
    held = holdout_mask(np.arange(start, stop), fraction, seed)
    parts = [np.unique(y[rows], return_counts=True) for rows in (~held, held)]
    positive = None if w is None else np.unique(y[np.asarray(w, dtype=np.float64) > 0])
    return kinds, parts, positive


def _coded_block(y, classes, dtype):
    from ..estimators.classifiers import coded_labels
    Y = coded_labels(np.searchsorted(classes, np.asarray(y)), len(classes), dtype)
    return Y[:, 0] if len(classes) == 2 else Y


def _classifier_targets(X, y, sample_weight, fraction, seed, dtype):
    """(classes, Y): a classifier's labels y (a Dask or NumPy vector, one per row of X) as
    the +-1 coded Dask targets of nytro.dask's split (1-D for two classes, one column per
    class for more), after one pass over them: the in-memory fit's checks of the labels
    and of sample_weight (a class left alone with positive weight), and, the hash split
    not being stratified, each class on both sides of it (ValueError)."""
    from ..estimators.classifiers import check_classes, check_label_kinds, plain_label
    n = int(X.shape[0])
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim in (1, 2) and len(y) == n:
            y = da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    if y.ndim == 2 and y.shape[1] == 1:  # as scikit-learn's check of a classifier's y
        import warnings
        from sklearn.exceptions import DataConversionWarning
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples, ), for example using ravel().", DataConversionWarning, stacklevel=4)
        y = y[:, 0]
    # Unknown sizes first: their shape, (nan,), would otherwise be reported as a wrong length.
    if isinstance(y, da.Array) and y.ndim == 1 and any(math.isnan(c) for c in y.chunks[0]):
        raise ValueError("y has unknown chunk sizes (nan): its rows cannot be matched with X's. "
                         "Call y.compute_chunk_sizes() first")
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be a 1-D array of {n} labels, one per row of X, got shape {y.shape}")
    y = y.rechunk((X.chunks[0],))
    w = _as_dask_weights(sample_weight, X)
    offsets = np.concatenate([[0], np.cumsum(y.chunks[0])]).astype(np.int64)
    ws = [None] * len(offsets) if w is None else w.to_delayed(optimize_graph=False).ravel()
    parts = [dask.delayed(_label_part)(c, wc, int(offsets[b]), int(offsets[b + 1]), fraction, seed)
             for b, (c, wc) in enumerate(zip(y.to_delayed(optimize_graph=False).ravel(), ws))
             if offsets[b + 1] > offsets[b]]
    results = dask.compute(*parts, optimize_graph=False)
    check_label_kinds(set().union(*(kinds for kinds, _, _ in results)))
    classes = np.unique(np.concatenate([labels for _, chunk, _ in results for labels, _ in chunk]))
    check_classes(classes)
    counts = np.zeros((2, len(classes)), dtype=np.int64)
    for _, chunk, _ in results:
        for side, (labels, c) in enumerate(chunk):
            np.add.at(counts[side], np.searchsorted(classes, labels), c)
    if w is not None:
        kept = np.unique(np.concatenate([positive for _, _, positive in results]))
        if len(kept) == 1:
            raise ValueError(f"sample_weight is zero on every row outside class {plain_label(kept[0])!r}: a "
                             "classifier needs at least 2 classes of positive weight")
    for side, name in ((0, "training"), (1, "hold-out")):
        if side and fraction is None:
            continue
        missing = np.flatnonzero(counts[side] == 0)
        if missing.size:
            label = plain_label(classes[missing[0]])
            raise ValueError(
                f"class {label!r} has no row in the {name} part of nytro.dask's hold-out split (validation_fraction="
                f"{fraction}; {int(counts[1 - side][missing[0]])} rows in the other part): on Dask the split hashes "
                "the row index and is not stratified; give that class more rows, change random_state, or set "
                "validation_fraction=None")
    Y = y.map_blocks(_coded_block, classes, dtype, dtype=dtype, meta=np.empty((0,) * (1 if len(classes) == 2 else 2),
                                                                               dtype),
                     **({} if len(classes) == 2 else dict(new_axis=1, chunks=(y.chunks[0], (len(classes),)))))
    return classes, Y


def fit_estimator(est, X, y, sample_weight=None):
    """Fit a NytroRegressor or NystromKRLSRegressor, or their classifier, on Dask arrays
    (their fit's hook): their kernel, centres (centers, center_selection), options and
    sample_weight, with nytro.dask's seeded split; refit as in memory (all rows, the
    selected t and lambda, the centres drawn from the training part). A classifier's
    labels are checked and coded by _classifier_targets, and its selection metric taken."""
    from ..estimators import NystromKRLSRegressor, NytroRegressor
    from ..estimators.classifiers import KernelClassifierMixin
    from sklearn.utils import check_random_state
    name = type(est).__name__
    if not isinstance(est, (NytroRegressor, NystromKRLSRegressor)):
        raise NotImplementedError(f"{name} does not take Dask arrays; NytroRegressor, NystromKRLSRegressor and "
                                  "their classifiers do")
    _check_dask_x(X, name)  # before the labels' and the intercept's passes read X's chunks
    rng = check_random_state(est.random_state)
    seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
    common = dict(n_centers=est.n_centers, kernel=est.kernel, matern_nu=est.matern_nu, centers=est.centers,
                  center_selection=est.center_selection, validation_fraction=est.validation_fraction, seed=seed,
                  options=est._options(), dtype=est.dtype, sample_weight=sample_weight, estimator=name,
                  progress=est._progress())
    if isinstance(est, KernelClassifierMixin):
        metric = est._selection_metric()
        if sample_weight is not None and metric == "error":
            # In memory the error rate counts each hold-out row once, weights or not; the
            # Dask passes weigh the hold-out rows with the training rows' weights.
            raise NotImplementedError(f"{name} on Dask arrays takes sample_weight with selection='rmse' only")
        fraction = _check_fraction(est.validation_fraction)
        dt = chk.compute_dtype(est.dtype, np.empty(0, X.dtype))
        est.classes_, y = _classifier_targets(X, y, sample_weight, fraction, _check_seed(seed), dt)
        common["metric"] = metric
    sigma = _dask_sigma(est, X, rng)
    intercept = np.zeros(int(y.shape[1]) if np.ndim(y) == 2 else 1)  # any other y: refused by name in the fit
    if getattr(est, "fit_intercept", False):  # the regressors' (a classifier fits its codes)
        y, intercept = _less_intercept(X, y, sample_weight)
    if isinstance(est, NytroRegressor):
        shared = dict(method=est.method, nu=est.nu, step_size=est.step_size)
        fit = nytro_path(X, y, sigma, max_iter=est.max_iter, stopping=est.stopping, tol=est.tol,
                         window=est.window, n_iter_no_change=est.n_iter_no_change, **shared, **common)
        est.solver_ = fit.result.solver
        coef = est._take_path(fit.result)
        if est._refits(fit.n_val > 0):  # all rows, the selected t (and lambda), no hold-out set
            again = nytro_path(X, y, sigma, max_iter=est.n_iter_, hybrid_lambda=est.lambda_, **shared,
                               **{**common, "centers": fit.centers, "validation_fraction": None})
            est.step_size_, est.solver_, coef = again.result.step_size, again.result.solver, again.result.coef
    else:
        fit = nkrls_path(X, y, sigma, lambdas=est.lambdas, **common)
        est.lambdas_ = fit.lambdas
        est.lambda_ = fit.result.lambda_
        est.validation_rmse_ = fit.result.validation_rmse
        coef = fit.result.coef
        if est._refits(fit.n_val > 0):  # all rows, the selected lambda, no hold-out set
            coef = nkrls_path(X, y, sigma, lambdas=[est.lambda_],
                              **{**common, "centers": fit.centers, "validation_fraction": None}).result.coef
    est.centers_ = fit.centers
    est.rank_ = fit.result.rank
    est.n_features_in_ = int(X.shape[1])
    est.coef_ = coef
    est._keep_intercept(intercept, np.ndim(y) == 1)
    return est


def _dask_sigma(est, X, rng):
    """The estimator's sigma_ on Dask arrays (set with sigma_candidates_ and sigma_scores_,
    as in memory): sigma as given, None for the linear kernel, or with sigma="auto" the
    distance heuristic alone: each feature's spread over all rows of X (one pass over the
    chunks, before the hold-out split, which the fit's own passes draw) times s0, the median
    distance of at most 200 rows drawn by rng. The candidates are not screened on Dask,
    where each screening fit would be another pass over the chunks: sigma_scores_ is NaN."""
    from ..estimators._bandwidth import SCREEN_CENTERS, distance_scale, searches, spreads_of
    if searches(est):
        X64 = X.astype(np.float64)
        deviations, magnitudes = dask.compute(X64.std(axis=0), abs(X64).max(axis=0))
        spreads = spreads_of(deviations, magnitudes)
        n = int(X.shape[0])
        rows = np.sort(rng.permutation(n)[:min(n, SCREEN_CENTERS)])
        s0 = distance_scale(np.asarray(X64[rows].compute()), spreads)
        est.sigma_, est.sigma_candidates_, est.sigma_scores_ = s0 * spreads, np.array([s0]), np.array([np.nan])
    return est.sigma_


def _less_intercept(X, y, sample_weight):
    """(y less its weighted column means, the means): fit_intercept's centring, as the
    estimators' in memory, in float64, from one pass over y and the weights before the
    fit's own. Where the means are not finite (y or the weights refused later, by name)
    y is returned as it is, with zero means."""
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
            return y, np.zeros(1)  # refused by name with the fit's other checks of y
        y = da.from_array(y, chunks=(X.chunks[0],) + ((-1,) if y.ndim == 2 else ()))
    Y = y.astype(np.float64)
    w = _as_dask_weights(sample_weight, X)
    if w is None:
        total, weighted = Y.shape[0], Y.sum(axis=0)
    else:
        w = w.astype(np.float64)
        # Relative to the largest, as in memory (tiny weights' products y w lose digits as
        # subnormals); all zero (refused later) stays zero, with no warning from a worker.
        w = w / da.maximum(w.max(), np.finfo(np.float64).tiny)
        total, weighted = w.sum(), (Y * (w[:, None] if Y.ndim == 2 else w)).sum(axis=0)
    total, weighted = dask.compute(total, weighted)
    with np.errstate(all="ignore"):
        means = np.atleast_1d(np.asarray(weighted, dtype=np.float64) / float(total))
    if not (np.isfinite(means).all() and float(total) > 0):
        return y, np.zeros(means.size)
    return Y - (means[0] if Y.ndim == 1 else means), means
