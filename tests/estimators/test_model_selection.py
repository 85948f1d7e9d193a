"""What users do with estimators in scikit-learn, on every estimator and classifier:
cross_val_score, GridSearchCV over sigma and n_centers, a Pipeline with StandardScaler,
clone, pickling (the regressors' pickling is in test_estimators.py); and `refit`, which
fits again on all rows at the selected t or lambda."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier,
                   NystromKRLSRegressor, NytroClassifier, NytroRegressor, reference)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

REGRESSORS = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor, KOLSRegressor)
CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)
REFITTING = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor) + CLASSIFIERS


def make(cls, **overrides):
    # The paper's model (no intercept), which the tests below compare with the functions'.
    params = {"n_centers": 20, "sigma": 1.0, "max_iter": 60, "random_state": 0, "fit_intercept": False, **overrides}
    accepted = cls().get_params()
    return cls(**{k: v for k, v in params.items() if k in accepted})


def data(cls, n=150, seed=0):
    """Features on very different scales (what StandardScaler is for), and a smooth target
    or three classes read from it."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 3)) * np.array([1.0, 100.0, 0.01])
    s = X[:, 0] + X[:, 1] / 100
    if cls in CLASSIFIERS:
        return X, np.digitize(s, [-0.5, 0.5])
    return X, np.sin(2 * s) + 0.05 * rng.standard_normal(n)


@pytest.mark.parametrize("cls", REGRESSORS + CLASSIFIERS)
def test_cross_val_score(cls):
    X, y = data(cls)
    pipe = make_pipeline(StandardScaler(), make(cls))
    scores = cross_val_score(pipe, X, y, cv=KFold(3, shuffle=True, random_state=0))
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    # accuracy for the classifiers, R^2 for the regressors: both well above chance here
    assert scores.mean() > (0.6 if cls in CLASSIFIERS else 0.5)


@pytest.mark.parametrize("cls", REGRESSORS + CLASSIFIERS)
def test_grid_search(cls):
    X, y = data(cls)
    grid = {"est__sigma": [0.3, 1.0, 3.0]}
    if "n_centers" in cls().get_params():
        grid["est__n_centers"] = [10, 30]
    from sklearn.pipeline import Pipeline
    pipe = Pipeline([("scale", StandardScaler()), ("est", make(cls))])
    search = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert set(search.best_params_) == set(grid)
    assert len(search.cv_results_["mean_test_score"]) == np.prod([len(v) for v in grid.values()])
    best = search.best_estimator_.named_steps["est"]
    assert best.sigma == search.best_params_["est__sigma"]
    assert search.predict(X).shape == (len(X),)


@pytest.mark.parametrize("cls", REGRESSORS + CLASSIFIERS)
def test_pipeline_scales_before_the_kernel(cls):
    """In a Pipeline the estimator sees the standardised X: the same model as fitting it
    on StandardScaler().fit_transform(X) by hand."""
    X, y = data(cls)
    pipe = make_pipeline(StandardScaler(), make(cls)).fit(X, y)
    by_hand = make(cls).fit(StandardScaler().fit_transform(X), y)
    assert_array_equal(pipe[-1].coef_, by_hand.coef_)
    assert_array_equal(pipe.predict(X), by_hand.predict(StandardScaler().fit(X).transform(X)))


@pytest.mark.parametrize("cls", REGRESSORS + CLASSIFIERS)
def test_clone_is_unfitted_with_equal_params(cls):
    X, y = data(cls)
    est = make(cls, sigma=0.7).fit(X, y)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "coef_")
    assert_array_equal(copy.fit(X, y).predict(X), est.predict(X))


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_classifier_pickle_round_trip(cls):
    X, y = data(cls)
    est = make(cls).fit(X, np.array(["low", "mid", "high"])[y])
    restored = pickle.loads(pickle.dumps(est))
    assert_array_equal(restored.predict(X), est.predict(X))
    assert_array_equal(restored.decision_function(X), est.decision_function(X))
    assert_array_equal(restored.classes_, est.classes_)
    assert restored.get_params() == est.get_params()


# ------------------------------------------------------------------------- refit
@pytest.mark.parametrize("cls", REFITTING)
def test_refit_keeps_the_selection_and_fits_all_rows(cls):
    X, y = data(cls)
    plain = make(cls).fit(X, y)
    refitted = make(cls, refit=True).fit(X, y)
    # the same selection, made on the same hold-out part
    for name in ("n_iter_", "lambda_", "validation_rmse_", "validation_error_"):
        if hasattr(plain, name):
            assert_array_equal(getattr(refitted, name), getattr(plain, name))
    # Direct: the model on all rows at the selected t or lambda, with the same centres
    # (all rows for KRLS and Landweber, whose centres are the training rows)
    Y = y
    if cls in CLASSIFIERS:
        Y = -np.ones((len(y), 3))
        Y[np.arange(len(y)), y] = 1
    centers = X if cls in (KRLSRegressor, LandweberRegressor) else plain.centers_
    assert_array_equal(refitted.centers_, centers)
    method = getattr(plain, "method", None)
    if cls in (NytroRegressor, NytroClassifier):
        expected = nytro.nytro_path(X, Y, centers, 1.0, method=method, max_iter=plain.n_iter_,
                                    hybrid_lambda=plain.lambda_).coef
    elif cls is LandweberRegressor:
        expected = nytro.landweber_path(X, Y, 1.0, method=method, max_iter=plain.n_iter_).coef
    elif cls is KRLSRegressor:
        expected = nytro.krls_path(X, Y, 1.0, lambdas=[plain.lambda_]).coef
    else:
        expected = nytro.nkrls_path(X, Y, centers, 1.0, lambdas=[plain.lambda_]).coef
    assert_allclose(refitted.coef_, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    assert refitted.coef_.shape != plain.coef_.shape or not np.allclose(refitted.coef_, plain.coef_)


def test_refit_hybrid_lambda_matches_reference():
    """method "hybrid" without a hold-out set at a given lambda (the refit's solve) in the
    core and in nytro.reference."""
    X, y = data(NytroRegressor)
    C = X[:20]
    for lam in (1e-6, 1e-2):
        core = nytro.nytro_path(X, y, C, 1.0, method="hybrid", max_iter=12, hybrid_lambda=lam)
        ref = reference.nytro_path(X, y, C, 1.0, method="hybrid", max_iter=12, hybrid_lambda=lam)
        assert core.lambda_ == ref.lambda_ == lam
        assert_allclose(core.coef, ref.coef, rtol=1e-7, atol=1e-9 * np.abs(ref.coef).max())


@pytest.mark.parametrize("cls", REFITTING)
def test_refit_is_validated_and_ignored_without_holdout(cls):
    X, y = data(cls)
    with pytest.raises(ValueError, match="refit"):
        make(cls, refit="yes").fit(X, y)
    a = make(cls, refit=True, validation_fraction=None, lambdas=[1e-3]).fit(X, y)
    b = make(cls, validation_fraction=None, lambdas=[1e-3]).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
