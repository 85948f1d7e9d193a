"""nytro.dask's backend of the estimators (nytro._backends' protocol): each step of their
fit on Dask arrays chunked by rows, by nytro.dask's passes.

The estimators' own flow (nytro.estimators) selects, refits and sets the fitted
attributes; here are the steps that read the chunks: X's checks that need no chunk, the
classifiers' labels (one pass: checked, counted on both sides of the split, coded chunk
by chunk), the intercept's means (one pass over y), the inputs of sigma="auto"'s
heuristic (one pass over X, and a sample of rows gathered), and the paths of nytro_path
and nkrls_path, which draw the split (the hash of the row index, seeded from the fit's
random_state) and the centres themselves.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

import dask
import dask.array as da

from .. import _checks as chk
from .._labels import check_classes, check_label_kinds, check_weighted_classes, coded_labels, label_kinds, plain_label
from ._data import _as_dask_weights, _check_dask_x, _check_fraction, _check_seed, holdout_mask
from ._fit import nkrls_path, nytro_path, predict


def _label_part(y, w, start, stop, fraction, seed):
    """The chunk's labels as a classifier's fit checks them (its kinds, and scikit-learn's
    classification-target check), and per part of the split (training, hold-out) their
    distinct labels and counts; then the distinct labels of positive weight (None without
    weights)."""
    from sklearn.utils.multiclass import check_classification_targets
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
    Y = coded_labels(np.searchsorted(classes, np.asarray(y)), len(classes), dtype)
    return Y[:, 0] if len(classes) == 2 else Y


def _classifier_targets(X, y, sample_weight, fraction, seed, dtype):
    """(classes, Y): a classifier's labels y (a Dask or NumPy vector, one per row of X) as
    the +-1 coded Dask targets of nytro.dask's split (1-D for two classes, one column per
    class for more), after one pass over them: the in-memory fit's checks of the labels
    and of sample_weight (a class left alone with positive weight), and, the hash split
    not being stratified, each class on both sides of it (ValueError)."""
    n = int(X.shape[0])
    if not isinstance(y, da.Array):
        y = np.asarray(y)
        if y.ndim in (1, 2) and len(y) == n:
            y = da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    if y.ndim == 2 and y.shape[1] == 1:  # as scikit-learn's check of a classifier's y
        # stacklevel: the caller of the classifier's fit (through DaskBackend.labels, the
        # estimator's _targets, _fit_rows and the two fits).
        import warnings
        from sklearn.exceptions import DataConversionWarning
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change the shape of y "
                      "to (n_samples, ), for example using ravel().", DataConversionWarning, stacklevel=7)
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
        check_weighted_classes(np.unique(np.concatenate([positive for _, _, positive in results])))
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


@dataclass(frozen=True)
class _Split:
    """The fit's rows (start: y as given; split: the targets fitted) as nytro_path and
    nkrls_path take them: the split is theirs to draw (the hash of the row index, seeded),
    so the rows stay whole. estimator: its name, in the chunks' error messages; dtype: its
    dtype parameter, resolved with X's."""

    X: da.Array
    y: object
    sample_weight: object
    validation_fraction: object
    seed: int
    estimator: str
    dtype: object

    def all_rows(self) -> _Split:
        return dataclasses.replace(self, validation_fraction=None)

    def data(self) -> dict:
        """nytro_path's and nkrls_path's keywords of these rows (their names)."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


class DaskBackend:
    """The estimators' steps on Dask arrays (see nytro._backends.Backend)."""

    arrays = "Dask arrays"
    paths = frozenset({"nytro", "nkrls"})
    # Each screening fit of sigma="auto" would be passes over the chunks: the distance
    # heuristic alone.
    screens_bandwidth = False

    def start(self, estimator, X, y, sample_weight, rng, *, validation_fraction, dtype, labels):
        name = type(estimator).__name__
        _check_dask_x(X, name)  # before the labels' and the intercept's passes read X's chunks
        # The split's seed, drawn first: the labels' pass counts each class on both sides of it.
        seed = int(rng.randint(0, 2**63 - 1, dtype=np.int64))
        return _Split(X, y, sample_weight, validation_fraction, seed, name, dtype)

    def labels(self, rows, metric):
        if rows.sample_weight is not None and metric == "error":
            # In memory the error rate counts each hold-out row once, weights or not; the
            # Dask passes weigh the hold-out rows with the training rows' weights.
            raise NotImplementedError(f"{rows.estimator} on Dask arrays takes sample_weight with selection='rmse' "
                                      "only")
        fraction = _check_fraction(rows.validation_fraction)
        dtype = chk.compute_dtype(rows.dtype, np.empty(0, rows.X.dtype))
        classes, Y = _classifier_targets(rows.X, rows.y, rows.sample_weight, fraction, _check_seed(rows.seed), dtype)
        return classes, Y, Y.ndim == 1

    def targets(self, rows, fit_intercept):
        y = rows.y
        intercept = np.zeros(int(y.shape[1]) if np.ndim(y) == 2 else 1)  # any other y: refused by name in the fit
        if fit_intercept:
            y, intercept = _less_intercept(rows.X, y, rows.sample_weight)
        return y, intercept, np.ndim(y) == 1

    def split(self, rows, Y, holdout_rows):
        return dataclasses.replace(rows, y=Y)

    def bandwidth_inputs(self, split, rng, n_rows):
        # Every row's spread, unweighted (one pass over the chunks, before the hold-out
        # split, which the fit's own passes draw), and n_rows rows gathered.
        X64 = split.X.astype(np.float64)
        deviations, magnitudes = dask.compute(X64.std(axis=0), abs(X64).max(axis=0))
        n = int(split.X.shape[0])
        rows = np.sort(rng.permutation(n)[:min(n, n_rows)])
        return deviations, magnitudes, np.asarray(X64[rows].compute()), None

    def centers(self, split, rng, *, n_centers, centers, center_selection, sigma, kernel, matern_nu, n_threads,
                estimator):
        # As the estimator gives them: the path's first pass draws them.
        return dict(n_centers=n_centers, centers=centers, center_selection=center_selection)

    def nytro_path(self, split, centers, sigma, **params):
        return nytro_path(sigma=sigma, **split.data(), **_centre_keywords(centers), **params)

    def nkrls_path(self, split, centers, sigma, *, lambdas, **params):
        return nkrls_path(sigma=sigma, lambdas=lambdas, **split.data(), **_centre_keywords(centers), **params)

    def calibration_rows(self, split, held_out):
        return None  # the hold-out rows' decision values are not gathered

    def predict(self, estimator, X, centers, coef, sigma, *, kernel, matern_nu, n_threads):
        return predict(X, centers, coef, sigma, kernel=kernel, matern_nu=matern_nu, n_threads=n_threads)


DASK = DaskBackend()


def _centre_keywords(centers) -> dict:
    """The paths' keywords of the centres: `centers`' own, or a fit's centres (points)."""
    return centers if isinstance(centers, dict) else {"centers": centers}


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
