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


# Fewer hold-out rows than basis vectors: past k = n_val the hold-out images of the basis
# span at most n_val dimensions, and each new one lies in the span of the earlier ones.
# The reference predicts the hold-out set from the coefficients of every projected
# solution and sums the squared errors directly, so it does not share the core's
# two-term error formula.
FEW_HOLDOUT_ROWS = [{"n": 300, "m": 60, "n_val": 20}, {"n": 300, "m": 80, "n_val": 30, "n_outputs": 2}]


@pytest.mark.parametrize("case", FEW_HOLDOUT_ROWS, ids=["q=1", "q=2"])
def test_hybrid_path_past_the_holdout_rows_matches_a_direct_evaluation(case):
    p = make_problem(**case)
    args = (p.X, p.y, p.centers, p.sigma)
    ours = nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=case["m"], **SERIAL)
    theirs = ref.nytro_path(*args, **p.holdout, method="hybrid", max_iter=case["m"])
    assert ours.iterations_run == theirs.iterations_run == case["m"] > case["n_val"]
    assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")
    assert (ours.n_iter, ours.lambda_) == (theirs.n_iter, theirs.lambda_)
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")
    # The path's value at the selected t is the RMSE of the returned coefficients.
    predictions = nytro.gaussian_kernel(p.X_val, p.centers, p.sigma) @ ours.coef
    direct = np.sqrt(np.mean((predictions - p.y_val) ** 2))
    assert ours.validation_rmse[ours.n_iter - 1] == pytest.approx(direct, rel=1e-9)


# Many stretches of basis vectors (16 each): each stretch's hold-out images are
# orthogonalised as a block against the earlier ones, then column by column, on the fit's
# threads. The path must follow the reference's direct sums at every t, give the same bits
# on one thread and two, and keep the two-term formula where the hold-out set fills up.
@pytest.mark.parametrize("case", [{"n": 600, "m": 128, "n_val": 300},
                                  {"n": 600, "m": 128, "n_val": 90, "n_outputs": 2},
                                  {"n": 600, "m": 112, "n_val": 40, "sigma": 0.3}],
                         ids=["wide", "q=2-fills", "few-narrow"])
def test_hybrid_holdout_images_over_many_stretches(case):
    p = make_problem(d=6, **case)
    args = (p.X, p.y, p.centers, p.sigma)
    runs = [nytro.nytro_path(*args, **p.holdout, method="hybrid", max_iter=case["m"], n_threads=threads)
            for threads in (1, 2)]
    theirs = ref.nytro_path(*args, **p.holdout, method="hybrid", max_iter=case["m"])
    ours = runs[0]
    assert ours.iterations_run == theirs.iterations_run > 3 * 16
    assert np.array_equal(runs[0].validation_rmse, runs[1].validation_rmse)
    assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")
    assert (ours.n_iter, ours.lambda_) == (theirs.n_iter, theirs.lambda_)
    predictions = nytro.gaussian_kernel(p.X_val, p.centers, p.sigma) @ ours.coef
    direct = np.sqrt(np.mean((predictions - p.y_val) ** 2))
    assert ours.validation_rmse[ours.n_iter - 1] == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("case", FEW_HOLDOUT_ROWS, ids=["q=1", "q=2"])
def test_hybrid_landweber_past_the_holdout_rows_matches_a_direct_evaluation(case):
    p = make_problem(**case)
    X, y = p.X[:case["m"]], p.y[:case["m"]]
    ours = nytro.landweber_path(X, y, p.sigma, **p.holdout, method="hybrid", max_iter=case["m"], **SERIAL)
    theirs = ref.landweber_path(X, y, p.sigma, **p.holdout, method="hybrid", max_iter=case["m"])
    assert_close(ours.validation_rmse, theirs.validation_rmse, np.float64, what="validation_rmse")
    assert (ours.n_iter, ours.lambda_) == (theirs.n_iter, theirs.lambda_)
    assert_close(ours.coef, theirs.coef, np.float64, what="coef")
    predictions = nytro.gaussian_kernel(p.X_val, X, p.sigma) @ ours.coef
    assert ours.validation_rmse[ours.n_iter - 1] == pytest.approx(np.sqrt(np.mean((predictions - p.y_val) ** 2)),
                                                                  rel=1e-9)


@pytest.mark.parametrize("stopping", ["best", "relative", "window"])
def test_hybrid_path_ends_where_the_krylov_space_is_invariant(stopping):
    """Past k = dim (here m) every t would repeat the last solution: the path ends there
    whatever max_iter is, in bounded time and memory, with the model of a max_iter = dim
    run (and the reference's)."""
    p = make_problem(m=20)
    args = (p.X, p.y, p.centers, p.sigma)
    common = {"method": "hybrid", "stopping": stopping, "solver": "gram", **SERIAL}  # the cost model sees max_iter
    at_dim = nytro.nytro_path(*args, **p.holdout, max_iter=20, **common)
    far = nytro.nytro_path(*args, **p.holdout, max_iter=10**7, **common)
    theirs = ref.nytro_path(*args, **p.holdout, method="hybrid", max_iter=10**7, stopping=stopping)
    assert far.iterations_run == at_dim.iterations_run == theirs.iterations_run <= 20
    assert len(far.validation_rmse) == far.iterations_run
    assert (far.n_iter, far.lambda_) == (at_dim.n_iter, at_dim.lambda_) == (theirs.n_iter, theirs.lambda_)
    np.testing.assert_array_equal(far.validation_rmse, at_dim.validation_rmse)
    np.testing.assert_array_equal(far.coef, at_dim.coef)
    assert far.products == at_dim.products


def test_hybrid_with_zero_targets_has_a_one_step_path():
    """c = 0: the Krylov space is {0} from the start; t = 1 predicts 0."""
    p = make_problem()
    zero = np.zeros_like(p.y)
    ours = nytro.nytro_path(p.X, zero, p.centers, p.sigma, **p.holdout, method="hybrid", max_iter=10**7, **SERIAL)
    theirs = ref.nytro_path(p.X, zero, p.centers, p.sigma, **p.holdout, method="hybrid", max_iter=10**7)
    assert (ours.n_iter, ours.iterations_run, ours.products) == (1, 1, 0)
    assert (theirs.n_iter, theirs.iterations_run) == (1, 1)
    assert_close(ours.validation_rmse, [np.sqrt(np.mean(p.y_val ** 2))], np.float64, what="validation_rmse")
    assert_close(theirs.validation_rmse, ours.validation_rmse, np.float64, what="reference validation_rmse")
    assert not ours.coef.any()
