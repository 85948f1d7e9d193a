"""The linear kernel at extreme feature scales: its values scale as |x|^2, so whatever is
compared with the kernel's spectrum (the lambda grids, the step) must scale with it. With m
>= d centres spanning R^d, Nystrom KRLS at lambda is exactly ridge regression on X,
beta = C^T alpha = (X^T X + lambda n I)^-1 X^T y, and the hybrid path's Krylov space is
invariant after d steps, where it is NKRLS's solution: both are checked against that exact
computation, and every method, solver and estimator against the least-squares model."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
from nytro import reference as ref

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

WEIGHTS = np.array([1.0, -1.0, 0.5])
SCALES = [1e-10, 1e10]
NOISE = 0.01


def linear_data(scale, n=300, seed=0):
    rng = np.random.default_rng(seed)
    U = rng.uniform(-1, 1, (n, 3))
    return U * scale, U @ WEIGHTS + NOISE * rng.standard_normal(n)


def ridge(X, y, shift):
    """(X^T X + shift I)^-1 X^T y at unit feature scale (exact for the scaled problem)."""
    s = float(np.abs(X).max())
    U = X / s
    return np.linalg.solve(U.T @ U + (shift / s**2) * np.eye(X.shape[1]), U.T @ y) / s


def unit_coefficients(beta, scale):
    """The model's weights on X / scale: the same function of the unit-scale features."""
    return np.asarray(beta) * scale


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("fit", ["nkrls", "hybrid", "hybrid_reference", "nkrls_reference", "krls"])
def test_tikhonov_grids_follow_the_kernel_scale(fit, scale):
    """The selected lambda is the exact ridge solution's, and not an over-regularised
    zero model: an absolute grid [1e-15, 1] n against a spectrum of size n |x|^2 = 3e-18 at
    |x| ~ 1e-10 selected lambda = 1e-15 and predicted 0 everywhere."""
    X, y = linear_data(scale)
    X_val, y_val = linear_data(scale, 100, seed=1)
    C = X[:20]
    held = dict(X_val=X_val, y_val=y_val)
    if fit == "nkrls":
        result = nytro.nkrls_path(X, y, C, 1.0, kernel="linear", **held, n_threads=1)
    elif fit == "nkrls_reference":
        result = ref.nkrls_path(X, y, C, 1.0, kernel="linear", **held)
    elif fit == "hybrid":
        result = nytro.nytro_path(X, y, C, 1.0, kernel="linear", method="hybrid", max_iter=10, **held, n_threads=1)
    elif fit == "hybrid_reference":
        result = ref.nytro_path(X, y, C, 1.0, kernel="linear", method="hybrid", max_iter=10, **held)
    else:
        result = nytro.krls_path(X, y, 1.0, kernel="linear", **held, n_threads=1)
    beta = (X if fit == "krls" else C).T @ result.coef
    assert np.allclose(unit_coefficients(beta, scale), unit_coefficients(ridge(X, y, result.lambda_ * len(X)), scale),
                       rtol=1e-6, atol=1e-9)
    assert np.abs(unit_coefficients(beta, scale) - WEIGHTS).max() < 10 * NOISE


@pytest.mark.parametrize("scale", SCALES)
def test_hybrid_grid_matches_reference_on_linear_kernel(scale):
    X, y = linear_data(scale)
    X_val, y_val = linear_data(scale, 100, seed=1)
    args = (X, y, X[:20], 1.0)
    ours = nytro.nytro_path(*args, kernel="linear", method="hybrid", max_iter=10, X_val=X_val, y_val=y_val,
                            n_threads=1)
    theirs = ref.nytro_path(*args, kernel="linear", method="hybrid", max_iter=10, X_val=X_val, y_val=y_val)
    assert ours.lambda_ == pytest.approx(theirs.lambda_, rel=1e-12)
    assert ours.n_iter == theirs.n_iter
    assert np.allclose(ours.validation_rmse, theirs.validation_rmse, rtol=1e-8)


def test_distance_kernels_keep_the_paper_grid():
    """The paper's protocol: for kernels bounded by 1 the grids are its numbers, unscaled."""
    X, y = linear_data(1e-10)
    assert nytro.NystromKRLSRegressor(n_centers=20, random_state=0).fit(X * 1e10, y).lambdas_.tolist() == \
        nytro.paper_lambdas().tolist()
    grid = nytro.NystromKRLSRegressor(n_centers=20, kernel="linear", random_state=0).fit(X, y).lambdas_
    assert 0 < grid[-1] <= (X**2).sum(1).max() * (1 + 1e-12)
    assert np.allclose(grid / grid[-1], nytro.paper_lambdas(), rtol=1e-15, atol=0)


def _estimators():
    # The linear kernel's model passes through the origin, as y = X w does here; the
    # default intercept would centre y without centring X (a different model).
    for method in ("gd", "nu", "cg", "hybrid"):
        for solver in ("direct", "gram", "spectral"):
            yield f"nytro-{method}-{solver}", lambda m=method, s=solver: nytro.NytroRegressor(
                n_centers=40, kernel="linear", method=m, solver=s, max_iter=2000, fit_intercept=False, random_state=0)
    yield "nkrls", lambda: nytro.NystromKRLSRegressor(n_centers=40, kernel="linear", fit_intercept=False,
                                                      random_state=0)
    yield "krls", lambda: nytro.KRLSRegressor(kernel="linear", fit_intercept=False, random_state=0)
    yield "kols", lambda: nytro.KOLSRegressor(kernel="linear", fit_intercept=False)
    for method in ("gd", "cg", "hybrid"):
        yield f"landweber-{method}", lambda m=method: nytro.LandweberRegressor(
            kernel="linear", method=m, max_iter=2000, fit_intercept=False, random_state=0)


ESTIMATORS = dict(_estimators())


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_fits_the_linear_model_at_any_scale(name, scale):
    """Against the exact least-squares fit of the same rows, relative to the targets' size."""
    X, y = linear_data(scale)
    model = ESTIMATORS[name]().set_params(n_threads=1).fit(X, y)
    exact = X @ ridge(X, y, 0.0)
    assert np.sqrt(np.mean((model.predict(X) - exact) ** 2)) < 0.5 * NOISE


@pytest.mark.parametrize("scale", SCALES)
def test_classifier_on_a_linear_kernel_at_any_scale(scale):
    X, y = linear_data(scale, 400)
    labels = np.where(y > 0, "up", "down")
    accuracy = nytro.NytroClassifier(n_centers=40, kernel="linear", random_state=0, n_threads=1).fit(
        X, labels).score(X, labels)
    assert accuracy > 0.95


# storage="float32" keeps the linear kernel in float32: ||x||^2 must stay within float's
# normal range (from 2^-126), where its rounding is float's relative precision; below it
# the entries round to subnormals and zeros (features of 1e-25: a zero K_nm, the zero model).
TINY = 1e-25


@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
def test_float32_storage_refuses_a_linear_kernel_below_float_range(solver):
    X, y = linear_data(TINY)
    model = nytro.NytroRegressor(n_centers=40, kernel="linear", solver=solver, storage="float32", random_state=0)
    with pytest.raises(ValueError, match=r"storage='float32' keeps K_nm and the hold-out kernel in float32, where "
                                         r"the linear kernel of these features underflows .*use storage=None"):
        model.fit(X, y)


def test_float32_storage_of_nkrls_and_float16_hold_out_refuse_it_too():
    X, y = linear_data(TINY)
    with pytest.raises(ValueError, match=r"storage='float32' keeps the kernel blocks of A\^T A .* underflows"):
        nytro.NystromKRLSRegressor(n_centers=40, kernel="linear", storage="float32", random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=r"storage='float16' keeps the hold-out kernel in float32, .* underflows"):
        nytro.NytroRegressor(n_centers=40, kernel="linear", storage="float16", random_state=0).fit(X, y)


@pytest.mark.parametrize("storage", ["float32", "float16"])
def test_low_storage_fits_small_features_within_float_range(storage):
    """Features of 1e-18 (||x||^2 ~ 3e-36, in float's normal range): the right model."""
    X, y = linear_data(1e-18)
    model = nytro.NytroRegressor(n_centers=40, kernel="linear", storage=storage, fit_intercept=False, random_state=0,
                                 n_threads=1)
    exact = X @ ridge(X, y, 0.0)
    assert np.sqrt(np.mean((model.fit(X, y).predict(X) - exact) ** 2)) < 0.5 * NOISE
