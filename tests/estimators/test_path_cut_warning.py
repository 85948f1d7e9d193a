"""The iterative estimators warn (ConvergenceWarning) when hold-out selection picks the
last of max_iter iterations: the path may have been cut before its best model. They stay
silent when the path turned before its end, and when there is no hold-out set."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from nytro import LandweberRegressor, NytroRegressor
from nytro.experiments import protocol

SMOOTH = dict(sigma=1.0, random_state=0, n_threads=1)


def smooth_problem(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.05 * rng.standard_normal(n)
    return X, y


def fit_silently(estimator, X, y):
    """Fit with every warning turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return estimator.fit(X, y)


def test_gd_cut_at_max_iter_warns():
    X, y = smooth_problem()
    model = NytroRegressor(n_centers=40, method="gd", max_iter=5, n_iter_no_change=None, **SMOOTH)
    with pytest.warns(ConvergenceWarning, match=r"t = max_iter = 5"):
        model.fit(X, y)
    # The warning says what the fitted attributes show: the best is the last iterate.
    assert model.n_iter_ == 5 == len(model.validation_rmse_)
    assert np.argmin(model.validation_rmse_) == 4


def test_landweber_defaults_warn_on_their_short_path():
    X, y = smooth_problem(n=200)
    model = LandweberRegressor(max_iter=20, **SMOOTH)  # the paper's step 1/n: slow
    with pytest.warns(ConvergenceWarning, match="LandweberRegressor selected the last iteration"):
        model.fit(X, y)
    assert model.n_iter_ == 20


def test_a_path_that_turns_before_its_end_is_silent():
    X, y = smooth_problem()
    model = fit_silently(NytroRegressor(n_centers=40, **SMOOTH), X, y)  # the defaults: method "hybrid"
    assert model.n_iter_ < model.max_iter
    assert model.validation_rmse_[model.n_iter_ - 1] == model.validation_rmse_.min()


def test_without_holdout_no_selection_and_no_warning():
    X, y = smooth_problem()
    model = fit_silently(NytroRegressor(n_centers=40, method="gd", max_iter=5, validation_fraction=None, **SMOOTH),
                         X, y)
    assert model.n_iter_ == 5 and len(model.validation_rmse_) == 0


def test_a_stopping_rule_that_ends_early_is_silent():
    X, y = smooth_problem()
    model = fit_silently(NytroRegressor(n_centers=40, method="gd", max_iter=500, stopping="window", tol=1e-2,
                                        n_iter_no_change=None, **SMOOTH), X, y)
    assert len(model.validation_rmse_) < 500


def test_the_benchmarks_silence_it_for_the_papers_protocol():
    X, y = smooth_problem()
    model = NytroRegressor(n_centers=40, method="gd", max_iter=5, n_iter_no_change=None, **SMOOTH)
    with protocol.path_cut_expected():
        fit_silently_inside = model.fit(X, y)  # a warning here would fail the test (filterwarnings = error)
    assert fit_silently_inside.n_iter_ == 5
