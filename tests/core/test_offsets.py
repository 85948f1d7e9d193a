"""Data with a large common offset: the kernel is translation invariant, but distances
computed as ||x||^2 + ||z||^2 - 2 x.z cancel away everything below eps ||offset||^2.
The core and its NumPy twin share that formula, so the twin cannot catch it: the kernel is
checked here against distances formed as differences first, in long double, a formula
exact in this regime (the inputs themselves are the floats given)."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
from nytro import reference as ref

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def exact_kernel(X, Z, sigma):
    """exp(-||x - z||^2 / (2 sigma^2)) with the differences taken first, in long double."""
    Xl, Zl = np.asarray(X, np.longdouble), np.asarray(Z, np.longdouble)
    squared = ((Xl[:, None, :] - Zl[None, :, :]) ** 2).sum(-1)
    return np.exp(-squared / (2 * np.longdouble(sigma) ** 2))


def points(n, d, seed, dtype=np.float64):
    return np.random.RandomState(seed).uniform(-1, 1, (n, d)).astype(dtype)


# (dtype, offset): float64 1e8 lost the kernel entirely (errors up to 0.97), float32 1000
# (a year column) 0.25.
OFFSETS = [(np.float64, 0.0), (np.float64, 1e4), (np.float64, 1e8), (np.float64, -3e12),
           (np.float32, 1000.0), (np.float32, 3e5)]


def kernel_tolerance(dtype, X, Z, sigma):
    """A few ulps of the kernel: the rounding of squared distances formed from the
    norms of the shifted, scaled data, whose size sets the error of the exponent (the
    kernel's derivative in it is at most 1)."""
    eps = float(np.finfo(dtype).eps)
    shift = np.asarray(Z, np.float64).mean(0)
    size = max(np.abs(np.asarray(X, np.float64) - shift).max(), np.abs(np.asarray(Z, np.float64) - shift).max())
    d = X.shape[1]
    return 16 * eps * (1 + d * (size / sigma) ** 2)


@pytest.mark.parametrize("dtype, offset", OFFSETS)
@pytest.mark.parametrize("kernel", [nytro.gaussian_kernel, ref.gaussian_kernel], ids=["core", "reference"])
def test_kernel_is_exact_to_a_few_ulps_whatever_the_offset(kernel, dtype, offset):
    X = (points(300, 5, 0) + offset).astype(dtype)
    Z = (points(70, 5, 1) + offset).astype(dtype)
    sigma = 0.7
    K = kernel(X, Z, sigma)
    assert K.dtype == dtype
    error = np.abs(K.astype(np.longdouble) - exact_kernel(X, Z, sigma)).max()
    assert error <= kernel_tolerance(dtype, X, Z, sigma), (float(error), offset)


@pytest.mark.parametrize("dtype, offset", [(np.float64, 1e8), (np.float32, 1000.0)])
def test_every_kernel_evaluation_sees_the_offset_free_kernel(dtype, offset):
    """kernel_predict (streamed blocks against packed centres) and gaussian_kernel with
    out= give the exact kernel too."""
    X = (points(500, 4, 2) + offset).astype(dtype)
    C = (points(40, 4, 3) + offset).astype(dtype)
    coef = points(40, 2, 4, dtype)
    sigma = 0.5
    K = exact_kernel(X, C, sigma)
    tol = kernel_tolerance(dtype, X, C, sigma)
    out = np.empty((500, 40), dtype)
    nytro.gaussian_kernel(X, C, sigma, out=out)
    assert np.abs(out - K).max() <= tol
    predicted = nytro.kernel_predict(X, C, coef, sigma)
    assert np.abs(predicted - (K @ coef.astype(np.longdouble))).max() <= tol * np.abs(coef).sum(0).max() + \
        4 * float(np.finfo(dtype).eps) * 40


def fits_agree(a, b, rtol):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
@pytest.mark.parametrize("method", ["gd", "hybrid"])
def test_nytro_path_is_translation_invariant(method, solver):
    """K_mm, K_nm (stored, or in the Gram solver's blocks), the hold-out kernel: every
    kernel of the fit is the offset-free one, so the path on X + 1e8 is the path on X."""
    X, Xv = points(300, 3, 5), points(80, 3, 6)
    y, yv = np.sin(3 * X[:, 0]) + X[:, 1], np.sin(3 * Xv[:, 0]) + Xv[:, 1]
    C = X[:30]
    args = dict(method=method, solver=solver, max_iter=60, n_iter_no_change=None, iterates="stepwise")
    plain = nytro.nytro_path(X, y, C, 0.5, X_val=Xv, y_val=yv, **args)
    moved = nytro.nytro_path(X + 1e8, y, C + 1e8, 0.5, X_val=Xv + 1e8, y_val=yv, **args)
    assert moved.n_iter == plain.n_iter
    fits_agree(moved.validation_rmse, plain.validation_rmse, 1e-6)
    fits_agree(nytro.kernel_predict(Xv + 1e8, C + 1e8, moved.coef, 0.5),
               nytro.kernel_predict(Xv, C, plain.coef, 0.5), 1e-6)


@pytest.mark.parametrize("cls", [nytro.NytroRegressor, nytro.NystromKRLSRegressor, nytro.KRLSRegressor,
                                 nytro.LandweberRegressor, nytro.KOLSRegressor])
def test_estimators_are_translation_invariant(cls):
    X = points(200, 3, 7)
    y = np.sin(3 * X[:, 0]) * X[:, 1]
    params = {k: v for k, v in dict(n_centers=40, sigma=0.5, random_state=0, max_iter=50,
                                    step_size="auto").items() if k in cls().get_params()}
    plain, moved = cls(**params).fit(X, y), cls(**params).fit(X + 1e8, y)
    X_test = points(50, 3, 8)
    tol = 1e-4 if cls is nytro.KOLSRegressor else 1e-6  # pinv(K): conditioning amplifies the kernel's rounding
    fits_agree(moved.predict(X_test + 1e8), plain.predict(X_test), tol)


def test_float32_fit_with_a_year_offset_matches_the_offset_free_fit():
    """float32 data around 2000 (a year column): the kernel lost 0.25 and the test RMSE
    was 3.4 times the offset-free one."""
    rng = np.random.RandomState(9)
    X = rng.uniform(0, 1, (2000, 3)).astype(np.float32)
    y = (np.sin(4 * X[:, 0]) + X[:, 1] * X[:, 2]).astype(np.float32)
    X_test = rng.uniform(0, 1, (500, 3)).astype(np.float32)
    y_test = np.sin(4 * X_test[:, 0]) + X_test[:, 1] * X_test[:, 2]
    params = dict(n_centers=100, sigma=0.3, random_state=0)
    plain = nytro.NytroRegressor(**params).fit(X, y)
    moved = nytro.NytroRegressor(**params).fit(X + np.float32(2000), y)

    def rmse(model, shift):
        return float(np.sqrt(np.mean((model.predict(X_test + np.float32(shift)) - y_test) ** 2)))

    assert rmse(moved, 2000) <= 1.05 * rmse(plain, 0) + 1e-4, (rmse(moved, 2000), rmse(plain, 0))
