"""The early stopping rules on the classification error (metric="error").

The error is a step function of t, and often flat from t = 1 while the first iterates
predict one class for every row (the majority of an imbalanced set): the rules must not
stop on that starting plateau (they did: "relative" and "window" stopped at t = window
and selected the constant classifier). Checked on the rule itself (nytro.reference's
_select, on paths made up to probe each clause) and on the core: its stopped runs against
the documented rule applied to its own full path.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import nytro
import nytro.reference as reference
from conftest import SERIAL
from nytro import NytroClassifier, datasets


def disc(n, seed=0):
    """An imbalanced binary set (~20% positive: a disc in [-1, 1]^2, 5% labels flipped):
    with sigma = 1 the first ~30 iterates of gd predict the negative class everywhere."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 2))
    y = np.where(np.hypot(X[:, 0] - 0.3, X[:, 1]) < 0.45, 1.0, -1.0)
    flip = rng.rand(n) < 0.05
    y[flip] = -y[flip]
    return X, y[:, None]


def plateau_problem():
    X, Y = disc(700)
    return X[200:], Y[200:], X[:200], Y[:200], X[200:240]


def plateau_of(path):
    """Length of the starting plateau (values equal to the first)."""
    moved = np.flatnonzero(path != path[0])
    return int(moved[0]) if moved.size else len(path)


# ---------------------------------------------------------------------- the rule
def select(path, stopping, tol=None, window=4, patience=None):
    return reference._select(np.asarray(path, float), stopping, tol, window, patience, metric="error")


def test_the_starting_plateau_is_not_judged():
    path = [0.3] * 12 + [0.25, 0.2, 0.15, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    # counted from t = 13: "relative" and "window" judge t = 16 first, where the window
    # 0.25..0.1 still falls; the first flat window of 4 ends at t = 19, the first window
    # not below the best before it at t = 20
    assert select(path, "relative") == (16, 20)
    assert select(path, "window") == (19, 19)
    # the RMSE's rules judge from t = window: a flat start stops them at once
    assert reference._select(np.asarray(path), "relative", None, 4) == (1, 5)
    # patience counts from the later of the plateau's end and the last improvement
    assert select(path, "best", patience=3) == (16, 19)
    assert select([0.3] * 12 + [0.35] * 6, "best", patience=3) == (1, 15)


def test_a_path_that_never_leaves_its_first_value_runs_to_the_end():
    for stopping in ("relative", "window"):
        assert select([0.2] * 30, stopping) == ((1 if stopping == "relative" else 30), 30)
    assert select([0.2] * 30, "best", patience=5) == (1, 30)


def test_ties_are_no_improvement_even_at_zero_error():
    path = [0.4, 0.3, 0.2, 0.1] + [0.0] * 8
    assert select(path, "relative") == (5, 9)
    assert select(path, "window") == (8, 8)


def test_window_tol_is_relative_to_the_error_level():
    # A fall of 4% of the level per 4-step window: stops for tol = 0.05, not for 0.03;
    # the same at a level ten times lower (an error rate has no units of y). The first
    # value is a plateau of its own: t = 5 is the first judged.
    for level in (0.3, 0.03):
        path = level * 0.99 ** np.arange(40)
        assert select(path, "window", tol=0.05) == (5, 5)
        assert select(path, "window", tol=0.03) == (40, 40)


# ---------------------------------------------------------------------- the core
@pytest.mark.parametrize("stopping, patience", [("relative", None), ("window", None), ("best", 10)])
@pytest.mark.parametrize("method", ["gd", "nu", "cg", "hybrid"])
def test_core_stops_by_the_documented_rule(method, stopping, patience):
    X, Y, Xv, Yv, C = plateau_problem()
    kw = dict(X_val=Xv, y_val=Yv, method=method, max_iter=150, metric="error", **SERIAL)
    full = nytro.nytro_path(X, Y, C, 1.0, **kw).validation_rmse
    run = nytro.nytro_path(X, Y, C, 1.0, stopping=stopping, n_iter_no_change=patience, **kw)
    selected, stopped = reference._select(full, stopping, None, 10, patience, metric="error")
    assert run.iterations_run == stopped
    assert run.n_iter == selected
    np.testing.assert_array_equal(run.validation_rmse, full[:stopped])
    # Sensible: past the starting plateau, and better than the constant classifier.
    if method == "gd":
        assert plateau_of(full) > 10  # the problem has the plateau this test is about
    assert stopped > plateau_of(full)
    assert full[selected - 1] < full[0]


def test_twin_stops_where_the_core_stops():
    X, Y, Xv, Yv, C = plateau_problem()
    kw = dict(X_val=Xv, y_val=Yv, method="gd", max_iter=150, metric="error", stopping="relative")
    core = nytro.nytro_path(X, Y, C, 1.0, **kw, **SERIAL)
    twin = reference.nytro_path(X, Y, C, 1.0, **kw)
    np.testing.assert_array_equal(core.validation_rmse, twin.validation_rmse)
    assert (core.n_iter, core.iterations_run) == (twin.n_iter, twin.iterations_run)


# ------------------------------------------------------------- on the paper's data
KIT = os.environ.get("NYTRO_DATA")


@pytest.mark.slow
@pytest.mark.skipif(not KIT or not Path(KIT).is_dir(),
                    reason="NYTRO_DATA is not set to the NYTRO data kit folder (see docs/user_guide/reproducing.md)")
@pytest.mark.parametrize("stopping", ["relative", "window"])
def test_adult_gd_stops_past_the_majority_plateau(stopping):
    """Adult (24% positive): gd's first iterates predict the negative class everywhere,
    a plateau (7 iterations here) longer than `window`; the classifier must select past
    it."""
    data = datasets.load_dataset("adult", KIT, download=False)
    rows = np.random.RandomState(0).permutation(len(data.y_train))[:6000]
    X, y = data.X_train[rows], data.y_train[rows]
    estimator = NytroClassifier(300, sigma=6.6, method="gd", stopping=stopping, window=5, max_iter=300,
                                random_state=0, n_threads=1).fit(X, y)
    path = estimator.validation_error_
    assert plateau_of(path) > estimator.window
    assert len(path) > plateau_of(path) + estimator.window - 1
    assert path[estimator.n_iter_ - 1] < path[0]
