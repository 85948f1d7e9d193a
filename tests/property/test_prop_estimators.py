"""The five estimators on small, degenerate and oddly typed data: a clear exception naming
an argument, or a fitted model whose predictions are k(X, centers_) @ coef_ exactly
(kernel computed from the differences), that does not depend on how the same values and
parameters were typed."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from sklearn.exceptions import ConvergenceWarning

import nytro

from ._support import INPUT_DTYPES, eps, exact_kernel, kernel_tolerance, outcome, problems

# The paths of these tiny problems often select their last iteration; that warning is
# test_path_cut_warning.py's subject.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = {
    "NytroRegressor": lambda m, **kw: nytro.NytroRegressor(n_centers=m, max_iter=8, **kw),
    "NytroRegressor-gd": lambda m, **kw: nytro.NytroRegressor(n_centers=m, method="gd", max_iter=8, **kw),
    "NystromKRLSRegressor": lambda m, **kw: nytro.NystromKRLSRegressor(n_centers=m, **kw),
    "KRLSRegressor": lambda m, **kw: nytro.KRLSRegressor(**kw),
    # With the default intercept: centred targets on constant features (X of one value,
    # which these strategies draw, bool X above all) put cg's right-hand side in K's null
    # space, where every product is rounding.
    "LandweberRegressor": lambda m, **kw: nytro.LandweberRegressor(method="cg", max_iter=8, **kw),
    "KOLSRegressor": lambda m, **kw: nytro.KOLSRegressor(**{k: v for k, v in kw.items()
                                                           if k not in ("validation_fraction", "random_state")}),
}
NAMES = {"X", "y", "n_centers", "validation_fraction", "n_samples", "sigma", "lambdas"}


def _one_lambda(name):
    """Without a hold-out set the Tikhonov estimators need one lambda, not a grid."""
    return {"lambdas": [1e-6]} if name in ("NystromKRLSRegressor", "KRLSRegressor") else {}


def _fit(name, data, m, dtype=None, **kw):
    estimator = ESTIMATORS[name](m, sigma=data.sigma, random_state=0, n_threads=1, **kw)
    X = data.X if dtype is None else data.X.astype(dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        model = outcome(lambda: estimator.fit(X, data.y), NAMES)
    capped = [w for w in caught if issubclass(w.category, UserWarning) and "n_centers=" in str(w.message)]
    others = [w for w in caught if w not in capped and not issubclass(w.category, ConvergenceWarning)]
    assert not others, [str(w.message) for w in others]
    if model is not None and hasattr(model, "n_centers_"):
        # More centres than training rows are capped at the training rows, with a warning.
        assert model.n_centers_ == len(model.centers_) <= m
        assert bool(capped) == (model.n_centers_ < m), [str(w.message) for w in capped]
    return model


@pytest.mark.parametrize("name", list(ESTIMATORS))
@given(data=problems(max_n=20, max_m=8, holdout=False), m=st.integers(1, 12),
       fraction=st.sampled_from([None, 0.2, 0.5]), dtype=st.sampled_from(INPUT_DTYPES))
def test_estimator_predicts_its_own_model(name, data, m, fraction, dtype):
    # The values as the estimator receives them; unsigned types get magnitudes, as a
    # wrapped negative value (253) would be a large common offset (issue 26 defect 5,
    # tested in test_prop_kernel.py), not a dtype question.
    X = data.X * 3
    data.X = (np.abs(X) if np.issubdtype(dtype, np.unsignedinteger) else X).astype(dtype)
    model = _fit(name, data, m, validation_fraction=fraction)
    if model is None:
        return
    X = data.X.astype(np.float64)
    prediction = model.predict(data.X)
    assert prediction.shape == np.shape(data.y)
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(prediction))
    centers = np.asarray(model.centers_, dtype=np.float64)
    K = exact_kernel(X, centers, data.sigma)
    # fit_intercept (the regressors' default) adds intercept_ to every prediction.
    intercept = np.asarray(getattr(model, "intercept_", 0.0), dtype=np.float64)
    exact = (K @ np.asarray(model.coef_, dtype=np.longdouble) + intercept).astype(np.float64)
    dt = model.coef_.dtype
    coef_size = np.abs(np.asarray(model.coef_, dtype=np.float64)).reshape(len(centers), -1).sum(0).max()
    bound = ((kernel_tolerance(X, centers, data.sigma, dt, K) + len(centers) * eps(dt)) * coef_size
             + 2 * eps(dt) * float(np.abs(intercept).max()))
    err = float(np.abs(prediction - exact).max())
    assert err <= bound, f"predict error {err:.3e} > {bound:.3e}"


@pytest.mark.parametrize("name", list(ESTIMATORS))
@given(data=problems(max_n=16, max_m=6, holdout=False, min_n=6, kinds=("normal", "duplicates", "integers")),
       dtype=st.sampled_from([np.int64, np.int8, np.float16, np.bool_, np.uint8]))
def test_estimator_input_dtypes_are_their_float64_values(name, data, dtype):
    # Integer, boolean and half-precision features: the model of their float64 values.
    data.X = (data.X * 3).astype(dtype)
    got = _fit(name, data, 3)
    data.X = data.X.astype(np.float64)
    expected = _fit(name, data, 3)
    assert (got is None) == (expected is None)
    if got is not None:
        np.testing.assert_array_equal(got.coef_, expected.coef_)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimator_numpy_scalar_parameters(name):
    # NumPy scalars (what np.linspace / a grid search over np arrays hand over) are numbers.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 2))
    y = np.sin(X[:, 0])
    python = ESTIMATORS[name](10, sigma=1.2, n_threads=1, random_state=0, validation_fraction=0.2)
    numpy_ = ESTIMATORS[name](np.int64(10), sigma=np.float64(1.2), n_threads=np.int64(1), random_state=0,
                              validation_fraction=np.float32(0.2))
    if name == "KOLSRegressor":
        numpy_.set_params(rcond=np.float32(1e-10))
        python.set_params(rcond=float(np.float32(1e-10)))
    np.testing.assert_allclose(numpy_.fit(X, y).predict(X), python.fit(X, y).predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["KOLSRegressor", "KRLSRegressor", "LandweberRegressor"])
def test_estimator_centers_are_not_the_callers_array(name):
    # A fitted model is the caller's data at fit time: changing X afterwards (reusing a
    # buffer) must not change predict.
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 2))
    y = np.sin(X[:, 0])
    model = ESTIMATORS[name](5, sigma=1.0, n_threads=1, validation_fraction=None, **_one_lambda(name)).fit(X, y)
    Z = rng.standard_normal((7, 2))
    before = model.predict(Z)
    X += 10.0
    np.testing.assert_array_equal(model.predict(Z), before)


@pytest.mark.parametrize("name", ["NytroRegressor", "NytroRegressor-gd", "NystromKRLSRegressor", "KRLSRegressor",
                                  "LandweberRegressor", "KOLSRegressor"])
@given(exponent=st.sampled_from([-300, -150, 150, 300]), seed=st.integers(0, 2**32 - 1))
def test_estimator_multi_output_columns_of_any_magnitude(name, exponent, seed):
    # Column 0 at 1e+-300, column 1 ordinary: column 1's predictions are its own model's.
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 2))
    y = np.sin(X[:, 0])
    Y = np.c_[np.cos(X[:, 1]) * 10.0 ** exponent, y]
    fixed = dict(sigma=0.8, n_threads=1, random_state=0, validation_fraction=None, **_one_lambda(name))
    both = ESTIMATORS[name](10, **fixed).fit(X, Y)
    alone = ESTIMATORS[name](10, **fixed).fit(X, y)
    Z = rng.standard_normal((9, 2))
    np.testing.assert_allclose(both.predict(Z)[:, 1], alone.predict(Z), rtol=1e-6, atol=1e-9 * np.abs(y).max())
