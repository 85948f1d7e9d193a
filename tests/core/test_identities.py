"""Closed forms the solvers must reproduce, independently of nytro.reference."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge

import nytro
from conftest import SERIAL, assert_close, make_noisy_problem, make_problem

F64 = np.float64
nytro_path, landweber_path, nkrls_path, krls_path, kols = (
    partial(f, **SERIAL) for f in (nytro.nytro_path, nytro.landweber_path, nytro.nkrls_path,
                                   nytro.krls_path, nytro.kols))


def nystrom_design(p, factor="pivoted"):
    """(A, R) with A = K_nm R, R from nytro.nystrom_factor as nytro_path computes it."""
    R = nytro.nystrom_factor(nytro.gaussian_kernel(p.centers, p.centers, p.sigma), method=factor)
    return nytro.gaussian_kernel(p.X, p.centers, p.sigma) @ R, R


def landweber_filter(s, step, t):
    """(1 - (1 - step s)^t) / s, and its limit step t where s is at rounding level (the
    closed form would divide cancellation error by s there)."""
    tiny = s <= 1e-10 * s.max()
    safe = np.where(tiny, 1.0, s)
    return np.where(tiny, step * t, (1 - (1 - step * safe) ** t) / safe)


def well_conditioned_full_kernel_problem(n_outputs=None):
    """n = 60 rows with a narrow kernel (sigma = 0.5 in 4 dimensions): cond(K) ~ 10, so
    the full n x n kernel can be inverted without regularisation."""
    return make_problem(n=60, sigma=0.5, n_outputs=n_outputs)


# ---------------------------------------------------------- (a) spectral filter
@pytest.mark.parametrize("solver", ["direct", "gram"])
@pytest.mark.parametrize("factor", ["pivoted", "qr", "cholesky"])
@pytest.mark.parametrize("step_size", ["auto", 4e-3])
@pytest.mark.parametrize("t", [1, 2, 7, 60])
def test_nytro_is_the_spectral_filter(solver, factor, step_size, t):
    # beta_t = V diag((1 - (1 - g s)^t) / s) V^T A^T y with A^T A = V diag(s) V^T.
    p = make_problem(n_outputs=2)
    A, R = nystrom_design(p, factor)
    s, V = np.linalg.eigh(A.T @ A)
    result = nytro_path(p.X, p.y, p.centers, p.sigma, max_iter=t, step_size=step_size,
                              factor=factor, solver=solver)
    g = result.step_size
    beta = V @ (landweber_filter(s, g, t)[:, None] * (V.T @ (A.T @ p.y)))
    assert result.n_iter == result.iterations_run == t
    assert_close(result.coef, R @ beta, F64)


# ------------------------------------------------------ (b) m = n is Landweber
@pytest.mark.parametrize("factor", ["pivoted", "cholesky"])
@pytest.mark.parametrize("solver", ["direct", "gram"])
@pytest.mark.parametrize("t", [1, 5, 40])
def test_nytro_with_every_row_as_centre_is_landweber(factor, solver, t):
    # With R R^T = K^-1, alpha_t = R beta_t = sum_j g (I - g K)^j y: Landweber's iterate.
    p = well_conditioned_full_kernel_problem(n_outputs=2)
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    step = 0.9 / np.linalg.eigvalsh(K).max()
    nytro_result = nytro_path(p.X, p.y, p.X, p.sigma, max_iter=t, step_size=step, factor=factor,
                                    solver=solver)
    landweber = landweber_path(p.X, p.y, p.sigma, max_iter=t, step_size=step)
    assert nytro_result.rank == 60
    assert_close(nytro_result.coef, landweber.coef, F64)


def test_landweber_is_the_spectral_filter():
    p = well_conditioned_full_kernel_problem()
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    s, V = np.linalg.eigh(K)
    result = landweber_path(p.X, p.y, p.sigma, max_iter=25, step_size="auto")
    # alpha_t = V diag(g (1 - (1 - g s)^t) / (g s)) V^T y
    expected = V @ (landweber_filter(s, result.step_size, 25) * (V.T @ p.y))
    assert_close(result.coef, expected, F64)


# ------------------------------------------------- (c) NKRLS is Nystroem + Ridge
@pytest.mark.parametrize("factor", ["pivoted", "qr", "cholesky"])
@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("lam", [1e-6, 1e-3])
def test_nkrls_is_sklearn_nystroem_plus_ridge(factor, solver, lam):
    p = make_noisy_problem()
    n = p.X.shape[0]
    result = nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=[lam], factor=factor, solver=solver)
    # Fitted on the centres themselves with n_components = m, Nystroem keeps every centre
    # (in a permuted order): its features are k(x, centres) K_mm^{-1/2}.
    features = Nystroem(kernel="rbf", gamma=1 / (2 * p.sigma**2), n_components=len(p.centers),
                        random_state=0).fit(p.centers)
    ridge = Ridge(alpha=lam * n, fit_intercept=False).fit(features.transform(p.X), p.y)
    X_new = make_problem(n=80, seed=7).X
    predicted = nytro.kernel_predict(X_new, p.centers, result.coef, p.sigma)
    assert_close(predicted, ridge.predict(features.transform(X_new)), F64)


# --------------------------------------------------- (d) KRLS and KOLS closed forms
@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("lam", [1e-5, 1e-2])
@pytest.mark.parametrize("n_outputs", [None, 2])
def test_krls_is_a_linear_solve(solver, lam, n_outputs):
    p = make_problem(n=150, n_outputs=n_outputs)
    n = p.X.shape[0]
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    result = krls_path(p.X, p.y, p.sigma, lambdas=[lam], solver=solver)
    assert_close(result.coef, np.linalg.solve(K + lam * n * np.eye(n), p.y), F64)


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_kols_is_the_pseudo_inverse(n_outputs):
    p = well_conditioned_full_kernel_problem(n_outputs)
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    assert np.linalg.cond(K) < 100
    assert_close(kols(p.X, p.y, p.sigma), np.linalg.pinv(K) @ p.y, F64)


# ----------------------------------------------------------------- (e) step sizes
@pytest.mark.parametrize("solver", ["direct", "gram"])
@pytest.mark.parametrize("factor", ["pivoted", "qr", "cholesky"])
def test_auto_step_is_the_inverse_largest_eigenvalue(solver, factor):
    p = make_problem()
    A, _ = nystrom_design(p, factor)
    result = nytro_path(p.X, p.y, p.centers, p.sigma, max_iter=1, factor=factor, solver=solver)
    assert result.step_size == pytest.approx(1 / np.linalg.eigvalsh(A.T @ A).max(), rel=1e-10)


def test_landweber_auto_step_is_the_inverse_largest_eigenvalue():
    p = make_problem(n=150)
    K = nytro.gaussian_kernel(p.X, p.X, p.sigma)
    result = landweber_path(p.X, p.y, p.sigma, max_iter=1, step_size="auto")
    assert result.step_size == pytest.approx(1 / np.linalg.eigvalsh(K).max(), rel=1e-10)


@pytest.mark.parametrize("path", ["nytro", "landweber"])
def test_paper_step_is_one_over_n(path):
    # gamma / n with gamma = 1 / max_i k(x_i, x_i) = 1 for the Gaussian kernel.
    p = make_problem(n=150)
    if path == "nytro":
        result = nytro_path(p.X, p.y, p.centers, p.sigma, max_iter=1, step_size="paper")
    else:
        result = landweber_path(p.X, p.y, p.sigma, max_iter=1, step_size="paper")
    assert result.step_size == pytest.approx(1 / 150, rel=1e-12)
