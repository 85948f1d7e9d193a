"""method="hybrid": Tikhonov projected onto the Krylov space of (A^T A, A^T y), (t, lambda)
selected on the hold-out set; against the reference, and against NKRLS and CG, its two
limits."""
from __future__ import annotations

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from conftest import SERIAL, assert_close, make_noisy_problem, make_problem


@pytest.mark.parametrize("solver", ["direct", "gram", "spectral"])
@pytest.mark.parametrize("n_outputs", [None, 2])
def test_hybrid_matches_reference(solver, n_outputs, dtype):
    p = make_problem(n_outputs=n_outputs, dtype=dtype)
    args = (p.X, p.y, p.centers, p.sigma)
    ours = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=25, solver=solver, **SERIAL)
    theirs = ref.nytro_path(*args, **p.holdout, method="hybrid", max_iter=25)
    assert (ours.n_iter, ours.iterations_run) == (theirs.n_iter, theirs.iterations_run)
    if dtype == np.float64:  # in float32 the smallest lambdas tie to rounding (lambda n << T's spectrum)
        assert ours.lambda_ == theirs.lambda_
    assert ours.step_size == 0.0 and ours.products == ours.iterations_run
    assert_close(ours.validation_rmse, theirs.validation_rmse, dtype, what="validation_rmse")
    # In float32 the direct solver lifts by triangular solves with U (cond(K_mm)^(1/2)
    # amplifies the rounding): its coefficients moved 2e-5 to 1.04e-4 from the reference's
    # across builds (native or SSE2-only) and factor versions, all rounding.
    rtol = 3e-4 if dtype == np.float32 and solver == "direct" else None
    assert_close(ours.coef, theirs.coef, dtype, rtol=rtol, what="coef")


def test_hybrid_with_a_full_basis_is_nkrls():
    """Once the basis spans the whole space (k = m), the projected Tikhonov solution is
    NKRLS's for every lambda: the path's last value is NKRLS's best hold-out RMSE."""
    p = make_noisy_problem(m=20)
    args = (p.X, p.y, p.centers, p.sigma)
    hybrid = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=20, **SERIAL)
    nkrls = nytro.nkrls_path(*args, **p.holdout, **SERIAL)
    assert hybrid.iterations_run == 20
    full = hybrid.validation_rmse[-1]
    assert full == pytest.approx(nkrls.validation_rmse.min(), rel=1e-8)
    # The path's best is at most NKRLS's (its candidates include the full basis).
    assert hybrid.validation_rmse.min() <= full * (1 + 1e-12)


def test_hybrid_path_is_never_worse_than_cg_at_the_same_size():
    """lambda = 1e-15 n is on the grid: at each k the projected solution is within rounding
    of CG's k-th iterate, so the path's best over the grid is at most CG's RMSE."""
    p = make_noisy_problem()
    args = (p.X, p.y, p.centers, p.sigma)
    hybrid = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=6, **SERIAL)
    cg = nytro.nytro_path(*args, **p.holdout, method="cg", max_iter=6, **SERIAL)
    assert np.all(hybrid.validation_rmse <= cg.validation_rmse * (1 + 1e-9))


def test_hybrid_landweber_matches_reference():
    p = make_problem(n=120)
    ours = nytro.landweber_path(p.X, p.y, p.sigma, **p.holdout, method="hybrid", max_iter=30, **SERIAL)
    theirs = ref.landweber_path(p.X, p.y, p.sigma, **p.holdout, method="hybrid", max_iter=30)
    assert (ours.n_iter, ours.lambda_) == (theirs.n_iter, theirs.lambda_)
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")


def test_hybrid_patience_and_float32_storage():
    p = make_noisy_problem(n=600, m=60)
    args = (p.X, p.y, p.centers, p.sigma)
    full = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=60, **SERIAL)
    patient = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=60, n_iter_no_change=5, **SERIAL)
    assert patient.iterations_run == min(60, patient.n_iter + 5) < 60
    np.testing.assert_array_equal(patient.validation_rmse, full.validation_rmse[:patient.iterations_run])
    low = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=60, storage="float32", solver="direct",
                           n_iter_no_change=5, **SERIAL)
    assert low.validation_rmse.min() == pytest.approx(patient.validation_rmse.min(), rel=1e-3)


def test_hybrid_without_holdout_runs_max_iter_with_the_smallest_lambda(dtype):
    """No hold-out set: max_iter steps and lambda = 1e-15, the projected least-squares
    solution, which is CG's iterate in exact arithmetic (compared over the first steps,
    before CG's rounding grows)."""
    p = make_problem(dtype=dtype)
    args = (p.X, p.y, p.centers, p.sigma)
    ours = nytro.nytro_path(*args, method="hybrid", max_iter=5, **SERIAL)
    theirs = ref.nytro_path(*args, method="hybrid", max_iter=5)
    assert (ours.n_iter, ours.iterations_run, ours.lambda_) == (5, 5, 1e-15) == (theirs.n_iter,
                                                                                 theirs.iterations_run, theirs.lambda_)
    assert ours.validation_rmse.size == 0
    assert_close(ours.coef, theirs.coef, dtype, what="coef")
    cg = nytro.nytro_path(*args, method="cg", max_iter=5, **SERIAL)
    assert_close(ours.coef, cg.coef, dtype, rtol=1e-6 if dtype == np.float64 else 1e-2, what="coef vs cg")
    est = nytro.NytroRegressor(30, p.sigma, method="hybrid", max_iter=5, validation_fraction=None).fit(p.X, p.y)
    assert est.n_iter_ == 5 and est.lambda_ == 1e-15


def test_estimator_reports_lambda():
    p = make_noisy_problem()
    hybrid = nytro.NytroRegressor(30, p.sigma, method="hybrid", random_state=0, **SERIAL).fit(p.X, p.y)
    grid = nytro.NystromKRLSRegressor(30, p.sigma).fit(p.X, p.y).lambdas_
    assert np.min(np.abs(grid / hybrid.lambda_ - 1)) < 1e-14
    assert hybrid.step_size_ == 0.0 and hybrid.products_ >= hybrid.n_iter_
    cg = nytro.NytroRegressor(30, p.sigma, method="cg", random_state=0, **SERIAL).fit(p.X, p.y)
    assert cg.lambda_ is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # its path may end at max_iter
def test_landweber_estimator_reports_lambda():
    p = make_noisy_problem()
    est = nytro.LandweberRegressor(p.sigma, method="hybrid", max_iter=40, random_state=0, **SERIAL).fit(p.X, p.y)
    assert est.lambda_ is not None and 1e-15 <= est.lambda_ <= 1 and est.step_size_ == 0.0
    assert nytro.LandweberRegressor(p.sigma, max_iter=5, random_state=0, **SERIAL).fit(p.X, p.y).lambda_ is None
