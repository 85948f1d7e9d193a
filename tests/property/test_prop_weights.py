"""Sample weights: their scale does not matter (at any magnitude, sums past float64's
range included), and rows of weight 0 are rows dropped where nothing is drawn from the
rows (no hold-out split, centres given as points)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from sklearn.base import clone

import nytro

from ._support import assert_close

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = {
    "NytroRegressor": nytro.NytroRegressor(n_centers=8, max_iter=10),
    "NytroRegressor-gd": nytro.NytroRegressor(n_centers=8, method="gd", max_iter=10, iterates="stepwise"),
    "NystromKRLSRegressor": nytro.NystromKRLSRegressor(n_centers=8),
    "KRLSRegressor": nytro.KRLSRegressor(),
    "LandweberRegressor": nytro.LandweberRegressor(method="cg", max_iter=8),
    "KOLSRegressor": nytro.KOLSRegressor(),
    "NytroClassifier": nytro.NytroClassifier(n_centers=8, max_iter=10, selection="rmse"),
}


@st.composite
def weighted(draw, *, classify=False):
    n = draw(st.integers(12, 36))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.standard_normal((n, 2))
    y = np.sin(X.sum(1)) + 0.1 * rng.standard_normal(n)
    if classify:
        y = np.where(y > np.median(y), "up", "down")
    kind = draw(st.sampled_from(["uniform", "integers", "spread"]))
    w = {"uniform": np.ones(n), "integers": rng.integers(0, 4, n).astype(float),
         "spread": 10.0 ** rng.uniform(-3, 3, n)}[kind]
    w[: n // 2] = np.maximum(w[: n // 2], 1.0)  # positive weight on both sides of any split
    w[-(n // 2):] = np.maximum(w[-(n // 2):], 0.5)
    if kind != "uniform":
        w[rng.choice(n, n // 6, replace=False)] = 0.0
        w[0] = w[-1] = 1.0
    return X, y, w


def _fitted(name, X, y, w, **params):
    est = clone(ESTIMATORS[name])
    if "random_state" in est.get_params():
        params["random_state"] = 0
    return est.set_params(sigma=1.0, n_threads=1, **params).fit(X, y, sample_weight=w)


def _predictions(model, Z):
    return model.decision_function(Z) if hasattr(model, "decision_function") else model.predict(Z)


@pytest.mark.parametrize("name", list(ESTIMATORS))
@given(data=st.data(), top=st.one_of(st.integers(-1000, 1024), st.just(1024)))
def test_weights_of_any_scale_fit_as_their_ratios(name, data, top):
    # A power of two keeps every ratio exact: the same w' = w n / sum(w), the same fit, with
    # the largest weight anywhere from 2^-1000 (the others subnormal) to just below 2^1024
    # (their sum past float64's largest).
    X, y, w = data.draw(weighted(classify=name.endswith("Classifier")))
    exponent = top - int(np.frexp(w.max())[1])
    scaled = np.ldexp(w, exponent)
    if np.any(scaled[w > 0] == 0) or not np.all(np.isfinite(scaled)):
        return  # the scale itself lost a weight: no longer the same ratios
    Z = np.random.default_rng(1).standard_normal((9, 2))
    expected = _predictions(_fitted(name, X, y, w), Z)
    got = _predictions(_fitted(name, X, y, scaled), Z)
    assert_close(got, expected, 1e-10, f"predictions at weights x 2^{exponent}")


@pytest.mark.parametrize("name", list(ESTIMATORS))
@given(data=st.data())
def test_zero_weights_are_dropped_rows_without_draws(name, data):
    X, y, w = data.draw(weighted(classify=name.endswith("Classifier")))
    keep = w > 0
    if keep.all():
        return
    params = {"validation_fraction": None} if name != "KOLSRegressor" else {}
    if "centers" in ESTIMATORS[name].get_params():
        params["centers"] = np.random.default_rng(2).standard_normal((8, 2))
    if name in ("NystromKRLSRegressor", "KRLSRegressor"):
        params["lambdas"] = [1e-3]
    Z = np.random.default_rng(3).standard_normal((9, 2))
    with_zeros = _predictions(_fitted(name, X, y, w, **params), Z)
    dropped = _predictions(_fitted(name, X[keep], y[keep], w[keep], **params), Z)
    assert_close(with_zeros, dropped, 1e-7, "predictions with weight-0 rows against the rows dropped")
