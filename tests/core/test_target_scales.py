"""Multi-output targets whose columns lie at different ends of the range: each column is
divided by its own power of two, and the pooled hold-out RMSE weights the columns so that
the path is the unscaled one. Before, one power of two for all columns left the small
column's squares at 0 and fitted it as all zeros."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSRegressor,
                   NytroRegressor)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def data(n=120, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 2))
    return X, np.sin(3 * X[:, 0]), np.cos(2 * X[:, 1]) * X[:, 0]


ESTIMATORS = [
    pytest.param(NytroRegressor, dict(method="gd"), id="nytro-gd"),
    pytest.param(NytroRegressor, dict(method="nu"), id="nytro-nu"),
    pytest.param(NytroRegressor, dict(method="cg"), id="nytro-cg"),
    pytest.param(NytroRegressor, dict(method="hybrid"), id="nytro-hybrid"),
    pytest.param(LandweberRegressor, dict(method="gd", step_size="auto"), id="landweber-gd"),
    # At most 20 basis vectors: past the 24 hold-out rows, hybrid's hold-out images are
    # rounding noise (issue 26, defect 1, fixed on its own).
    pytest.param(LandweberRegressor, dict(method="hybrid", max_iter=20), id="landweber-hybrid"),
    pytest.param(NystromKRLSRegressor, {}, id="nkrls"),
    pytest.param(KRLSRegressor, {}, id="krls"),
    pytest.param(KOLSRegressor, {}, id="kols"),
]


def make(cls, params, **more):
    base = {**dict(n_centers=20, sigma=0.5, random_state=0, max_iter=40), **params, **more}
    return cls(**{k: v for k, v in base.items() if k in cls().get_params()})


@pytest.mark.parametrize("cls, params", ESTIMATORS)
@pytest.mark.parametrize("exponent", [1000, -1000, 600, 140])
def test_each_column_is_fitted_at_its_own_scale(cls, params, exponent):
    """Columns [y1 2^e, y2 2^(e-10)] against the unscaled [y1, y2 2^-10]: the problem is
    the same up to a power of two per column, so the fit must be too, bit for bit: the
    coefficients per column, and the pooled path and selected t / lambda (the weights
    make the pooled errors those of the unscaled targets, times 4^e). At e = 140 only
    the first column is scaled, and the second's weight, 2^-2(140+), decides the bits."""
    X, y1, y2 = data()
    ordinary = np.c_[y1, np.ldexp(y2, -10)]
    extreme = np.c_[np.ldexp(y1, exponent), np.ldexp(y2, exponent - 10)]
    want = make(cls, params).fit(X, ordinary)
    got = make(cls, params).fit(X, extreme)
    np.testing.assert_array_equal(got.coef_, np.ldexp(want.coef_, exponent))
    np.testing.assert_array_equal(got.predict(X), np.ldexp(want.predict(X), exponent))
    if hasattr(want, "validation_rmse_"):
        np.testing.assert_array_equal(got.validation_rmse_, np.ldexp(want.validation_rmse_, exponent))
    for name in ("n_iter_", "lambda_"):
        assert getattr(got, name, None) == getattr(want, name, None), name


@pytest.mark.parametrize("cls, params", ESTIMATORS)
@pytest.mark.parametrize("exponent", [996, -996])
def test_a_small_column_beside_a_huge_one_is_not_zero(cls, params, exponent):
    """The issue's case: y 2^+-996 (about 1e+-300) beside y, whose predictions were all 0.
    With max |y| = 1 the core gets [y, y] (the first column divided by 2^e), and the
    pooled path is the first column's (the second's weight, 2^-1992, is below the
    smallest double, as its errors are below the first's rounding): the fit of [y, y] at
    the same selection, its columns times [2^e, 1], bit for bit."""
    X, y, _ = data()
    y = y / np.abs(y).max()  # max |y| = 1: y 2^e is divided by exactly 2^e
    both = make(cls, params).fit(X, np.c_[np.ldexp(y, exponent), y])
    twice = make(cls, params).fit(X, np.c_[y, y])
    for name in ("n_iter_", "lambda_"):
        assert getattr(both, name, None) == getattr(twice, name, None), name
    predicted, want = both.predict(X), twice.predict(X)
    assert np.abs(predicted[:, 1]).max() > 0.5
    np.testing.assert_array_equal(predicted[:, 1], want[:, 1])
    np.testing.assert_array_equal(predicted[:, 0], np.ldexp(want[:, 0], exponent))


@pytest.mark.parametrize("cls, params", ESTIMATORS)
def test_columns_far_apart_pool_as_the_exact_computation(cls, params):
    """[y1 2^1000, y2 2^-1000]: in exact arithmetic the second column's squared errors are
    2^-4000 of the first's, below any rounding of the pooled sum, so the path is that of
    [y1, 0] times 2^1000 (the same sum over 2 n_val entries), bit for bit, and so are the
    selection and column 1. Column 2 is fitted (not zero) at that selection."""
    X, y1, y2 = data()
    want = make(cls, params).fit(X, np.c_[y1, np.zeros_like(y2)])
    got = make(cls, params).fit(X, np.c_[np.ldexp(y1, 1000), np.ldexp(y2, -1000)])
    if hasattr(want, "validation_rmse_"):
        # Not bit for bit: a zero column changes the control flow (an empty Krylov basis,
        # the Lanczos certification's stretches), so column 1's rounding may differ: by
        # the hold-out errors' rounding amplified by the Krylov basis' growing conditioning
        # (hybrid's 20th step reaches ~1e-13), allowed up to 1e-11.
        np.testing.assert_allclose(got.validation_rmse_, np.ldexp(want.validation_rmse_, 1000), rtol=1e-11)
    for name in ("n_iter_", "lambda_"):
        assert getattr(got, name, None) == getattr(want, name, None), name
    np.testing.assert_allclose(got.coef_[:, 0], np.ldexp(want.coef_[:, 0], 1000), rtol=1e-11,
                               atol=1e-11 * np.ldexp(np.abs(want.coef_[:, 0]).max(), 1000))
    second = np.ldexp(got.predict(X)[:, 1], 1000)
    assert np.sqrt(np.mean((second - y2) ** 2)) < 0.5 * np.sqrt(np.mean(y2 ** 2))


@pytest.mark.parametrize("cls", [NytroRegressor, LandweberRegressor])
def test_window_rule_tol_is_in_units_of_y_for_multi_output(cls):
    """stopping="window": the absolute tol stays in units of y when the columns are scaled
    apart: [y 2^200, y 2^180] with tol 2^200 1e-3 stops where [y 2^100, y 2^80] (not
    scaled) with tol 2^100 1e-3 does, with the same path up to 2^100."""
    X, y, y2 = data(200)
    params = dict(method="gd", stopping="window", window=5, step_size="auto", n_iter_no_change=None)

    def fit(e):
        Y = np.c_[np.ldexp(y, e), np.ldexp(y2, e - 20)]
        return make(cls, params, max_iter=300, tol=np.ldexp(1e-3, e)).fit(X, Y)

    plain, scaled = fit(100), fit(200)
    np.testing.assert_array_equal(scaled.validation_rmse_, np.ldexp(plain.validation_rmse_, 100))
    assert scaled.n_iter_ == plain.n_iter_ < 300


def test_coefficients_overflowing_float64_name_y_not_float64():
    """y near the top of float64 whose coefficients overflow: rescale y (no advice to
    compute in float64, which it already does)."""
    X = np.array([[0.0], [1e-3]])
    y = np.array([1.7e308, -1.7e308])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            coef = nytro.kols(X, y, 1.0)
        except ValueError as error:
            assert "float64 (dtype='float64')" not in str(error) and "rescale y" in str(error), error
        else:
            assert np.all(np.isfinite(coef))
