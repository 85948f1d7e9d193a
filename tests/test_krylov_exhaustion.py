"""Krylov methods on a singular kernel (duplicate rows) whose right-hand side has a part
outside K's range: once the Krylov space is invariant, the solution must be the
minimum-norm least-squares one on it, not a direction taken from rounding noise.

The exact answer is computed directly from the distinct points: with K = E K_d E^T (E the
n x d indicator of which distinct point each row repeats, K_d the d x d kernel of the
distinct points, nonsingular), the least-squares predictions are the group means of y, and
the minimum-norm coefficients (in range(K) = range(E)) are E N^-1 K_d^-1 means, N = E^T E."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import SERIAL


def duplicated_problem(n=200, d=5, seed=1):
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((d, 3))
    groups = rng.integers(0, d, n)
    groups[:d] = np.arange(d)  # every point present
    return points, groups, points[groups], rng.standard_normal(n)


def exact_min_norm(points, groups, y, sigma):
    """(predictions, coefficients) of K^+ y from the distinct points alone."""
    d = len(points)
    diff = points[:, None, :] - points[None, :, :]
    K_d = np.exp(-np.einsum("ijk,ijk->ij", diff, diff) / (2 * sigma ** 2))
    counts = np.bincount(groups, minlength=d).astype(np.float64)
    means = np.bincount(groups, weights=y, minlength=d) / counts
    u = np.linalg.solve(K_d, means) / counts
    # K's eigenvalues on its range are those of N^1/2 K_d N^1/2.
    root = np.sqrt(counts)
    w = np.linalg.eigvalsh(root[:, None] * K_d * root[None, :])
    return means[groups], u[groups], float(w[-1]), float(w[-1] / w[0])


@pytest.mark.parametrize("implementation", ["core", "reference"])
@pytest.mark.parametrize("max_iter", [6, 9, 40])
def test_hybrid_without_holdout_is_the_min_norm_solution(implementation, max_iter):
    # Six Lanczos steps span the invariant space (five range directions and y's part in
    # K's null space). Before the fix the sixth step's Ritz value of rounding was solved
    # through with the shift 1e-15 n: coefficients of 1e13, predictions off by O(1).
    sigma = 1.0
    points, groups, X, y = duplicated_problem()
    predictions, coefficients, top, kappa = exact_min_norm(points, groups, y, sigma)
    fit = (nytro if implementation == "core" else ref).landweber_path
    kwargs = SERIAL if implementation == "core" else {}
    got = fit(X, y, sigma, method="hybrid", max_iter=max_iter, **kwargs)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * sigma ** 2))
    n = len(X)
    # Rounding of a problem of condition kappa on K's range (n-term products), plus the
    # grid's shift 1e-15 n against K's smallest nonzero eigenvalue, top / kappa.
    tol = 64 * np.finfo(np.float64).eps * kappa * (1 + n) + 1e-15 * n * kappa / top
    assert np.abs(K @ got.coef - predictions).max() <= tol * np.abs(y).max()
    # The coefficients: K^+ of the predictions, so kappa / top times their error.
    assert np.abs(got.coef - coefficients).max() <= tol * kappa / top * np.abs(y).max() * np.sqrt(n)
