"""fit_intercept: the regressors fit each output's weighted mean as intercept_, the path
the targets less it, and predict adds it back; the classifiers fit their +-1 codes as
they are. (nytro.dask's estimators: tests/nytro_dask/test_dask.py.) Without it the kernel model
represents a common offset of the targets only through coef_, which early stopping and
lambda shrink (docs/design.md, "Targets far from zero")."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

REGRESSORS = [
    (NytroRegressor, {"n_centers": 60, "random_state": 0}),
    (NytroRegressor, {"n_centers": 60, "random_state": 0, "method": "gd", "refit": True}),
    (NystromKRLSRegressor, {"n_centers": 60, "random_state": 0}),
    (KRLSRegressor, {"random_state": 0}),
    (LandweberRegressor, {"random_state": 0, "max_iter": 100}),
    (KOLSRegressor, {}),
]
IDS = ["nytro", "nytro-gd-refit", "nkrls", "krls", "landweber", "kols"]


def problem(n=400, d=3, n_outputs=None, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d)).astype(dtype)
    f = np.sin(3 * X[:, 0].astype(np.float64))
    y = f + 0.05 * rng.standard_normal(n)
    if n_outputs:
        y = np.column_stack([y * (j + 1) for j in range(n_outputs)])
    X_test = rng.uniform(-1, 1, (200, d)).astype(dtype)
    return X, y, X_test


def spread(y):
    return float(np.max(np.abs(y - np.mean(y, axis=0))))


def assert_is_the_kernel_expansion(predicted, kernel, coef, intercept):
    """predicted = kernel @ coef + intercept, to the rounding of the sum (whose terms,
    for KOLS's interpolant, are far larger than the result)."""
    terms = np.abs(kernel) @ np.abs(coef) + np.abs(intercept)
    np.testing.assert_allclose(predicted, kernel @ coef + intercept, rtol=0,
                               atol=64 * np.finfo(float).eps * float(np.max(terms)))


@pytest.mark.parametrize("cls, params", REGRESSORS, ids=IDS)
def test_an_offset_of_the_targets_moves_only_the_intercept(cls, params):
    X, y, X_test = problem()
    offset = 1e6
    plain = cls(sigma=0.5, fit_intercept=True, **params).fit(X, y)
    shifted = cls(sigma=0.5, fit_intercept=True, **params).fit(X, y + offset)
    assert shifted.intercept_ == pytest.approx(plain.intercept_ + offset, rel=0, abs=4 * np.finfo(float).eps * offset)
    # The centred targets differ by the rounding of the offset (eps * 1e6 ~ 2e-10); the
    # linear map to the predictions amplifies it by at most cond(K_mm)-like factors
    # (~1e3 here, more for the interpolant KOLS).
    tol = (1e-2 if cls is KOLSRegressor else 1e-5) * spread(y)
    np.testing.assert_allclose(shifted.predict(X_test) - offset, plain.predict(X_test), rtol=0, atol=tol)
    if hasattr(plain, "n_iter_"):
        assert shifted.n_iter_ == plain.n_iter_
    if getattr(plain, "lambda_", None) is not None:
        assert shifted.lambda_ == plain.lambda_


@pytest.mark.parametrize("cls, params", REGRESSORS[:1] + REGRESSORS[2:4], ids=["nytro", "nkrls", "krls"])
def test_without_it_the_offset_costs_accuracy_with_it_none(cls, params):
    """What the option is for: the offset-free fit's accuracy on targets far from 0."""
    X, y, X_test = problem()
    truth = np.sin(3 * X_test[:, 0])
    offset = 100.0
    error = {flag: np.sqrt(np.mean((cls(sigma=0.5, fit_intercept=flag, **params).fit(X, y + offset)
                                    .predict(X_test) - offset - truth) ** 2)) for flag in (False, True)}
    centred = np.sqrt(np.mean((cls(sigma=0.5, fit_intercept=True, **params).fit(X, y).predict(X_test) - truth) ** 2))
    assert error[True] == pytest.approx(centred, rel=1e-6)
    assert error[False] > 1.5 * error[True]


@pytest.mark.parametrize("cls, params", REGRESSORS, ids=IDS)
def test_the_intercept_is_the_weighted_mean_of_each_output(cls, params):
    X, y, X_test = problem(n_outputs=2)
    Y = y + np.array([3.0, -7e4])
    weights = np.random.default_rng(1).uniform(0, 2, len(X))
    est = cls(sigma=0.5, fit_intercept=True, **params).fit(X, Y, sample_weight=weights)
    assert est.intercept_.shape == (2,)
    np.testing.assert_allclose(est.intercept_, np.average(Y, axis=0, weights=weights), rtol=1e-14)
    kernel = nytro.kernel_matrix(X_test, est.centers_, sigma=0.5)
    assert_is_the_kernel_expansion(est.predict(X_test), kernel, est.coef_, est.intercept_)
    one = cls(sigma=0.5, fit_intercept=True, **params).fit(X, Y[:, 1])
    assert isinstance(one.intercept_, float)
    assert one.intercept_ == pytest.approx(np.mean(Y[:, 1]), rel=1e-14)
    # Integers times 2^-1070 (subnormal, exact): the same mean; the products y w lost
    # digits as subnormals (2e-4 relative).
    counts = np.random.default_rng(2).integers(1, 4, len(X)).astype(float)
    tiny = cls(sigma=0.5, fit_intercept=True, **params).fit(X, Y, sample_weight=np.ldexp(counts, -1070))
    np.testing.assert_allclose(tiny.intercept_, np.average(Y, axis=0, weights=counts), rtol=1e-14)


@pytest.mark.parametrize("cls, params", REGRESSORS, ids=IDS)
def test_without_intercept_the_model_is_the_papers(cls, params):
    X, y, X_test = problem()
    est = cls(sigma=0.5, fit_intercept=False, **params).fit(X, y + 5.0)
    assert est.intercept_ == 0.0
    kernel = nytro.kernel_matrix(X_test, est.centers_, sigma=0.5)
    assert_is_the_kernel_expansion(est.predict(X_test), kernel, est.coef_, 0.0)


@pytest.mark.parametrize("cls, params", REGRESSORS, ids=IDS)
def test_by_default_the_regressors_fit_the_mean(cls, params):
    """fit_intercept=True is the regressors' default (scikit-learn's regressors'); the
    paper's model needs fit_intercept=False."""
    X, y, X_test = problem()
    est = cls(sigma=0.5, **params).fit(X, y + 5.0)
    assert est.get_params()["fit_intercept"] is True
    assert est.intercept_ == pytest.approx(np.mean(y + 5.0), rel=1e-15)
    kernel = nytro.kernel_matrix(X_test, est.centers_, sigma=0.5)
    assert_is_the_kernel_expansion(est.predict(X_test), kernel, est.coef_, est.intercept_)


def test_float32_keeps_the_digits_the_offset_would_take():
    """The mean is taken and subtracted in float64, before the cast to the compute dtype:
    cast first, y = f + 1e5 keeps 2^-7 ~ 0.008 of f's resolution in float32. The float32
    fit of the offset targets must then be as close to the float64 one as the float32 fit
    of the offset-free targets is to its float64 twin."""
    X, y, _ = problem()
    params = dict(n_centers=60, sigma=0.5, random_state=0, method="gd", max_iter=200, n_iter_no_change=None,
                  fit_intercept=True)

    def float32_error(targets):
        single = NytroRegressor(**params).fit(X.astype(np.float32), targets)
        double = NytroRegressor(**params).fit(X, targets)
        assert single.coef_.dtype == np.float32 and single.n_iter_ == double.n_iter_
        return np.max(np.abs(single.coef_ - double.coef_)) / np.max(np.abs(double.coef_))

    own = float32_error(y)
    assert float32_error(y + 1e5) <= 2 * own, own


@pytest.mark.parametrize("cls", [NytroClassifier, NystromKRLSClassifier])
def test_the_classifiers_fit_their_codes_without_one(cls):
    X, y, X_test = problem()
    clf = cls(n_centers=60, sigma=0.5, random_state=0).fit(X, y > 0.5)
    assert "fit_intercept" not in clf.get_params() and not hasattr(clf, "fit_intercept")
    assert not hasattr(clf, "intercept_")
    kernel = nytro.kernel_matrix(X_test, clf.centers_, sigma=0.5)
    assert_is_the_kernel_expansion(clf.decision_function(X_test), kernel, clf.coef_, 0.0)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_fit_intercept_must_be_a_bool(value):
    X, y, _ = problem(n=50)
    with pytest.raises(ValueError, match="fit_intercept"):
        NytroRegressor(n_centers=10, fit_intercept=value).fit(X, y)
