"""The classifiers' predict_proba and predict_log_proba (issue 44): temperature scaling
of the decision values, fitted on the hold-out rows the selection already has
(nytro.estimators._calibration), against scipy's optimiser on the same objective, against
scikit-learn's CalibratedClassifierCV and against the reliability diagram on real data."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.exceptions import NotFittedError
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from nytro import NystromKRLSClassifier, NytroClassifier
from nytro.estimators import _calibration as cal
from test_classifiers import sectors

# The small sets (wine) have fewer training rows than 200 centres: the cap's warning
# (test_small_data.py) is beside the point here.
pytestmark = [pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
              pytest.mark.filterwarnings("ignore:.*is more than the .* training rows:UserWarning")]

CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)


def _real(loader, seed=0, test_size=0.3):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y), np.sqrt(X.shape[1])


# ------------------------------------------------------------- the calibration map
def _objective(a, G, T):
    """The mean cross-entropy of T under softmax(a G), written directly."""
    return -np.mean(np.sum(T * (a * G - logsumexp(a * G, axis=1, keepdims=True)), axis=1))


@pytest.mark.parametrize("n_classes", [2, 3, 7])
@pytest.mark.parametrize("seed", range(3))
def test_fit_scale_minimises_the_smoothed_cross_entropy(n_classes, seed):
    rng = np.random.default_rng(seed)
    n = 40
    index = rng.integers(0, n_classes, n)
    index[:n_classes] = np.arange(n_classes)
    scores = rng.standard_normal((n, 1 if n_classes == 2 else n_classes))
    signs = np.where(index == 1, 1.0, -1.0)[:, None] if n_classes == 2 else np.eye(n_classes)[index] * 2 - 1
    scores += 1.5 * signs  # the decision values point towards the classes
    G, T = cal.calibration_logits(scores), cal.smoothed_targets(index, n_classes)
    a = cal.fit_scale(G, T)
    direct = minimize_scalar(_objective, bounds=(0.0, 100.0), args=(G, T), method="bounded",
                             options={"xatol": 1e-10})
    assert a > 0
    assert_allclose(a, direct.x, rtol=1e-6)
    assert _objective(a, G, T) <= direct.fun + 1e-12


def test_smoothed_targets_are_platts_for_two_classes():
    index = np.array([0, 1, 1, 1, 0])
    T = cal.smoothed_targets(index, 2)
    assert_allclose(T[:, 1], np.where(index == 1, 4 / 5, 1 / 4))  # Platt: (N+ + 1)/(N+ + 2), 1/(N- + 2)
    T = cal.smoothed_targets(np.array([0, 1, 2, 2]), 3)
    assert_allclose(T.sum(axis=1), 1.0)
    assert_allclose(T[2], [1 / 8, 1 / 8, 3 / 4])


def test_decision_values_pointing_away_give_uniform_probabilities():
    index = np.array([0, 1, 0, 1])
    G = cal.calibration_logits(np.array([1.0, -1.0, 2.0, -0.5]))  # every row on the wrong side
    assert cal.fit_scale(G, cal.smoothed_targets(index, 2)) == 0.0


# ------------------------------------------------------------------ the estimators
@pytest.mark.parametrize("refit", [False, True])
@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_probabilities_sum_to_one_and_agree_with_predict(cls, n_classes, refit):
    X, y = sectors(300, n_classes=n_classes)
    labels = np.array(["a", "b", "c", "d"])[y]
    clf = cls(n_centers=40, sigma=0.5, refit=refit, random_state=0).fit(X, labels)
    P = clf.predict_proba(X)
    assert P.shape == (len(X), n_classes) and P.dtype == np.float64
    assert np.all((P > 0) & (P < 1))
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert_array_equal(clf.classes_[np.argmax(P, axis=1)], clf.predict(X))
    assert_allclose(clf.predict_log_proba(X), np.log(P), rtol=1e-12, atol=1e-14)
    if n_classes == 2:  # sigmoid(a f) for classes_[1]
        assert_allclose(P[:, 1], 1 / (1 + np.exp(-clf.calibration_scale_ * clf.decision_function(X))), rtol=1e-12)


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_refit_keeps_the_scale_of_the_hold_out_model(cls):
    X, y = sectors(300, n_classes=3)
    held = cls(n_centers=40, sigma=0.5, random_state=0).fit(X, y)
    refitted = cls(n_centers=40, sigma=0.5, random_state=0, refit=True).fit(X, y)
    assert refitted.calibration_scale_ == held.calibration_scale_


def test_a_tiny_separated_hold_out_set_gives_no_certainties():
    """Two hold-out rows per class, perfectly separated: the plain likelihood's scale is
    infinite; Platt's targets (3/4) keep the probabilities away from 0 and 1."""
    rng = np.random.RandomState(0)
    X = np.concatenate([rng.normal(-3, 0.3, (10, 2)), rng.normal(3, 0.3, (10, 2))])
    y = np.repeat([0, 1], 10)
    clf = NytroClassifier(n_centers=10, sigma=1.0, validation_fraction=0.2, random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    assert np.isfinite(clf.calibration_scale_)
    assert 0.6 < P.max() < 0.9 and P.min() > 0.1


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_without_a_hold_out_set_the_scale_is_fitted_on_the_weighted_training_rows(cls):
    """validation_fraction=None: the scale is the weighted maximum-likelihood one on the
    training rows' decision values (here all rows), with weighted class counts in the
    smoothed targets, and so the same as for the rows repeated by integer weights."""
    X, y = sectors(300)
    with pytest.raises(NotFittedError):
        cls(n_centers=20).predict_proba(X)
    # An explicit sigma: "auto" draws its rows for s0 from the rows given, which repeating changes.
    params = {k: v for k, v in {"lambdas": [1e-3], "max_iter": 20}.items() if k in cls().get_params()}
    params["sigma"] = 1.0
    w = np.random.default_rng(3).integers(1, 4, len(X)).astype(np.float64)
    clf = cls(centers=X[:20], validation_fraction=None, **params).fit(X, y, sample_weight=w)
    G = cal.calibration_logits(clf.decision_function(X))
    index = np.searchsorted(clf.classes_, y)
    expected = cal.fit_scale(G, cal.smoothed_targets(index, 2, w), w)
    assert expected > 0 and clf.calibration_scale_ == pytest.approx(expected, rel=1e-9)
    best = minimize_scalar(lambda a: cal.cross_entropy(a, G, cal.smoothed_targets(index, 2, w), w),
                           bounds=(0.0, 10 * expected), method="bounded", options={"xatol": 1e-10})
    assert clf.calibration_scale_ == pytest.approx(best.x, rel=1e-5)
    repeat = np.repeat(np.arange(len(X)), w.astype(int))
    again = cls(centers=X[:20], validation_fraction=None, **params).fit(X[repeat], y[repeat])
    assert again.calibration_scale_ == pytest.approx(clf.calibration_scale_, rel=1e-9)
    P = clf.predict_proba(X)
    assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(X))


def test_probabilities_of_a_dask_array_are_those_of_its_rows():
    da = pytest.importorskip("dask.array")
    for n_classes in (2, 3):
        X, y = sectors(300, n_classes=n_classes)
        clf = NytroClassifier(n_centers=30, sigma=0.5, random_state=0).fit(X, y)
        lazy = clf.predict_proba(da.from_array(X, chunks=70))
        assert lazy.shape == (len(X), n_classes)
        assert_allclose(lazy.compute(scheduler="synchronous"), clf.predict_proba(X), rtol=1e-12)


# ------------------------------------------------------------- on real data sets
@pytest.mark.parametrize("loader", [load_breast_cancer, load_digits, load_wine], ids=lambda f: f.__name__)
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_log_loss_is_that_of_calibrated_classifier_cv(cls, loader):
    """Within 5% of CalibratedClassifierCV(sigmoid, cv=5) over the same estimator, which
    fits it five more times (here ours is below it on these sets)."""
    (X, X_test, y, y_test), sigma = _real(loader)
    clf = cls(n_centers=200, sigma=sigma, random_state=0)
    ours = log_loss(y_test, clf.fit(X, y).predict_proba(X_test))
    theirs = log_loss(y_test, CalibratedClassifierCV(clf, method="sigmoid", cv=5).fit(X, y).predict_proba(X_test))
    assert ours <= 1.05 * theirs, (ours, theirs)


def _expected_calibration_error(P, correct, n_bins=10):
    """The reliability diagram's gap: |accuracy - confidence| of the most probable class
    per confidence bin, weighted by the bins' rows."""
    confidence = P.max(axis=1)
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    return sum(abs(correct[bins == b].mean() - confidence[bins == b].mean()) * np.mean(bins == b)
               for b in np.unique(bins))


@pytest.mark.parametrize("loader", [load_breast_cancer, load_digits], ids=lambda f: f.__name__)
def test_reliability_diagram_is_as_close_as_calibrated_classifier_cvs(loader):
    (X, X_test, y, y_test), sigma = _real(loader, test_size=0.5)
    clf = NytroClassifier(n_centers=300, sigma=sigma, random_state=0)
    P = clf.fit(X, y).predict_proba(X_test)
    ours = _expected_calibration_error(P, clf.classes_[P.argmax(axis=1)] == y_test)
    other = CalibratedClassifierCV(clf, method="sigmoid", cv=5).fit(X, y)
    Q = other.predict_proba(X_test)
    theirs = _expected_calibration_error(Q, other.classes_[Q.argmax(axis=1)] == y_test)
    assert ours < 0.15 and ours <= theirs + 0.01, (ours, theirs)
