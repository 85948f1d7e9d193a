"""The in-memory backend of the estimators (nytro._backends' protocol): each step of their
fit on arrays in this process's memory (NumPy, or anything scikit-learn's validation turns
into NumPy), by nytro's in-memory functions.

The hold-out split permutes the rows with the fit's random_state (the estimator draws
the hold-out rows: the classifiers stratify), the centres are drawn from its training
rows, and the paths see the training and hold-out rows as arrays.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import validate_data

from . import _api
from . import _checks as chk
from . import _logistic
from ._labels import class_index, encode_labels
from ._results import NystromFit
from .centers import choose_centers


@dataclass
class Rows:
    """The fit's data: X in the compute dtype, y and the weights as checked, the caller's X
    (fitted attributes must not share its memory) and the split's randomness."""

    X: np.ndarray
    y: np.ndarray
    sample_weight: np.ndarray | None
    given: object
    rng: np.random.RandomState
    validation_fraction: object


@dataclass
class Split:
    """All rows (X, Y, sample_weight) and their training and hold-out parts (no hold-out
    rows without a hold-out set)."""

    X: np.ndarray
    Y: np.ndarray
    sample_weight: np.ndarray | None
    X_train: np.ndarray
    Y_train: np.ndarray
    X_val: np.ndarray
    Y_val: np.ndarray
    w_train: np.ndarray | None
    w_val: np.ndarray | None
    given: object

    @property
    def n_val(self) -> int:
        return int(self.X_val.shape[0])

    def training_sample(self, rows) -> Split:
        """The split with only `rows` (indices) of its training part, the hold-out part as
        it is: the bandwidth screening's (nytro.estimators._bandwidth)."""
        return Split(self.X, self.Y, self.sample_weight, self.X_train[rows], self.Y_train[rows], self.X_val,
                     self.Y_val, None if self.w_train is None else self.w_train[rows], self.w_val, self.given)

    def all_rows(self) -> Split:
        """Every row for training, no hold-out set (a refit's)."""
        return Split(self.X, self.Y, self.sample_weight, self.X, self.Y, self.X[:0], self.Y[:0], self.sample_weight,
                     None, self.given)

    def keywords(self, metric: str = "rmse") -> dict:
        """The hold-out rows and the weights as the in-memory path functions take them.
        The error rate (metric="error") counts rows, not weights: its hold-out rows go
        unweighted."""
        held_out = self.n_val > 0
        return dict(X_val=self.X_val if held_out else None, y_val=self.Y_val if held_out else None,
                    sample_weight=self.w_train, sample_weight_val=self.w_val if metric == "rmse" else None)

    def own(self, rows):
        """rows as a fitted attribute: a copy where they are the caller's X itself (fit
        without a hold-out split, whose X may be the caller's array: mutating it after fit
        must not change predict)."""
        try:
            shares = np.may_share_memory(rows, self.given)
        except Exception:  # an object NumPy cannot look into: copy to be safe
            shares = True
        return rows.copy() if shares else rows


class InMemory:
    """The estimators' steps on arrays in memory (see nytro._backends.Backend)."""

    arrays = "arrays in memory"
    paths = frozenset({"nytro", "nkrls", "krls", "landweber", "kols", "logistic"})
    screens_bandwidth = True

    def start(self, estimator, X, y, sample_weight, rng, *, validation_fraction, dtype, labels):
        dtype = chk.compute_dtype(dtype, X if hasattr(X, "dtype") else None)
        if labels:
            if y is None:
                raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None")
            checked, y = validate_data(estimator, X, y, dtype=dtype, order="C")
        else:
            checked, y = validate_data(estimator, X, y, dtype=dtype, multi_output=True, y_numeric=True, order="C")
        weights = chk.check_sample_weight(sample_weight, checked.shape[0], "sample_weight")
        return Rows(checked, y, weights, X, rng, validation_fraction)

    def labels(self, rows, metric):
        classes, Y = encode_labels(rows.y)
        return classes, np.ascontiguousarray(Y, dtype=rows.X.dtype), Y.shape[1] == 1

    def targets(self, rows, fit_intercept):
        # The targets are 2-D, whatever y was; less the intercept (float64), subtracted
        # before the cast so that a float32 fit keeps the digits of y that the offset would take.
        y, weights = rows.y, rows.sample_weight
        y2 = y.reshape(-1, 1) if y.ndim == 1 else y
        intercept = np.zeros(y2.shape[1])
        if fit_intercept:
            y2 = np.asarray(y2, dtype=np.float64)
            if np.isfinite(y2).all():  # else refused below, by name
                # Weights relative to the largest: the mean does not depend on their scale, and
                # products y w of weights as tiny as 1e-310 would lose digits as subnormals.
                intercept = np.average(y2, axis=0, weights=None if weights is None else weights / weights.max())
                y2 = y2 - intercept
        with np.errstate(over="ignore"):  # finite y beyond float32: said below, by name
            Y = np.ascontiguousarray(y2, dtype=rows.X.dtype)
        if not np.isfinite(Y).all():
            chk.check_finite_before_cast(y, "y", Y.dtype)
        return Y, intercept, y.ndim == 1

    def split(self, rows, Y, holdout_rows):
        X, weights = rows.X, rows.sample_weight
        n = X.shape[0]
        fraction = chk.check_fraction("validation_fraction", rows.validation_fraction)  # as a float
        if fraction is None:
            return Split(X, Y, weights, X, Y, X[:0], Y[:0], weights, None, rows.given)
        n_val = int(round(fraction * n))
        if n_val < 1 or n - n_val < 1:
            raise ValueError(
                f"validation_fraction={fraction} leaves {n - n_val} training and {n_val} validation "
                f"rows of n_samples={n}; at least 1 training and 1 validation row are needed")
        val = holdout_rows(Y, n_val, rows.rng, fraction)
        train = np.setdiff1d(np.arange(n), val, assume_unique=True)
        w_train = w_val = None
        if weights is not None:
            for part, kept in (("training", train), ("hold-out", val)):
                if not np.any(weights[kept] > 0):
                    raise ValueError(
                        f"sample_weight is zero on every one of the {kept.size} {part} rows the hold-out split "
                        f"(validation_fraction={fraction}) left: the {part} error has no weight; give more "
                        "rows a positive weight or change random_state")
            w_train, w_val = weights[train], weights[val]
        return Split(X, Y, weights, X[train], Y[train], X[val], Y[val], w_train, w_val, rows.given)

    def bandwidth_inputs(self, split, rng, n_rows):
        # The training rows, with their weights; the sample doubles as the screening fits'
        # centres.
        n_train = split.X_train.shape[0]
        rows = np.sort(rng.permutation(n_train)[:max(1, min(int(n_rows), n_train))])
        w = split.w_train
        return (*feature_deviations(split.X_train, w), split.X_train[rows], None if w is None else w[rows])

    def feature_ranges(self, split):
        X = split.X_train if split.w_train is None else split.X_train[split.w_train > 0]
        if X.shape[0] == 0:
            return None
        top, bottom = X.max(axis=0), X.min(axis=0)
        if hasattr(top, "toarray"):  # scipy.sparse: the implicit zeros count, as in the deviations
            top, bottom = top.toarray().ravel(), bottom.toarray().ravel()
        return np.asarray(top, np.float64) - np.asarray(bottom, np.float64)

    def centers(self, split, rng, *, n_centers, centers, center_selection, sigma, kernel, matern_nu, n_threads,
                estimator):
        n_train = split.X_train.shape[0]
        m = n_centers if centers is not None else capped_n_centers(estimator, n_centers, n_train)
        return choose_centers(split.X, split.X_train, n_centers=m, centers=centers, center_selection=center_selection,
                              sigma=sigma, rng=rng, n_threads=n_threads, kernel=kernel, matern_nu=matern_nu)

    def nytro_path(self, split, centers, sigma, *, metric="rmse", **params):
        result = _api.nytro_path(split.X_train, split.Y_train, centers, sigma, metric=metric, **split.keywords(metric),
                                 **params)
        return NystromFit(result, split.own(centers), split.X_train.shape[0], split.n_val)

    def nkrls_path(self, split, centers, sigma, *, lambdas, kernel="gaussian", metric="rmse", **params):
        lambdas = np.asarray(chk.check_lambdas(lambdas, kernel, split.X_train))
        result = _api.nkrls_path(split.X_train, split.Y_train, centers, sigma, lambdas=lambdas, kernel=kernel,
                                 metric=metric, **split.keywords(metric), **params)
        return NystromFit(result, split.own(centers), split.X_train.shape[0], split.n_val, lambdas)

    def logistic_path(self, split, centers, sigma, *, n_classes, **params):
        # The classes as indices (the +-1 codes' sign, or their column of +1); the hold-out
        # weights weigh the log loss.
        held_out = split.n_val > 0
        result = _logistic.logistic_path(split.X_train, class_index(split.Y_train), centers, sigma,
                                         n_classes=n_classes, X_val=split.X_val if held_out else None,
                                         y_val=class_index(split.Y_val) if held_out else None,
                                         sample_weight=split.w_train, sample_weight_val=split.w_val, **params)
        return NystromFit(result, split.own(centers), split.X_train.shape[0], split.n_val)

    def calibration_rows(self, split, held_out):
        if held_out:
            return split.X_val, split.Y_val, split.w_val
        return split.X_train, split.Y_train, split.w_train

    def predict(self, estimator, X, centers, coef, sigma, *, kernel, matern_nu, n_threads):
        X = validate_data(estimator, X, reset=False, dtype=coef.dtype, order="C")
        return _api.kernel_predict(X, centers, coef, sigma, kernel=kernel, matern_nu=matern_nu, n_threads=n_threads)


MEMORY = InMemory()


def feature_deviations(X, weights=None):
    """(deviations, magnitudes): each feature's standard deviation over the rows of X and
    its largest magnitude, in float64, each row counting by its weight where given
    (integer weights as repeated rows; the magnitudes over the rows of positive weight)."""
    X = np.asarray(X, dtype=np.float64)
    if weights is None:
        return X.std(axis=0), np.abs(X).max(axis=0)
    weights = np.asarray(weights, dtype=np.float64)
    weights = weights / weights.max()  # as fit_intercept's mean: tiny weights' products would be subnormal
    deviations = X - np.average(X, axis=0, weights=weights)
    return np.sqrt(np.average(deviations ** 2, axis=0, weights=weights)), np.abs(X[weights > 0]).max(axis=0)


def capped_n_centers(estimator: str, n_centers, n_train: int) -> int:
    """n_centers, or n_train with a UserWarning where the estimator (named) asks for more
    centres than the training rows left after the hold-out split. As scikit-learn's
    Nystroem caps n_components at n_samples: the default m (1000) would otherwise refuse
    every data set of under about 1250 rows, and inside a search every fit would fail.
    m = n_train is no approximation left: the model is then KRLS on the training rows."""
    m = int(n_centers)
    if m <= n_train:
        return m
    # stacklevel: the caller of fit (through fit, _fit_rows, _fit_path, centers_and_sigma
    # and InMemory.centers).
    warnings.warn(
        f"{estimator}: n_centers={m} is more than the {n_train} training rows left after the "
        f"hold-out split; using all {n_train} as centres (n_centers_). Set n_centers <= {n_train} to silence "
        "this warning.", UserWarning, stacklevel=7)
    return n_train
