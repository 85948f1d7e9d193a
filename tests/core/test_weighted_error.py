"""The hold-out error rate (metric="error") with hold-out row weights, in every path.

The weighted error rate is sum_v w_v [row v misclassified] / sum_v w_v, as the weighted
RMSE weighs squared errors: a row of weight 0 counts for nothing, and integer weights
count what repeating each hold-out row w_v times counts. Checked three ways for gd
(stepwise and Lanczos iterates), nu, cg, hybrid and NKRLS: the core against its NumPy twin
(nytro.reference), against the same path on the hold-out rows repeated w_v times (the
defining property: the training side is the same, so only the count can differ), and
against a direct count of the errors of the model at each t (refitted without a hold-out
set).
"""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as reference
from conftest import SERIAL
from nytro.estimators.classifiers import encode_labels

SIGMA = 0.5
LAMBDAS = np.logspace(-9, -1, 9)
PATHS = [
    ("gd", {"iterates": "stepwise", "max_iter": 30}),
    ("gd", {"iterates": "lanczos", "solver": "gram", "max_iter": 30}),
    ("nu", {"max_iter": 25}),
    ("cg", {"max_iter": 8}),
    ("hybrid", {"max_iter": 8}),
]
IDS = ["gd-stepwise", "gd-lanczos", "nu", "cg", "hybrid"]


def sectors(n, n_classes, seed):
    """Points of [-1, 1]^2 labelled by the sector of their angle, 15% of the labels
    redrawn at random (so that every model misclassifies some hold-out rows)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, (n, 2))
    angle = np.arctan2(X[:, 1], X[:, 0]) + np.pi
    y = np.minimum((angle / (2 * np.pi) * n_classes).astype(int), n_classes - 1)
    noisy = rng.rand(n) < 0.15
    y[noisy] = rng.randint(0, n_classes, noisy.sum())
    return X, encode_labels(y)[1]


def problem(n_classes, seed=0):
    """(X, Y, X_val, Y_val, centres, integer hold-out weights in 0..3 with zeros)."""
    X, Y = sectors(260, n_classes, seed)
    rng = np.random.RandomState(seed + 1)
    w = rng.randint(0, 4, 60).astype(float)
    w[:6] = 0.0
    return X[60:], Y[60:], X[:60], Y[:60], X[60:][rng.permutation(200)[:25]], w


def weighted_rate(scores, Y, w):
    """Direct: sum of the weights of the misclassified rows over the sum of the weights."""
    cls = (lambda v: v[:, 0] > 0) if Y.shape[1] == 1 else (lambda v: np.argmax(v, axis=1))
    return float(np.sum(w[cls(scores) != cls(Y)]) / np.sum(w))


def close_rates(got, want, w, what):
    """Rates of the same predictions up to rounding: a row on a class boundary may flip
    (by at most the largest weight), on few entries of a path; the others agree up to
    the rounding of the sums of weights."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    assert np.all(np.abs(got - want) <= 1.01 * w.max() / w.sum()), what
    assert np.mean(np.isclose(got, want, rtol=1e-12, atol=0)) >= 0.9, what


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method, options", PATHS, ids=IDS)
def test_weighted_error_path(method, options, n_classes):
    X, Y, Xv, Yv, C, w = problem(n_classes)
    kw = dict(options, X_val=Xv, y_val=Yv, method=method, metric="error")
    core = nytro.nytro_path(X, Y, C, SIGMA, sample_weight_val=w, **kw, **SERIAL)
    twin = reference.nytro_path(X, Y, C, SIGMA, sample_weight_val=w, **kw)
    close_rates(core.validation_rmse, twin.validation_rmse, w, "core vs twin")
    # Each hold-out row repeated w_v times, unweighted: the same rates (the zero rows gone).
    rows = np.repeat(np.arange(len(w)), w.astype(int))
    repeated = nytro.nytro_path(X, Y, C, SIGMA, **dict(kw, X_val=Xv[rows], y_val=Yv[rows]), **SERIAL)
    close_rates(core.validation_rmse, repeated.validation_rmse, w, "weights vs repeated rows")
    # Non-zero, non-integer weights: scaling them changes nothing.
    scaled = nytro.nytro_path(X, Y, C, SIGMA, sample_weight_val=0.37 * w, **kw, **SERIAL)
    np.testing.assert_allclose(scaled.validation_rmse, core.validation_rmse, rtol=1e-12, atol=0)
    # The weights matter here (the test can fail): the unweighted path differs.
    plain = nytro.nytro_path(X, Y, C, SIGMA, **kw, **SERIAL)
    assert np.max(np.abs(plain.validation_rmse - core.validation_rmse)) > 0.5 / len(w)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method, options", PATHS[:4], ids=IDS[:4])
def test_weighted_error_is_the_error_of_each_iterate(method, options, n_classes):
    """Direct: the model after t iterations (refitted without a hold-out set) predicts the
    hold-out rows, and the weights of its misclassified rows are summed."""
    X, Y, Xv, Yv, C, w = problem(n_classes, seed=3)
    T = options["max_iter"]
    path = nytro.nytro_path(X, Y, C, SIGMA, X_val=Xv, y_val=Yv, method=method, metric="error",
                            sample_weight_val=w, **options, **SERIAL).validation_rmse
    stepwise = {k: v for k, v in options.items() if k != "max_iter"}
    direct = [weighted_rate(nytro.kernel_predict(Xv, C, nytro.nytro_path(
        X, Y, C, SIGMA, method=method, max_iter=t, **stepwise, **SERIAL).coef, SIGMA), Yv, w)
        for t in range(1, min(T, len(path)) + 1)]
    close_rates(path[:len(direct)], direct, w, "path vs direct")


@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_hybrid_error_is_the_least_over_lambda(n_classes):
    """Direct, for hybrid at a few k: every lambda of the grid refitted (hybrid_lambda),
    its weighted error counted; the path holds the least of them."""
    X, Y, Xv, Yv, C, w = problem(n_classes, seed=5)
    path = nytro.nytro_path(X, Y, C, SIGMA, X_val=Xv, y_val=Yv, method="hybrid", max_iter=6, metric="error",
                            sample_weight_val=w, **SERIAL).validation_rmse
    lambdas = [10.0 ** ((15.0 * i) / 99.0 - 15.0) for i in range(0, 100, 3)]
    for k in (2, 5):
        least = min(weighted_rate(nytro.kernel_predict(Xv, C, nytro.nytro_path(
            X, Y, C, SIGMA, method="hybrid", max_iter=k, hybrid_lambda=lam, **SERIAL).coef, SIGMA), Yv, w)
            for lam in lambdas)
        # a third of the grid: its least is no better than the whole grid's
        assert path[k - 1] <= least + 1.01 * w.max() / w.sum()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_tikhonov_error(n_classes):
    X, Y, Xv, Yv, C, w = problem(n_classes, seed=7)
    kw = dict(lambdas=LAMBDAS, X_val=Xv, y_val=Yv, metric="error")
    core = nytro.nkrls_path(X, Y, C, SIGMA, sample_weight_val=w, **kw, **SERIAL)
    twin = reference.nkrls_path(X, Y, C, SIGMA, sample_weight_val=w, **kw)
    close_rates(core.validation_rmse, twin.validation_rmse, w, "core vs twin")
    direct = [weighted_rate(nytro.kernel_predict(Xv, C, nytro.nkrls_path(
        X, Y, C, SIGMA, lambdas=[lam], **SERIAL).coef, SIGMA), Yv, w) for lam in LAMBDAS]
    close_rates(core.validation_rmse, direct, w, "path vs direct")
