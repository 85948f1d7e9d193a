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
@pytest.mark.parametrize("d, max_iter", [(5, 6), (5, 9), (5, 40), (20, 21), (20, 80)])
def test_hybrid_without_holdout_is_the_min_norm_solution(implementation, d, max_iter):
    # d + 1 Lanczos steps span the invariant space (d range directions and y's part in
    # K's null space). Before the fix the last step's Ritz value of rounding was solved
    # through with the shift 1e-15 n: coefficients of 1e13, predictions off by O(1). At
    # d = 20 the remainder after step 21 is not at rounding (the null Ritz vector lies
    # mostly in the earlier basis vectors): the space is found invariant by T_21's Ritz
    # value of rounding.
    sigma = 1.0
    points, groups, X, y = duplicated_problem(d=d)
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


def _tolerance(n, kappa):
    # Rounding of a problem of condition kappa on K's range (n-term products).
    return 64 * np.finfo(np.float64).eps * kappa * (1 + n)


@pytest.mark.parametrize("implementation", ["core", "reference"])
@pytest.mark.parametrize("d, sigma", [(5, 1.0), (20, 1.0)])
def test_cg_past_an_invariant_space_is_the_min_norm_solution(implementation, d, sigma):
    # CG's k-th iterate is V_k T_k^-1 |y| e_1 while T_k is nonsingular; once the Krylov
    # space is invariant (d + 1 steps: d range directions and y's part in K's null space)
    # T_k is singular, and the iterate must be K^+ y (group means as predictions) and stay
    # there. CG's recursion instead divided rounding noise by a curvature of rounding
    # (coefficients of 1e24 and more, predictions off by 1e13) or stopped short of it.
    points, groups, X, y = duplicated_problem(d=d)
    predictions, coefficients, top, kappa = exact_min_norm(points, groups, y, sigma)
    fit = (nytro if implementation == "core" else ref).landweber_path
    kwargs = SERIAL if implementation == "core" else {}
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * sigma ** 2))
    tol = _tolerance(len(X), kappa)
    for max_iter in (d + 1, d + 3, 4 * d):
        got = fit(X, y, sigma, method="cg", max_iter=max_iter, **kwargs)
        assert got.iterations_run == max_iter
        assert np.abs(K @ got.coef - predictions).max() <= tol * np.abs(y).max(), max_iter
        assert np.abs(got.coef - coefficients).max() <= tol * kappa / top * np.abs(y).max() * np.sqrt(len(X))


def test_cg_before_an_invariant_space_is_exact_cg():
    # Before the space is invariant the iterates are CG's (Galerkin on the Krylov space):
    # checked against the Krylov solution computed directly, from the monomial basis
    # y, Ky, ... orthonormalised by QR (a different algorithm from Lanczos), in float64.
    sigma = 1.0
    points, groups, X, y = duplicated_problem(d=5)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * sigma ** 2))
    for k in range(1, 6):
        B = np.column_stack([np.linalg.matrix_power(K, i) @ y for i in range(k)])
        Q, _ = np.linalg.qr(B)
        T = Q.T @ K @ Q
        exact = Q @ np.linalg.solve(T, Q.T @ y)
        got = nytro.landweber_path(X, y, sigma, method="cg", max_iter=k, **SERIAL).coef
        twin = ref.landweber_path(X, y, sigma, method="cg", max_iter=k).coef
        # The direct computation loses about cond(B) eps to the QR of the powers, and
        # any solution of T z = Q^T y cond(T) eps more.
        tol = 64 * np.finfo(np.float64).eps * np.linalg.cond(B) * np.linalg.cond(T) * np.abs(exact).max()
        assert np.abs(got - exact).max() <= tol, k
        assert np.abs(twin - exact).max() <= tol, k


@pytest.mark.parametrize("implementation", ["core", "reference"])
def test_cg_with_holdout_ends_at_the_min_norm_solution(implementation):
    # With a hold-out set the path ends where the space is invariant (later t repeat it),
    # and its last RMSE is the min-norm model's own hold-out error.
    sigma, d = 1.0, 5
    points, groups, X, y = duplicated_problem(d=d)
    predictions, coefficients, top, kappa = exact_min_norm(points, groups, y, sigma)
    X_val, y_val = points[groups[:40]] + 0.01, y[:40] + 0.5
    fit = (nytro if implementation == "core" else ref).landweber_path
    kwargs = SERIAL if implementation == "core" else {}
    got = fit(X, y, sigma, X_val=X_val, y_val=y_val, method="cg", max_iter=50, **kwargs)
    assert got.iterations_run == d + 1
    K_val = np.exp(-((X_val[:, None, :] - X[None, :, :]) ** 2).sum(axis=2) / (2 * sigma ** 2))
    exact_rmse = np.sqrt(np.mean((K_val @ coefficients - y_val) ** 2))
    tol = _tolerance(len(X), kappa) * kappa / top * np.abs(y).max() * np.sqrt(len(X)) * np.abs(K_val).sum(1).max()
    assert abs(got.validation_rmse[-1] - exact_rmse) <= tol + 1e-12


def test_cg_estimator_without_holdout_predicts_the_group_means():
    # The estimator goes through the same path: LandweberRegressor(method="cg") without a
    # hold-out set on duplicate rows predicts the least-squares fit, the group means.
    sigma, d = 1.0, 5
    points, groups, X, y = duplicated_problem(d=d)
    predictions, _, _, kappa = exact_min_norm(points, groups, y, sigma)
    model = nytro.LandweberRegressor(sigma=sigma, method="cg", max_iter=40, validation_fraction=None,
                                     n_threads=1).fit(X, y)
    assert np.abs(model.predict(X) - predictions).max() <= _tolerance(len(X), kappa) * np.abs(y).max()


@pytest.mark.parametrize("implementation", ["core", "reference"])
@pytest.mark.parametrize("method", ["cg", "hybrid"])
@pytest.mark.parametrize("n, seed", [(30, 4), (16, 1), (16, 2), (16, 3)])
def test_targets_in_the_null_space_give_the_zero_model(implementation, method, n, seed):
    # Constant features (every row the same point: K = 1 1^T) and centred targets, what
    # fit_intercept makes of them: y lies in K's null space to rounding, so every product
    # with K is rounding, and the minimum-norm least-squares solution is (1^T y) / n^2 1,
    # rounding too. Where the products rounded to exactly 0 (T_1 = 0), the invariant
    # space's solve kept its Ritz value of 0 and divided by it: cg raised "the
    # coefficients are not finite", hybrid returned coefficients of 1e14 silently.
    rng = np.random.default_rng(seed)
    eps = np.finfo(np.float64).eps
    X = np.full((n, 2), 0.7)
    y = rng.standard_normal((n, 2))[:, 0]
    centred = y - y.mean()
    fit = (nytro if implementation == "core" else ref).landweber_path
    got = fit(X, centred, 1.0, method=method, max_iter=8, **(SERIAL if implementation == "core" else {}))
    # |1^T centred| <= n eps |y| (the rounding of the mean), so the exact coefficients are
    # within eps |y| / n; an n-term sum of them, the predictions, within eps |y|.
    assert np.abs(got.coef).max() <= 4 * eps * np.abs(y).max()
    if implementation == "core":
        model = nytro.LandweberRegressor(sigma=1.0, method=method, max_iter=8, validation_fraction=None,
                                         n_threads=1).fit(X, y)
        assert np.abs(model.predict(X) - y.mean()).max() <= 4 * n * eps * np.abs(y).max()
