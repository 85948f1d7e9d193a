"""NytroClassifier and NystromKRLSClassifier: the regressors fitted to classes coded as +-1
(one column for two classes, one-vs-all columns for more, solved in the same pass by the
core's multi-output path), with the hold-out selection on the classification error."""
from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .. import options as opt
from .._labels import check_weighted_classes, plain_label, predicted_labels
from .._labels import encode_labels  # noqa: F401 (its callers, the tests among them, import it from here)
from ._base import KernelRegressorBase, _is_dask_array
from ._calibration import calibration_logits, fit_scale, log_softmax, smoothed_targets, softmax
from . import _partial
from .nytro import NytroRegressor
from .tikhonov import NystromKRLSRegressor


def _check_weighted_classes(y, sample_weight):
    """Refuse weights that leave one class: its model would have nothing to separate."""
    if sample_weight is None:
        return
    labels, weights = np.asarray(y), np.asarray(sample_weight)
    if labels.ndim != 1 or weights.shape != labels.shape or weights.dtype.kind not in "biuf":
        return  # the regressor's checks name what is wrong
    check_weighted_classes(np.unique(labels[weights > 0]))


def stratified_counts(counts, n_val: int) -> np.ndarray:
    """How many rows of each class (counts, each >= 2) a hold-out part of n_val rows takes:
    n_val * count / n rounded down, then raised to 1 and capped at count - 1 (every class
    on both sides), then the rows still missing (or over) given to (taken from) the
    classes furthest below (above) their proportional share, the first class on a tie
    (largest remainders; needs len(counts) <= n_val <= n - len(counts))."""
    counts = np.asarray(counts, dtype=np.int64)
    share = n_val * counts / counts.sum()
    taken = np.clip(np.floor(share).astype(np.int64), 1, counts - 1)
    while taken.sum() < n_val:
        room = taken < counts - 1
        taken[np.flatnonzero(room)[np.argmax((share - taken)[room])]] += 1
    while taken.sum() > n_val:
        room = taken > 1
        taken[np.flatnonzero(room)[np.argmin((share - taken)[room])]] -= 1
    return taken


class KernelClassifierMixin(ClassifierMixin):
    """What the classifiers add to their regressor: label coding, the selection on the
    hold-out error, decision_function and predict returning labels."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False
        tags.target_tags.single_output = True
        tags.classifier_tags.multi_class = True
        tags.regressor_tags = None
        return tags

    def _selection_metric(self) -> str:
        return self.selection  # checked by its row (nytro.options.SELECTION) on entry to fit

    def _targets(self, backend, rows):
        # The +-1 codes are fitted as they are: the selection on the hold-out error scores
        # the path's own predictions, which have no intercept.
        self.classes_, Y, one_output = backend.labels(rows, self._selection_metric())
        return Y, np.zeros(1 if one_output else Y.shape[1]), one_output

    def fit(self, X, y, sample_weight=None):
        """Fit the one-vs-all +-1 coded targets of the labels y, selecting t (and lambda)
        on a hold-out part by the classification error (selection="error") or the RMSE of
        the +-1 targets (selection="rmse").

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows, as NytroRegressor.fit takes them: a scipy.sparse X (CSR or CSC) is
            fitted by NytroClassifier without densifying it; NystromKRLSClassifier refuses it
            (TypeError).
        y : array-like of shape (n_samples,)
            The labels.
        sample_weight : array-like of shape (n_samples,) or None
            As for the regressor's fit: the training loss is weighted, and with
            selection="rmse" the hold-out RMSE too; the hold-out error (selection="error")
            counts every hold-out row once.

        Returns
        -------
        self : the fitted classifier
        """
        if not _is_dask_array(X):  # on Dask, nytro.dask's pass over the labels checks this
            _check_weighted_classes(y, sample_weight)
        self.__dict__.pop("calibration_scale_", None)  # a previous fit's: in memory, every fit sets it again
        KernelRegressorBase.fit(self, X, y, sample_weight)
        self._name_path()
        return self

    def _name_path(self):
        """The hold-out path the regressor's flow left in validation_rmse_, under the name of
        what it measures: validation_error_ for selection="error" (validation_rmse_ None)."""
        path = getattr(self, "validation_rmse_", None)
        self.validation_error_ = path if self.selection == "error" else None
        if self.selection == "error":
            self.validation_rmse_ = None

    def _holdout_rows(self, Y, n_val, rng, fraction):
        # Stratified, as scikit-learn's StratifiedShuffleSplit: each class holds out its
        # share of the n_val rows (stratified_counts: at least one row of every class on
        # each side), drawn uniformly within the class from rng, class by class in the
        # order of classes_. A uniform split could leave a rare class out of the hold-out
        # set, and the selection blind to it.
        index = (Y[:, 0] > 0).astype(np.int64) if Y.shape[1] == 1 else np.argmax(Y, axis=1)
        counts = np.bincount(index, minlength=len(self.classes_))
        n, k = Y.shape[0], len(counts)
        if counts.min() < 2:
            label = plain_label(self.classes_[int(np.argmin(counts))])
            raise ValueError(
                f"y has {counts.min()} row of class {label!r}: the hold-out split (validation_fraction="
                f"{fraction}) is stratified and needs at least 2 rows of every class, one to train on and one "
                "to hold out; give more rows of that class, or set validation_fraction=None")
        if not k <= n_val <= n - k:
            raise ValueError(
                f"validation_fraction={fraction} holds out {n_val} of n_samples={n} rows: the stratified "
                f"split needs at least one row of each of the {k} classes in the hold-out part and in the "
                f"training part ({k} <= hold-out rows <= {n - k}); change validation_fraction")
        rows = [np.flatnonzero(index == c) for c in range(k)]
        taken = stratified_counts(counts, n_val)
        return np.sort(np.concatenate([r[rng.permutation(r.size)[:t]] for r, t in zip(rows, taken)]))

    def _calibrate(self, backend, split, centers, coef, held_out):
        # The decision values of the selected model on the hold-out rows (the training
        # rows where there are none), and the scale of their softmax fitted to the rows'
        # classes, each row counting by its sample weight (nytro.estimators._calibration).
        # A backend that does not gather those rows (Dask) leaves calibration_scale_ unset.
        rows = backend.calibration_rows(split, held_out)
        if rows is None:
            return
        X_rows, Y_rows, weights = rows
        scores = backend.predict(self, X_rows, centers, coef, self.sigma_, kernel=self.kernel,
                                 matern_nu=self.matern_nu, n_threads=self._n_threads())
        index = (Y_rows[:, 0] > 0).astype(np.int64) if Y_rows.shape[1] == 1 else np.argmax(Y_rows, axis=1)
        self.calibration_scale_ = fit_scale(calibration_logits(scores),
                                            smoothed_targets(index, len(self.classes_), weights), weights)

    def _has_probabilities(self):
        """available_if's test: True before fit (check_is_fitted then says so), and after an
        in-memory fit; after a fit on Dask arrays, an AttributeError that says why
        (hasattr(clf, "predict_proba") is then False)."""
        if hasattr(self, "classes_") and not hasattr(self, "calibration_scale_"):
            raise AttributeError(
                f"this {type(self).__name__} has no predict_proba: its probabilities are calibrated on the hold-out "
                "rows' decision values, which a fit on Dask arrays does not gather and partial_fit has not had "
                "yet (no hold-out row among the batches so far); fit it in memory, give partial_fit more rows, or "
                "wrap it in sklearn.calibration.CalibratedClassifierCV")
        return True

    @available_if(_has_probabilities)
    def predict_proba(self, X):
        """Class probabilities, (n, n_classes) in the order of classes_, each row summing to
        1: softmax(calibration_scale_ * G) of the decision values G (the one-vs-all
        columns; for two classes (-f / 2, f / 2), i.e. sigmoid(calibration_scale_ * f) for
        classes_[1]). The scale was fitted on the hold-out rows, or the training rows of a
        fit without a hold-out set (see the class docstring);
        the most probable class is the one predict returns."""
        return self._probabilities(X, softmax)

    @available_if(_has_probabilities)
    def predict_log_proba(self, X):
        """log predict_proba(X), computed by log-sum-exp: finite where a probability
        underflows to 0."""
        return self._probabilities(X, log_softmax)

    def _probabilities(self, X, link):
        check_is_fitted(self, "calibration_scale_")
        scores = self.decision_function(X)
        scale = self.calibration_scale_

        def block(values):
            return link(scale * calibration_logits(values))

        if _is_dask_array(scores):  # one block of probabilities per chunk of X
            return scores.map_blocks(block, chunks=(scores.chunks[0], (len(self.classes_),)),
                                     new_axis=1 if scores.ndim == 1 else None, meta=np.empty((0, 0)))
        return block(scores)

    def decision_function(self, X):
        """k(X, centers_) @ coef_: (n,) for two classes (> 0 predicts classes_[1]), else
        (n, n_classes), one column per class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            As fit takes it (predict and predict_proba too): sparse X by blocks of rows,
            never densified.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return KernelRegressorBase.predict(self, X)

    def predict(self, X):
        """The class of the largest decision value (for two classes: classes_[1] where the
        decision is > 0)."""
        check_is_fitted(self, "classes_")
        scores = self.decision_function(X)
        if _is_dask_array(scores):  # a Dask array of labels, one block per chunk of X
            return scores.map_blocks(predicted_labels, self.classes_, drop_axis=list(range(1, scores.ndim)),
                                     meta=self.classes_[:0])
        return predicted_labels(scores, self.classes_)


_CLASSIFIER_DOC = """

    The labels y (strings, integers or booleans, of one type) are coded as +-1: one column
    for two classes (+1 for classes_[1]), one-vs-all columns for more, all fitted in the
    same pass. The hold-out selection minimises the classification error by default.

    predict_proba and predict_log_proba are calibrated on the hold-out rows, without
    another fit: the decision values of the hold-out rows at the selected t (and
    lambda), before any refit, are turned into probabilities by a softmax of the
    decision values times one scale, calibration_scale_ (temperature scaling; for two
    classes Platt's sigmoid without an offset), fitted by maximum likelihood, each row
    counting by its sample weight, to Platt's smoothed targets (a row of class k, whose
    class has N_k rows, or weight N_k, has target (N_k + 1) / (N_k + 2) for its class and
    1 / (N_k + 2) shared by the others), which keep a handful of perfectly separated
    hold-out rows from giving probabilities of 0 and 1. One scale keeps the most
    probable class the predicted one. With refit=True the scale fitted on the hold-out
    model is applied to the refitted model's decision values. Without a hold-out set
    (validation_fraction=None) the scale is fitted on the training rows' decision
    values: the model has seen those rows, so its probabilities are then optimistic. On
    Dask arrays the decision values are not gathered: the classifier has no
    predict_proba.

    The hold-out split is stratified: each class holds out its share of the rows (at
    least one, and keeps at least one for training), drawn within the class from
    random_state; a class of one row is refused (ValueError naming validation_fraction).
    On Dask arrays (nytro.dask) the split is nytro.dask's hash of the row index, not
    stratified: a class without a row on either side of it is refused (ValueError), and
    with sample_weight only selection="rmse" is taken.

    {{parameters}}

    Attributes
    ----------
    classes_ : (n_classes,) the labels, sorted.
    coef_ : (m,) for two classes, else (m, n_classes).
    validation_error_ : hold-out error rate {path} (selection="error"; else None).
    validation_rmse_ : hold-out RMSE of the +-1 targets {path} (selection="rmse"; else
        None).
    calibration_scale_ : float, the scale (>= 0) of the decision values in
        predict_proba's softmax; absent after a fit on Dask arrays.
    sigma_, sigma_candidates_, sigma_scores_, sigma_spread_ : the bandwidths used and,
        with sigma="auto", the overall scales tried and their hold-out RMSEs of the +-1
        codes (whatever `selection`), and the features' spreads used, as for the regressor.
    Others as for the regressor.
"""


# The classifiers' Examples section, the same fit for each.
_CLASSIFIER_EXAMPLE = """
    Examples
    --------
    On scikit-learn's iris data (three classes) as it comes:

    >>> from sklearn.datasets import load_iris
    >>> from nytro import {cls}
    >>> X, y = load_iris(return_X_y=True)
    >>> model = {cls}(n_centers=50, random_state=0).fit(X, y)
    >>> model.classes_
    array([0, 1, 2])
    >>> proba = model.predict_proba(X[:2])
    >>> proba.shape, bool(abs(proba.sum(axis=1) - 1).max() < 1e-12)
    ((2, 3), True)
"""


class BatchClassifierMixin:
    """partial_fit for the classifiers whose regressor has one (NytroClassifier,
    NystromKRLSClassifier; NytroLogisticClassifier has none): the labels' coding, then
    the regressor's sums (nytro.estimators._partial)."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Fit on one more batch of labelled rows: the model is then the one fit on every
        batch given since the first call (or since the last fit), to rounding.

        As the regressor's partial_fit (NytroRegressor.partial_fit,
        NystromKRLSRegressor.partial_fit), on the +-1 codes of the labels: the training
        rows' sums, the path selected anew at each call on every hold-out row seen (the
        hash of the row's index, not stratified: a class may have no hold-out row yet).
        The hold-out rows' kernel rows k(X_val, centers_) and classes are kept (O(n_val m)
        memory, n_val the hold-out rows seen), for selection="error" and for
        predict_proba, whose calibration_scale_ is fitted on them at each call (no
        predict_proba until a hold-out row has come).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            The batch's labels, each one of `classes`.
        classes : array-like of shape (n_classes,) or None
            Every label the batches will bring: required at the first call (it fixes the
            coding, classes_) unless fit ran before (its classes_ are then taken),
            optional later (then equal to classes_).
        sample_weight : array-like of shape (n_samples,) or None
            As fit's.

        Returns
        -------
        self : the fitted classifier
        """
        return _partial.partial_fit(self, X, y, sample_weight, classes)


@opt.documented
class NytroClassifier(KernelClassifierMixin, BatchClassifierMixin, NytroRegressor):
    __doc__ = """NYTRO classifier: NytroRegressor fitted to the coded labels.""" + _CLASSIFIER_DOC.format(
        path="after each iteration") + _CLASSIFIER_EXAMPLE.format(cls="NytroClassifier")

    def __init__(self, n_centers=1000, sigma="auto", *, kernel="gaussian", matern_nu=1.5, method="hybrid", nu=1.0,
                 max_iter=500, step_size="auto",
                 stopping="best", tol=None, window=10, n_iter_no_change=50, iterates="auto", factor="pivoted",
                 solver="auto", storage=None, centers=None, center_selection="uniform", selection="error",
                 validation_fraction=0.2, refit=False,
                 random_state=None, n_threads=None, n_jobs=None, verbose=0, dtype=None, options=None):
        super().__init__(
            n_centers, sigma, kernel=kernel, matern_nu=matern_nu, method=method, nu=nu, max_iter=max_iter,
            step_size=step_size, stopping=stopping,
            tol=tol, window=window, n_iter_no_change=n_iter_no_change, iterates=iterates, factor=factor,
            solver=solver, storage=storage, centers=centers, center_selection=center_selection,
            validation_fraction=validation_fraction, refit=refit,
            random_state=random_state, n_threads=n_threads,
            n_jobs=n_jobs, verbose=verbose, dtype=dtype, options=options)
        self.selection = selection
        del self.fit_intercept  # not a classifier's parameter: the codes are fitted as they are


@opt.documented
class NystromKRLSClassifier(KernelClassifierMixin, BatchClassifierMixin, NystromKRLSRegressor):
    __doc__ = """Nystrom KRLS classifier: NystromKRLSRegressor fitted to the coded labels.""" + \
        _CLASSIFIER_DOC.format(path="per lambda of the grid") + _CLASSIFIER_EXAMPLE.format(cls="NystromKRLSClassifier")

    def __init__(self, n_centers=1000, sigma="auto", *, kernel="gaussian", matern_nu=1.5, lambdas=None,
                 factor="pivoted", solver="eigh", storage=None, centers=None, center_selection="uniform",
                 selection="error", validation_fraction=0.2, refit=False, random_state=None, n_threads=None,
                 n_jobs=None,
                 verbose=0, dtype=None, options=None):
        super().__init__(
            n_centers, sigma, kernel=kernel, matern_nu=matern_nu, lambdas=lambdas, factor=factor, solver=solver,
            storage=storage, centers=centers, center_selection=center_selection,
            validation_fraction=validation_fraction, refit=refit, random_state=random_state, n_threads=n_threads,
            n_jobs=n_jobs,
            verbose=verbose, dtype=dtype, options=options)
        self.selection = selection
        del self.fit_intercept  # not a classifier's parameter: the codes are fitted as they are
