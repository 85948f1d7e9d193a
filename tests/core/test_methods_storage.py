"""The accelerated regularisers (nu-method, CG) and float32 storage against the
reference and against the float64 computation."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import SERIAL, assert_close, make_noisy_problem, make_problem


@pytest.mark.parametrize("method", ["nu", "cg"])
@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
@pytest.mark.parametrize("n_outputs", [None, 2])
def test_accelerated_nytro_matches_reference(method, solver, n_outputs, dtype):
    p = make_problem(n_outputs=n_outputs, dtype=dtype)
    args = (p.X, p.y, p.centers, p.sigma)
    # CG amplifies rounding differences between two correct implementations (here by
    # ~1e4 per few steps once the residual is small: 7e-15 at t=5, 1e-6 at t=12), so its
    # iterates are compared over the first steps only.
    max_iter = 6 if method == "cg" else 60
    ours = nytro.nytro_path(*args, **p.holdout, method=method, max_iter=max_iter, solver=solver, **SERIAL)
    theirs = ref.nytro_path(*args, **p.holdout, method=method, max_iter=max_iter)
    assert (ours.n_iter, ours.iterations_run) == (theirs.n_iter, theirs.iterations_run)
    assert_close(ours.coef, theirs.coef, dtype, what="coef")
    assert_close(ours.validation_rmse, theirs.validation_rmse, dtype, what="validation_rmse")


@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
def test_auto_step_does_not_depend_on_the_outputs(solver):
    """The step is 1 / lambda_max(A^T A): a property of A alone, estimated on one
    vector even when y has several columns (a regression: the direct solver once sized
    its scratch space by y's columns and read past it)."""
    p = make_problem(n=700, m=150, n_outputs=3)
    options = dict(method="gd", max_iter=5, step_size="auto")
    several = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, **options, solver=solver)
    one = nytro.nytro_path(p.X, p.y[:, 0], p.centers, p.sigma, X_val=p.X_val, y_val=p.y_val[:, 0],
                           **options, solver=solver)
    theirs = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, **options)
    assert several.step_size == pytest.approx(one.step_size, rel=1e-12)
    assert several.step_size == pytest.approx(theirs.step_size, rel=1e-8)
    assert_close(several.coef, theirs.coef, np.float64, what="coef")


@pytest.mark.parametrize("method", ["nu", "cg"])
def test_accelerated_landweber_matches_reference(method):
    p = make_problem(n=120)
    ours = nytro.landweber_path(p.X, p.y, p.sigma, **p.holdout, method=method, step_size="auto", max_iter=40,
                                **SERIAL)
    theirs = ref.landweber_path(p.X, p.y, p.sigma, **p.holdout, method=method, step_size="auto", max_iter=40)
    assert ours.n_iter == theirs.n_iter
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")


def test_nu_method_iterates_are_a_polynomial_filter_of_the_same_operator():
    """With no hold-out, the nu-method's first iterate is omega_1 * s * c (beta_0 = 0)."""
    p = make_problem()
    one = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="nu", nu=1.0, max_iter=1, **SERIAL)
    gd = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="gd", max_iter=1, **SERIAL)
    assert_close(one.coef, gd.coef * (4 + 2) / (4 + 1), np.float64)


def test_acceleration_reaches_the_gd_path_in_fewer_iterations():
    """nu and CG reach the best validation RMSE of 500 GD iterations well before 500."""
    p = make_problem(n=600, m=80, sigma=2.0)
    gd = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, method="gd", max_iter=500, **SERIAL)
    target = gd.validation_rmse.min()
    for method, budget in (("nu", 120), ("cg", 40)):
        fast = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, method=method, max_iter=budget, **SERIAL)
        reached = np.flatnonzero(fast.validation_rmse <= target * (1 + 1e-3))
        assert reached.size, f"{method} did not reach GD's best RMSE {target:.5f} in {budget} iterations"


def test_cg_step_size_is_ignored():
    p = make_problem()
    a = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="cg", max_iter=20, step_size=1e6, **SERIAL)
    b = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="cg", max_iter=20, **SERIAL)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.step_size == 0.0


@pytest.mark.parametrize("solver", ["direct", "gram"])
@pytest.mark.parametrize("method", ["gd", "cg"])
def test_float32_storage_keeps_the_validation_path(solver, method):
    """float32 storage of K_nm / A^T A / K_val changes the hold-out path by rounding only
    (coefficients may move more along near-null directions of K_mm; predictions do not)."""
    p = make_noisy_problem()
    args = (p.X, p.y, p.centers, p.sigma)
    max_iter = 6 if method == "cg" else 100  # CG soon follows rounding noise (see above)
    full = nytro.nytro_path(*args, **p.holdout, method=method, max_iter=max_iter, solver=solver, **SERIAL)
    low = nytro.nytro_path(*args, **p.holdout, method=method, max_iter=max_iter, solver=solver, storage="float32",
                           **SERIAL)
    assert low.coef.dtype == np.float64
    np.testing.assert_allclose(low.validation_rmse, full.validation_rmse, rtol=1e-4)
    K = nytro.gaussian_kernel(p.X_val, p.centers, p.sigma)
    assert_close(K @ low.coef, K @ full.coef, np.float32, rtol=1e-3, what="predictions")


@pytest.mark.parametrize("solver", ["direct", "gram"])
def test_float32_storage_certifies_lanczos_iterates_at_its_own_rounding(solver):
    """With K_nm or A^T A stored in float32 the Lanczos basis need only certify the
    iterates to float32's rounding (that of the stored operator), so it takes fewer
    products than in float64, and the path stays within that rounding of the stepwise
    path on the same float32 operator: the bound certifies 64 float32 epsilons."""
    p = make_problem(n=600, m=150, n_val=120)
    args = (p.X, p.y, p.centers, p.sigma)
    options = dict(max_iter=400, solver=solver, **p.holdout, **SERIAL)
    low = nytro.nytro_path(*args, storage="float32", iterates="lanczos", **options)
    full = nytro.nytro_path(*args, iterates="lanczos", **options)
    stepwise = nytro.nytro_path(*args, storage="float32", iterates="stepwise", **options)
    assert low.products < full.products < 100
    assert low.n_iter == stepwise.n_iter
    K_val = nytro.gaussian_kernel(p.X_val, p.centers, p.sigma)
    certified = 64 * np.finfo(np.float32).eps
    assert_close(low.validation_rmse, stepwise.validation_rmse, np.float32, rtol=certified, what="validation_rmse")
    assert_close(K_val @ low.coef, K_val @ stepwise.coef, np.float32, rtol=certified, what="predictions")


def test_float32_storage_nkrls_selects_alike():
    p = make_noisy_problem()
    args = (p.X, p.y, p.centers, p.sigma)
    full = nytro.nkrls_path(*args, **p.holdout, **SERIAL)
    low = nytro.nkrls_path(*args, **p.holdout, storage="float32", **SERIAL)
    best = np.argmin(full.validation_rmse)
    assert abs(low.selected - best) <= 2
    assert low.validation_rmse.min() == pytest.approx(full.validation_rmse.min(), rel=1e-4)


def test_storage_is_checked():
    p = make_problem()
    with pytest.raises(ValueError, match="storage='float8' is not one of None, 'float32', 'float16'"):
        nytro.nytro_path(p.X, p.y, p.centers, p.sigma, storage="float8")
    with pytest.raises(ValueError, match="method='sgd' is not one of"):
        nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="sgd")
    with pytest.raises(ValueError, match="nu must be a finite number > 0"):
        nytro.nytro_path(p.X, p.y, p.centers, p.sigma, method="nu", nu=0)


def test_estimators_expose_method_and_storage():
    p = make_problem(n=400)
    est = nytro.NytroRegressor(30, p.sigma, method="cg", storage="float32", max_iter=50, random_state=0).fit(p.X, p.y)
    assert est.coef_.dtype == np.float64 and 1 <= est.n_iter_ <= 50
    nk = nytro.NystromKRLSRegressor(30, p.sigma, storage="float32", random_state=0).fit(p.X, p.y)
    assert np.isfinite(nk.predict(p.X_val)).all()


@pytest.mark.parametrize("method", ["gd", "nu", "cg"])
@pytest.mark.parametrize("holdout", [True, False])
def test_spectral_solver_matches_reference(method, holdout):
    """The spectral solver runs the same iterations in eigen-coordinates of A^T A."""
    p = make_problem(n_outputs=2)
    kwargs = dict(p.holdout) if holdout else {}
    max_iter = 6 if method == "cg" else 150
    ours = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **kwargs, method=method, max_iter=max_iter,
                            solver="spectral", **SERIAL)
    theirs = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **kwargs, method=method, max_iter=max_iter)
    assert ours.solver == "spectral" and ours.n_iter == theirs.n_iter
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")
    if holdout:
        assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")


@pytest.mark.parametrize("n_val", [100, 400])
def test_spectral_validates_alike_in_either_coordinates(n_val):
    """The spectral solver validates in eigen-coordinates (the hold-out kernel turned into
    K_val R V once) when the hold-out set has fewer rows than the path validates columns
    (max_iter x outputs, 300 here), and otherwise maps each iterate to the centres: the
    same path and selection either way."""
    p = make_problem(n_outputs=2, n_val=n_val)
    ours = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=150, solver="spectral", **SERIAL)
    theirs = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=150)
    assert ours.solver == "spectral" and ours.n_iter == theirs.n_iter
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")
    assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")


def test_spectral_follows_gd_far_beyond_500_iterations():
    """t_max = 1e5 GD iterations: the path keeps improving past 500 and the solver's cost
    does not grow with t as GD's would (each iteration is O(k) after one eigh)."""
    p = make_problem(n=800, m=80, sigma=2.0, noise=0.05)
    long = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=100_000, solver="spectral",
                            **SERIAL)
    short = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=500, solver="gram", **SERIAL)
    np.testing.assert_allclose(long.validation_rmse[:500], short.validation_rmse, rtol=1e-9)
    assert long.validation_rmse.min() < short.validation_rmse.min()


def test_auto_solver_for_long_paths():
    # nu steps, so 5e4 iterations go to the spectral solver (O(k) each); gd's iterates
    # come from a Lanczos basis, complete here after k = 40 products, so no eigh is needed.
    p = make_problem(n=800, m=40)
    assert nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=50_000,
                            method="nu").solver == "spectral"
    gd = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=50_000)
    assert gd.solver in ("direct", "gram") and gd.products <= 40


@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
def test_patience_matches_reference(solver):
    p = make_noisy_problem()
    kwargs = dict(**p.holdout, method="gd", max_iter=300, n_iter_no_change=20)
    ours = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, solver=solver, **kwargs, **SERIAL)
    theirs = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **kwargs)
    assert (ours.n_iter, ours.iterations_run) == (theirs.n_iter, theirs.iterations_run)
    assert ours.iterations_run == ours.n_iter + 20 < 300
    assert_close(ours.coef, theirs.coef, np.float64)


def test_auto_prefers_direct_when_lanczos_saves_the_products():
    # 500 iterations cost the direct solver 500 passes over K_nm stepwise, but about 40
    # by Lanczos: then forming A^T A (2 n k^2 flops) no longer pays.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 20))
    y = X[:, 0]
    lanczos = nytro.nytro_path(X, y, X[:1200], 3.0, max_iter=500, **SERIAL)
    stepwise = nytro.nytro_path(X, y, X[:1200], 3.0, max_iter=500, iterates="stepwise", **SERIAL)
    assert lanczos.rank == stepwise.rank == 1200
    assert (lanczos.solver, stepwise.solver) == ("direct", "gram")
    assert lanczos.products < 50 and stepwise.products == 500
