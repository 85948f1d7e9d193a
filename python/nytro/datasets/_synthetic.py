"""A synthetic stand-in for YearPredictionMSD (the real file is not in the data kit)."""
from __future__ import annotations

import numpy as np

from ._loaders import Dataset, minmax_scale


def make_yearprediction_like(n_train: int = 463715, n_test: int = 51630, d: int = 90,
                             random_state=0) -> Dataset:
    """SYNTHETIC data with the shape of YearPredictionMSD; not the real dataset.

    Features: correlated Gaussian columns, min/max scaled per column to [0, 1] over train
    and test together (the real data's preprocessing), so the bulk of each column is
    concentrated as in the scaled real features and the Gaussian kernel with sigma = 1 is
    informative. Target: a smooth nonlinear function of three projections of the features,
    in [0, 1] with mean about 0.85 (as the scaled year), plus Gaussian noise of standard
    deviation 0.1, clipped to [0, 1]. The first n_train rows are train, the rest test.

    The full size (515345 x 90, 371 MB of float64) takes a few seconds. The same
    random_state (int or np.random.Generator seed) gives the same arrays.
    """
    n_train, n_test, d = int(n_train), int(n_test), int(d)
    if n_train < 1 or n_test < 0 or d < 1:
        raise ValueError("need n_train >= 1, n_test >= 0 and d >= 1")
    rng = np.random.default_rng(random_state)
    n = n_train + n_test
    X = rng.standard_normal((n, d))
    # A few shared factors make the columns correlated, as audio features are.
    k = min(5, d)
    mix = rng.standard_normal((k, d)) * 0.5
    factors = rng.standard_normal((n, k))
    for start in range(0, n, 1 << 16):  # in blocks: no second n x d temporary
        X[start:start + (1 << 16)] += factors[start:start + (1 << 16)] @ mix
    W = rng.standard_normal((d, 3))
    Z = X @ W
    Z /= Z.std(axis=0)
    clean = 1.9 + 0.9 * np.sin(1.3 * Z[:, 0]) + 0.6 * np.tanh(Z[:, 1]) + 0.3 * Z[:, 0] * Z[:, 2]
    y = 1.0 / (1.0 + np.exp(-clean))  # smooth, in (0, 1)
    y += 0.1 * rng.standard_normal(n)
    np.clip(y, 0.0, 1.0, out=y)
    minmax_scale([X], 0.0, 1.0)
    return Dataset(X[:n_train], y[:n_train], X[n_train:], y[n_train:],
                   "yearprediction_like_synthetic",
                   f"SYNTHETIC stand-in for YearPredictionMSD (not real data): {n_train}/{n_test}"
                   f" rows, {d} features in [0, 1], smooth nonlinear target in [0, 1] plus "
                   f"noise (sd 0.1), random_state={random_state!r}")
