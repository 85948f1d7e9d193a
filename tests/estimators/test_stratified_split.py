"""The classifiers' hold-out split is stratified; the regressors' is not (unchanged).

With rare classes a uniform split can leave a class out of the hold-out set (the
selection then never sees it). The classifiers hold out each class's share of the rows,
at least one row of every class on each side; the regressors keep the permutation they
always drew (the experiments rely on drawing exactly protocol.holdout_split's rows).
"""
from __future__ import annotations

import numpy as np
import pytest

from nytro import NystromKRLSClassifier, NytroClassifier, NytroRegressor
from nytro.estimators.classifiers import stratified_counts

CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)
SIZES = {"a": 150, "b": 12, "c": 5, "d": 2}


def imbalanced(seed=0):
    """Four classes of 150, 12, 5 and 2 rows, shuffled; string labels."""
    rng = np.random.RandomState(seed)
    y = np.repeat(list(SIZES), list(SIZES.values()))[rng.permutation(sum(SIZES.values()))]
    return rng.randn(len(y), 3), y


def holdout_labels(estimator, X, y, seed):
    """The labels of the hold-out rows the estimator draws with RandomState(seed)."""
    X, Y = estimator._validated(X, y)[:2]
    _, _, _, Y_val = estimator._split(X, Y, np.random.RandomState(seed))
    return estimator.classes_[np.argmax(Y_val, axis=1)]


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_every_class_is_held_out_in_proportion(cls):
    X, y = imbalanced()
    n, n_val = len(y), int(round(0.2 * len(y)))
    estimator = cls(n_centers=10, validation_fraction=0.2)
    for seed in range(20):
        held = holdout_labels(estimator, X, y, seed)
        assert len(held) == n_val
        for label, size in SIZES.items():
            count = int(np.sum(held == label))
            # at least one row on each side, else the proportional share rounded
            assert 1 <= count <= size - 1, (seed, label)
            assert abs(count - n_val * size / n) < 1 or count == 1, (seed, label)
    # Seeded: the same seed draws the same rows, different seeds differ.
    again = holdout_labels(estimator, X, y, 3)
    assert np.array_equal(again, holdout_labels(estimator, X, y, 3))
    X_a, Y_a = estimator._validated(X, y)[:2]
    rows = [estimator._split(X_a, Y_a, np.random.RandomState(s))[2] for s in (0, 1)]
    assert not np.array_equal(rows[0], rows[1])


def test_counts_are_the_largest_remainders():
    assert stratified_counts([150, 12, 5, 2], 34).tolist() == [30, 2, 1, 1]
    assert stratified_counts([50, 50], 20).tolist() == [10, 10]
    assert stratified_counts([2, 2, 2], 3).tolist() == [1, 1, 1]
    # shares 7.5 and 2.5: the remainders tie, the first class gets the row
    assert stratified_counts([30, 10], 10).tolist() == [8, 2]
    # shares 0.2 ... : every class raised to 1, the largest class pays for it
    assert stratified_counts([90, 5, 5], 6).tolist() == [4, 1, 1]


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_a_fitted_classifier_is_stratified(cls):
    """Through fit: the hold-out error path is counted in steps of one hold-out row."""
    X, y = imbalanced(1)
    estimator = cls(n_centers=20, sigma=2.0, random_state=0).fit(X, y)
    assert set(estimator.predict(X)) <= set(SIZES)
    assert estimator.validation_error_ is not None


@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_too_small_a_class_is_refused(cls):
    X, y = imbalanced()
    y = y.copy()
    y[np.flatnonzero(y == "d")[0]] = "a"  # class "d" keeps one row
    with pytest.raises(ValueError, match=r"validation_fraction=0\.2.*class 'd'|class 'd'.*validation_fraction"):
        cls(n_centers=10).fit(X, y)
    # without a hold-out split it fits
    cls(n_centers=10, validation_fraction=None, **({"max_iter": 5} if cls is NytroClassifier else
                                                   {"lambdas": [1e-3]})).fit(X, y)
    # fewer hold-out rows than classes
    X, y = imbalanced()
    with pytest.raises(ValueError, match="validation_fraction=0.01 holds out 2 of n_samples=169"):
        cls(n_centers=10, validation_fraction=0.01).fit(X, y)


def test_regressors_draw_the_same_rows_as_before():
    """The regressors' hold-out rows: the first n_val of one permutation (unchanged)."""
    X, y = imbalanced()
    target = np.arange(len(y), dtype=float)
    estimator = NytroRegressor(n_centers=10, validation_fraction=0.2, fit_intercept=False)  # Y as given
    X_c, Y_c = estimator._validated(X, target)[:2]
    for seed in range(3):
        _, Y_train, _, Y_val = estimator._split(X_c, Y_c, np.random.RandomState(seed))
        order = np.random.RandomState(seed).permutation(len(y))
        np.testing.assert_array_equal(Y_val[:, 0], np.sort(order[:34]))
        np.testing.assert_array_equal(Y_train[:, 0], np.sort(order[34:]))
