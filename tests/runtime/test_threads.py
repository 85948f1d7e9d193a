"""Results must not depend on the thread count.

The iterative paths split their work into a number of slots that depends on the data
alone, so they must be bitwise identical for any n_threads; the methods that call a
(threaded) LAPACK eigendecomposition are held to 1e-12 relative instead.

The problems are larger than elsewhere (n in the thousands for the Nystrom paths) so
that the row-block passes really are split into several slots and threads.
"""
from __future__ import annotations

import numpy as np
import pytest

import nytro
from conftest import SIGMA, assert_close, make_problem

# LandweberRegressor's defaults are the paper's (step 1/n, 500 iterations), whose path is
# still falling at its end on these small problems: its ConvergenceWarning is tested in
# test_path_cut_warning.py, and is beside the point here.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

THREADS = (1, 2, 3)
EIGEN_RTOL = 1e-12
# KRLS grid kept where cond(K + lambda n I) <= ~1e3: a 1e-12 tolerance between LAPACK
# runs with different thread counts is only fair on a well-conditioned system.
KRLS_LAMBDAS = np.logspace(-3, 0, 4)


@pytest.fixture(scope="module")
def large():
    """n = 4000 rows (several 256-row blocks per slot, several slots), m = 40 centres."""
    return make_problem(n=4000, m=40, n_val=200, n_outputs=2)


@pytest.fixture(scope="module")
def medium():
    """n = 1000 rows for Landweber (K is n x n, split into several row-block slots)."""
    return make_problem(n=1000, n_val=200)


@pytest.fixture(scope="module")
def small():
    """n = 200 rows for the full-kernel eigendecompositions: OpenBLAS asked for more
    threads than this machine may have cores is slow at every synchronisation, so these
    stay small."""
    return make_problem(n=200, n_val=50)


def per_thread_count(compute):
    """compute(n_threads) for each thread count, as a list."""
    return [compute(n_threads) for n_threads in THREADS]


def assert_all_equal(results):
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def assert_all_close(results):
    for other in results[1:]:
        assert_close(other, results[0], np.float64, rtol=EIGEN_RTOL)


def test_gaussian_kernel_and_prediction(large):
    p = large
    assert_all_equal(per_thread_count(lambda k: nytro.gaussian_kernel(p.X, p.centers, p.sigma, n_threads=k)))
    coef = np.random.default_rng(0).standard_normal((40, 2))
    assert_all_equal(per_thread_count(
        lambda k: nytro.kernel_predict(p.X, p.centers, coef, p.sigma, n_threads=k)))


@pytest.mark.parametrize("solver", ["direct", "gram"])
@pytest.mark.parametrize("holdout", [True, False], ids=["holdout", "no-holdout"])
def test_nytro_path(large, solver, holdout):
    p = large
    results = per_thread_count(lambda k: nytro.nytro_path(
        p.X, p.y, p.centers, p.sigma, **(p.holdout if holdout else {}), max_iter=30, solver=solver,
        n_threads=k))
    assert_all_equal([r.coef for r in results])
    assert_all_equal([r.validation_rmse for r in results])
    assert len({(r.n_iter, r.iterations_run, r.step_size) for r in results}) == 1


def test_landweber_path(medium):
    p = medium
    results = per_thread_count(lambda k: nytro.landweber_path(p.X, p.y, p.sigma, **p.holdout, max_iter=30,
                                                              n_threads=k))
    assert_all_equal([r.coef for r in results])
    assert_all_equal([r.validation_rmse for r in results])


@pytest.mark.parametrize("factor", ["pivoted", "qr", "cholesky"])
def test_nystrom_factor(large, factor):
    K = nytro.gaussian_kernel(large.centers, large.centers, large.sigma)
    factors = per_thread_count(lambda k: nytro.nystrom_factor(K, method=factor, n_threads=k))
    assert_all_close([R @ R.T for R in factors])


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
def test_nkrls_path(large, solver):
    p = large
    results = per_thread_count(lambda k: nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, **p.holdout,
                                                          solver=solver, n_threads=k))
    assert len({r.selected for r in results}) == 1
    assert_all_close([r.coef for r in results])
    assert_all_close([r.validation_rmse for r in results])


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
def test_krls_path(small, solver):
    p = small
    results = per_thread_count(lambda k: nytro.krls_path(p.X, p.y, p.sigma, lambdas=KRLS_LAMBDAS,
                                                         **p.holdout, solver=solver, n_threads=k))
    assert len({r.selected for r in results}) == 1
    assert_all_close([r.coef for r in results])


def test_kols():
    p = make_problem(n=200, sigma=0.5)  # cond(K) is modest: pinv is stable
    assert_all_close(per_thread_count(lambda k: nytro.kols(p.X, p.y, p.sigma, n_threads=k)))


# ------------------------------------------------------------------- estimators
ITERATIVE = [
    lambda k: nytro.NytroRegressor(n_centers=40, sigma=SIGMA, max_iter=30, random_state=0, n_threads=k),
    lambda k: nytro.NytroRegressor(n_centers=40, sigma=SIGMA, max_iter=30, solver="gram", random_state=0,
                                   n_threads=k),
    lambda k: nytro.LandweberRegressor(sigma=SIGMA, max_iter=30, random_state=0, n_threads=k),
]
SPECTRAL = [
    lambda k: nytro.NystromKRLSRegressor(n_centers=40, sigma=SIGMA, random_state=0, n_threads=k),
    lambda k: nytro.KRLSRegressor(sigma=SIGMA, lambdas=KRLS_LAMBDAS, random_state=0, n_threads=k),
    lambda k: nytro.KOLSRegressor(sigma=0.5, n_threads=k),
]


def fit_predict(make, n_threads, p):
    model = make(n_threads).fit(p.X, p.y)
    return model.coef_, model.predict(p.X_val)


@pytest.mark.parametrize("make", ITERATIVE, ids=["nytro-auto", "nytro-gram", "landweber"])
def test_iterative_estimators(medium, make):
    fitted = per_thread_count(lambda k: fit_predict(make, k, medium))
    assert_all_equal([coef for coef, _ in fitted])
    assert_all_equal([predictions for _, predictions in fitted])


@pytest.mark.parametrize("make", SPECTRAL, ids=["nkrls", "krls", "kols"])
def test_spectral_estimators(small, make):
    fitted = per_thread_count(lambda k: fit_predict(make, k, small))
    assert_all_close([coef for coef, _ in fitted])
    assert_all_close([predictions for _, predictions in fitted])


# ------------------------------------------------- fits running at once in several threads
def _blas_limits():
    from threadpoolctl import threadpool_info
    return sorted(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")


@pytest.mark.parametrize("make", [
    lambda: nytro.NystromKRLSRegressor(n_centers=200, sigma=SIGMA, n_threads=1, random_state=0),
    lambda: nytro.KRLSRegressor(sigma=SIGMA, n_threads=np.int64(1)),
    lambda: nytro.KOLSRegressor(sigma=SIGMA, n_threads=1),
])
def test_concurrent_fits_leave_the_blas_pool_as_they_found_it(make, process_blas_pool):
    """Four threads each fitting with n_threads=1: each fit capped the process-wide BLAS
    pool while it ran and restored the limit it had found when it ended, so overlapping
    fits left the pool at 1 thread for the rest of the process. Fits now leave it alone."""
    import threading
    before = _blas_limits()
    if not before or max(before) < 2:
        pytest.skip("needs a BLAS pool of 2 threads or more to see it shrink")
    rng = np.random.RandomState(0)
    X = rng.uniform(-1, 1, (400, 3))
    y = np.sin(3 * X[:, 0])
    errors = []

    def fit():
        try:
            for _ in range(6):
                make().fit(X, y)
        except Exception as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=fit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert _blas_limits() == before


def test_a_fit_leaves_the_blas_pool_alone(process_blas_pool):
    """The BLAS pool is process-wide: a fit with n_threads=1 neither changes it while it
    runs (seen from its progress callback) nor after."""
    before = _blas_limits()
    seen = []
    rng = np.random.RandomState(1)
    X = rng.uniform(-1, 1, (300, 3))
    nytro.krls_path(X, np.sin(X[:, 0]), SIGMA, lambdas=[1e-3], n_threads=1,
                    progress=lambda stage, done, total: seen.append(_blas_limits()))
    assert seen and all(limits == before for limits in seen)
    assert _blas_limits() == before


def test_one_estimator_fitted_from_two_threads_at_once_gets_a_clear_error():
    """An estimator object is not thread-safe (fit sets its attributes one by one): a
    second fit of the same object while one runs raised an internal AttributeError; it now
    says what happened, and the first fit completes."""
    import threading
    rng = np.random.RandomState(2)
    X = rng.uniform(-1, 1, (3000, 3))
    y = np.sin(3 * X[:, 0])
    est = nytro.NytroRegressor(n_centers=200, sigma=SIGMA, method="gd", max_iter=300, n_iter_no_change=None,
                               iterates="stepwise", random_state=0)
    started, release = threading.Event(), threading.Event()
    main = threading.current_thread()

    def progress(stage, done, total):
        if threading.current_thread() is not main:  # hold the first fit until the second has run
            started.set()
            release.wait(timeout=30)

    est._progress = lambda: progress  # the fit reports (and here waits) through it
    errors = []

    def first():
        try:
            est.fit(X, y)
        except Exception as error:
            errors.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(timeout=60)
    try:
        with pytest.raises(RuntimeError, match="not thread-safe.*clone"):
            est.fit(X, y)
    finally:
        release.set()
        thread.join()
    assert not errors, errors
    assert est.coef_.shape == (200,)
