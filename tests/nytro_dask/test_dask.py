"""nytro.dask against the in-memory fit given the same training rows, hold-out rows and
centres, on a distributed LocalCluster (2 worker processes, 1 thread each).

The problems are conftest's well-conditioned ones (cond(K_mm) ~ 10^3), so that the
different summation orders of the distributed A^T A (per chunk, then a tree) and of the
core's streamed one stay inside float64's 1e-10 and float32's 1e-4 relative. "cg" runs
8 iterations: CG amplifies rounding as it nears convergence, and on this problem the
in-memory core's own "direct" and "gram" solvers differ by 3e-5 at t = 15 (3e-11 at
t = 10), a limit of the method, not of the distribution.
"""
from __future__ import annotations

import os
import platform
import re

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
from conftest import make_problem, relative_error  # noqa: E402
from nytro._engine import shifted_solves  # noqa: E402

RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-4}
SEED = 7
FRACTION = 0.25


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  worker_dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        yield c


def data(n=257, m=40, dtype=np.float64, n_outputs=None, noise=0.5, sigma=1.0):
    """X, y of n rows (training and hold-out rows alike: the split is nytro.dask's)."""
    p = make_problem(n=n, m=m, n_val=1, n_outputs=n_outputs, noise=noise, sigma=sigma, dtype=dtype)
    return p.X, p.y, p.sigma


def split(n, fraction=FRACTION, seed=SEED):
    held = nd.holdout_mask(np.arange(n), fraction, seed)
    return ~held, held


def assert_close(actual, expected, dtype, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    err = relative_error(actual, expected)
    assert err <= RTOL[np.dtype(dtype)], f"{what}: relative error {err:.3e}"


def in_memory_path(X, y, sigma, fit, solver="gram", **kwargs):
    train, held = split(len(X))
    return nytro.nytro_path(X[train], y[train], X[fit.center_rows], sigma, X_val=X[held], y_val=y[held],
                            solver=solver, n_threads=1, **kwargs)


def check_path(fit, expected, dtype):
    result = fit.result
    assert result.n_iter == expected.n_iter
    assert result.iterations_run == expected.iterations_run
    assert result.rank == expected.rank
    assert_close(result.step_size, expected.step_size, dtype, "step_size")
    assert_close(result.validation_rmse, expected.validation_rmse, dtype, "validation path")
    assert_close(result.coef, expected.coef, dtype, "coef")


def test_holdout_mask_is_a_seeded_function_of_the_row_index():
    rows = np.arange(100_000)
    mask = nd.holdout_mask(rows, 0.3, 11)
    assert abs(mask.mean() - 0.3) < 0.01  # binomial: sd 0.0015
    np.testing.assert_array_equal(nd.holdout_mask(rows[5000:9000], 0.3, 11), mask[5000:9000])
    assert (nd.holdout_mask(rows, 0.3, 12) != mask).mean() > 0.3
    assert not nd.holdout_mask(rows, None, 11).any()
    with pytest.raises(ValueError, match="validation_fraction"):
        nd.holdout_mask(rows, 1.0, 11)
    # NumPy's numbers are fractions, as the estimators take them in memory.
    np.testing.assert_array_equal(nd.holdout_mask(rows, np.float32(0.25), 11), nd.holdout_mask(rows, 0.25, 11))


def test_a_chunk_task_converts_only_the_rows_it_keeps():
    """A float32 chunk of a float64 fit: its training (or hold-out) rows are converted,
    not the whole chunk first (issue 47: that copy, 2x the chunk, raised a worker's peak
    memory past distributed's spill threshold in the out-of-core fit). The rows are those
    of the whole chunk's conversion, and a NaN in a row the task does not keep is still
    refused as in memory."""
    import tracemalloc
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 64)).astype(np.float32)
    Y = rng.standard_normal(20000).astype(np.float32)
    start = 1000
    for held in (False, True):
        kept = nd.holdout_mask(np.arange(start, start + len(X)), FRACTION, SEED)
        kept = kept if held else ~kept
        tracemalloc.start()
        try:
            rows, targets, scale = nd._data._chunk_rows(X, Y, start, start + len(X), FRACTION, SEED,
                                                        np.dtype(np.float64), None, None, held)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_array_equal(rows, X.astype(np.float64)[kept])
        np.testing.assert_array_equal(targets, Y.astype(np.float64)[kept, None])
        assert rows.dtype == np.float64 and rows.flags.c_contiguous and scale is None
        # The kept rows in float64 (1.6x the chunk at most), a block of them at a time in
        # float32, and the checks' masks: under the whole chunk's float64 copy (2x).
        assert peak < 2 * X.nbytes, (held, peak / X.nbytes)
        bad = X.copy()
        bad[np.flatnonzero(~kept)[0], 3] = np.nan
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            nd._data._chunk_rows(bad, Y, start, start + len(X), FRACTION, SEED, np.dtype(np.float64), None, None, held)


def test_numpy_validation_fraction_as_in_memory(client):
    X, y, sigma = data(n=60)
    params = dict(method="cg", max_iter=4, n_iter_no_change=None, random_state=3)
    given = nytro.NytroRegressor(10, sigma, validation_fraction=np.float32(0.25), **params)
    np.testing.assert_array_equal(given.fit(da.from_array(X, chunks=20), y).coef_,
                                  nytro.NytroRegressor(10, sigma, validation_fraction=0.25, **params).fit(
                                      da.from_array(X, chunks=20), y).coef_)


# hybrid: max_iter past the rank (40), where its Krylov space is invariant and the path
# repeats its last value.
@pytest.mark.parametrize("method, max_iter", [("gd", 80), ("nu", 40), ("cg", 8), ("hybrid", 45)])
@pytest.mark.parametrize("chunks", [50, 257, 300], ids=["uneven", "one-chunk", "chunk-past-n"])
def test_path_equals_in_memory(client, method, max_iter, chunks):
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks), sigma,
                        n_centers=40, validation_fraction=FRACTION, seed=SEED, method=method, max_iter=max_iter,
                        solver="gram")
    train, held = split(len(X))
    assert (fit.n_train, fit.n_val) == (train.sum(), held.sum())
    assert train[fit.center_rows].all() and len(set(fit.center_rows)) == 40
    np.testing.assert_array_equal(fit.centers, X[fit.center_rows])
    expected = in_memory_path(X, y, sigma, fit, method=method, max_iter=max_iter)
    check_path(fit, expected, X.dtype)
    assert 1 < fit.result.n_iter < max_iter  # the selection is inside the path, not at an end


# Each product is a round trip to the workers: gd (its step's Lanczos estimate too) runs
# on one chunk, the others on uneven chunks as well.
@pytest.mark.parametrize("method, max_iter, chunks", [("gd", 80, 300), ("nu", 40, 50), ("cg", 8, 50), ("cg", 8, 300)],
                         ids=["gd-chunk-past-n", "nu-uneven", "cg-uneven", "cg-chunk-past-n"])
def test_direct_path_equals_in_memory_direct(client, method, max_iter, chunks):
    """solver="direct": A_i kept on the workers, each product a map-reduce of m-vectors;
    the same answer as the in-memory direct solver (gd's step from the same Lanczos
    estimate of lambda_max, made of distributed products; gd stepped, its Lanczos
    iterates in test_auto_iterates_are_the_cores_choice)."""
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks), sigma,
                        n_centers=40, validation_fraction=FRACTION, seed=SEED, method=method, max_iter=max_iter,
                        solver="direct", iterates="stepwise")
    assert fit.result.solver == "direct"
    assert fit.result.products >= max_iter  # every iterate took a distributed product
    expected = in_memory_path(X, y, sigma, fit, solver="direct", method=method, max_iter=max_iter,
                              iterates="stepwise")
    check_path(fit, expected, X.dtype)
    assert 1 < fit.result.n_iter < max_iter


@pytest.mark.parametrize("solver", ["gram", "direct"])
@pytest.mark.parametrize("method", ["gd", "nu"])
def test_patience_bounds_the_work_and_memory_of_a_long_path(client, method, solver):
    """max_iter=10**7 with n_iter_no_change: the stopping rule runs while the path is
    iterated, so the iterates formed, validated and held follow the iterations run (at
    most one validation block past the stop), not max_iter (which held every iterate: GBs
    here), with the in-memory fit's selection."""
    import tracemalloc

    X, y, sigma = data(n=2000)
    validated = []

    def progress(stage, done, total):
        if stage == "validation":
            validated.append(done)

    tracemalloc.start()
    try:
        fit = nd.nytro_path(da.from_array(X, chunks=500), da.from_array(y, chunks=500), sigma, n_centers=40,
                            validation_fraction=FRACTION, seed=SEED, method=method, max_iter=10**7,
                            n_iter_no_change=20, iterates="stepwise", solver=solver, progress=progress)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    run = fit.result.iterations_run
    assert run < 10**4 and peak < 16 * 2**20, (run, peak)
    # Blocks of 4 x patience iterates, then doubling: under 2 run + 80 formed; "direct" adds
    # the step's Lanczos estimate of lambda_max, at most k = 40 products.
    assert validated[-1] == run and run <= fit.result.products <= 2 * run + 80 + (40 if solver == "direct" else 0)
    expected = in_memory_path(X, y, sigma, fit, solver=solver, method=method, max_iter=10**7, n_iter_no_change=20,
                              iterates="stepwise")
    check_path(fit, expected, X.dtype)


# float64 with several outputs in direct mode: test_per_column_target_scales_equal_in_memory.
@pytest.mark.parametrize("dtype", [np.float32])
def test_direct_several_outputs_and_stopping(client, dtype):
    X, y, sigma = data(dtype=dtype, n_outputs=2)
    fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=(70, 2)), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, method="nu", max_iter=60, stopping="relative",
                        tol=0.002, solver="direct")
    assert fit.result.coef.dtype == dtype
    expected = in_memory_path(X, y, sigma, fit, solver="direct", method="nu", max_iter=60, stopping="relative",
                              tol=0.002)
    check_path(fit, expected, dtype)
    assert fit.result.iterations_run < 60


@pytest.mark.parametrize("method, max_iter", [("hybrid", 45), ("cg", 8)])
def test_direct_takes_one_pass_per_lanczos_step_for_all_outputs(client, method, max_iter):
    """solver="direct" with 3 outputs: the outputs' Lanczos processes step together, each
    step one map-reduce over the workers' blocks for all 3 (as the in-memory block
    product), with the in-memory direct solver's answer."""
    X, y, sigma = data(n_outputs=3)
    fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=(70, 3)), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, method=method, max_iter=max_iter, solver="direct")
    expected = in_memory_path(X, y, sigma, fit, solver="direct", method=method, max_iter=max_iter)
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_
    # The longest process' steps: max_iter, or the rank (40) where the space is invariant.
    assert fit.result.products == min(max_iter, 40), fit.result.products


# 500 iterations: the bound needs more vectors than 80 would (38 against 25 here).
@pytest.mark.parametrize("solver, n_outputs, dtype, storage", [
    ("gram", None, np.float64, None), ("direct", None, np.float64, None), ("gram", 3, np.float64, None),
    ("direct", 3, np.float64, None), ("gram", None, np.float32, None), ("direct", None, np.float64, "float32")])
def test_gd_lanczos_iterates_equal_in_memory(client, solver, n_outputs, dtype, storage):
    """iterates="lanczos": gd's iterates from the Lanczos bases, certified within 64
    machine epsilons of stepping, in far fewer products than max_iter; the in-memory
    core's iterates="lanczos" answer (its certification needs as many vectors in "gram"
    mode; "direct" adds the step's estimate, which the core shares with the basis). In
    float32 compute, or with K_i stored in float32, certified to 64 float32 epsilons."""
    X, y, sigma = data(n_outputs=n_outputs, dtype=dtype)
    yd = da.from_array(y, chunks=70 if n_outputs is None else (70, 3))
    fit = nd.nytro_path(da.from_array(X, chunks=70), yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION,
                        method="gd", max_iter=500, iterates="lanczos", solver=solver, storage=storage)
    expected = in_memory_path(X, y, sigma, fit, solver=solver, method="gd", max_iter=500, iterates="lanczos",
                              storage=storage)
    check_path(fit, expected, dtype)
    assert fit.result.products < 60, fit.result.products
    if solver == "gram":
        assert fit.result.products == expected.products


def _log_read(block, log, block_info=None):
    """The block, after appending its chunk index to the file `log` (one line per read)."""
    with open(log, "a") as f:
        f.write(f"{block_info[0]['chunk-location'][0]}\n")
    return block


def test_direct_reads_each_chunk_a_bounded_number_of_times(client, tmp_path):
    """The A_i blocks stay on the workers: with 15 or more products, each chunk is still read 2
    or 3 times (its training rows' blocks, its hold-out rows, and its centres if it holds
    any), not once per product."""
    X, y, sigma = data()
    log = str(tmp_path / "reads")
    Xd = da.from_array(X, chunks=60).map_blocks(_log_read, log, meta=np.empty((0, 0), X.dtype))
    fit = nd.nytro_path(Xd, da.from_array(y, chunks=60), sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION,
                        method="nu", max_iter=15, solver="direct")
    assert fit.result.products >= 15
    reads = np.bincount(np.loadtxt(log, dtype=int), minlength=5)
    assert (reads >= 2).all() and (reads <= 3).all(), reads


def test_auto_chooses_by_the_cost_model():
    """gram: 2 n k^2 + k^3 flops; direct: 4 n k per product, max_iter products, and
    n k values per worker within half its memory_limit."""
    n, k = 10**6, 1000
    assert nd._cluster._choose_solver("auto", "gd", n, k, 100, 8, [2**40, 2**40]) == "direct"   # 4T < 2k
    assert nd._cluster._choose_solver("auto", "gd", n, k, 600, 8, [2**40, 2**40]) == "gram"     # 4T > 2k
    assert nd._cluster._choose_solver("auto", "cg", n, k, 100, 8, [2**30, 2**30]) == "gram"     # 4 GB each > 0.5 GiB
    assert nd._cluster._choose_solver("auto", "cg", n, k, 100, 8, [0, 0]) == "direct"           # no limit
    assert nd._cluster._choose_solver("auto", "hybrid", n, k, 10, 8, [0]) == "gram"
    assert nd._cluster._choose_solver("auto", "gd", n, k, 10, 8, None) == "gram"                # no cluster
    assert nd._cluster._choose_solver("direct", "gd", n, k, 600, 8, None) == "direct"


def test_auto_prices_the_path_the_core_prices():
    """The products priced, the core's own (nytro._core.expected_path_length): gd's
    Lanczos count, an early-stopped cg or hybrid path's expected length (100 +
    n_iter_no_change, within max_iter), else max_iter; "planned", the most it can take."""
    from nytro import _dask_options as dopt
    from nytro import options as opt
    k = 1000

    def priced(method, max_iter, validated=True, stopping="best", n_iter_no_change=50, dtype=np.float64):
        values = opt.merged(dopt.DASK_NYTRO, None, dict(method=method, max_iter=max_iter, stopping=stopping,
                                                       n_iter_no_change=n_iter_no_change))
        return nd._paths._expected_path_length(values, dtype, k, validated)

    lanczos = priced("gd", 500)
    assert lanczos["products"] == lanczos["planned"] == min(500, 8 + 4 * 500 ** 0.25)
    assert priced("gd", 500, dtype=np.float32)["products"] == 500   # float32: stepwise iterates
    assert priced("cg", 500)["products"] == 150
    assert priced("cg", 500)["planned"] == 500
    assert priced("hybrid", 120)["products"] == 120
    assert priced("cg", 500, n_iter_no_change=None)["products"] == 500   # no patience
    assert priced("cg", 500, validated=False)["products"] == 500         # no hold-out set
    assert priced("cg", 500, stopping="window")["products"] == 500
    assert priced("nu", 500)["products"] == 500
    # At 150 products direct wins where the 500 of the whole path go to gram.
    n, big = 10**6, [2**40, 2**40]
    assert nd._cluster._choose_solver("auto", "cg", n, 700, 150, 8, big) == "direct"
    assert nd._cluster._choose_solver("auto", "cg", n, 700, 500, 8, big) == "gram"


def test_auto_counts_each_products_round_trip():
    """Each of direct's max_iter products is a round trip to the scheduler, A^T A one: a
    round trip of L seconds weighs L x (the workers' flop/s) flops on each side."""
    n, k, T = 10**6, 1000, 100
    big = [2**40, 2**40]
    flops = 1e11
    # Without latency: 4 T n k = 4e11 < 2 n k^2 + k^3 = 2.001e12.
    assert nd._cluster._choose_solver("auto", "gd", n, k, T, 8, big, latency=0.0, flops=flops) == "direct"
    # Break-even: T (4 n k + L F) = 2 n k^2 + k^3 + L F, at L F = (2.001e12 - 4e11) / 99.
    even = (2 * n * k * k + k**3 - 4 * T * n * k) / (T - 1) / flops
    assert nd._cluster._choose_solver("auto", "gd", n, k, T, 8, big, latency=0.99 * even, flops=flops) == "direct"
    assert nd._cluster._choose_solver("auto", "gd", n, k, T, 8, big, latency=1.01 * even, flops=flops) == "gram"
    # A LocalCluster's ~10 ms at 1e11 flop/s is 1e9 flops a product: gram for a small problem
    # that direct wins on flops alone.
    assert nd._cluster._choose_solver("auto", "cg", 200, 40, 8, 8, big) == "direct"
    assert nd._cluster._choose_solver("auto", "cg", 200, 40, 8, 8, big, latency=0.01, flops=flops) == "gram"
    # One product (max_iter=1) costs one round trip, as A^T A does: flops alone decide.
    assert nd._cluster._choose_solver("auto", "gd", n, k, 1, 8, big, latency=1.0, flops=flops) == "direct"
    assert nd._cluster._choose_solver("direct", "gd", n, k, T, 8, big, latency=1.0, flops=flops) == "direct"


def test_auto_on_a_cluster_weighs_its_round_trips(client, monkeypatch):
    """On the LocalCluster the round trip (milliseconds) outweighs the small problem's
    flops: "gram"; with it taken as free, "direct" (4 x 8 < 2 x 40, and the blocks are
    small), each with the in-memory answer of the solver that ran."""
    X, y, sigma = data()
    monkeypatch.setattr(nd._cluster, "_ROUND_TRIPS", {})  # measured here, whatever ran before
    args = dict(n_centers=40, seed=SEED, validation_fraction=FRACTION, method="cg", max_iter=8, solver="auto")
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, **args)
    assert fit.result.solver == "gram"
    check_path(fit, in_memory_path(X, y, sigma, fit, solver="gram", method="cg", max_iter=8), X.dtype)
    assert len(nd._cluster._ROUND_TRIPS) == 1 and 0 < next(iter(nd._cluster._ROUND_TRIPS.values())) < 5
    monkeypatch.setattr(nd._cluster, "_round_trip_seconds", lambda client, chunks, split_every: 0.0)
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, **args)
    assert fit.result.solver == "direct"
    check_path(fit, in_memory_path(X, y, sigma, fit, solver="direct", method="cg", max_iter=8), X.dtype)
    # gd stepped: 80 products outweigh A^T A (80 > 40 / 2); by Lanczos (iterates "auto" in
    # float64), as the core counts its products, 8 + 4 x 80^(1/4) = 20 do not.
    gd = {**args, "method": "gd", "max_iter": 80}
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, **gd, iterates="stepwise")
    assert fit.result.solver == "gram"
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, **gd)
    assert fit.result.solver == "direct"
    check_path(fit, in_memory_path(X, y, sigma, fit, solver="direct", method="gd", max_iter=80), X.dtype)


@pytest.mark.parametrize("stopping, options", [("relative", {"tol": 0.002}), ("window", {"tol": 1e-3}),
                                               ("best", {"n_iter_no_change": 5})])
def test_stopping_rules_equal_in_memory(client, stopping, options):
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, method="gd", max_iter=200, stopping=stopping,
                        **options)
    expected = in_memory_path(X, y, sigma, fit, method="gd", max_iter=200, stopping=stopping, **options)
    check_path(fit, expected, X.dtype)
    assert fit.result.iterations_run < 200  # the rule stopped the path


@pytest.mark.parametrize("method", ["nu", "hybrid"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_several_outputs(client, method, dtype):
    X, y, sigma = data(dtype=dtype, n_outputs=3)
    fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=(70, 3)), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, method=method, max_iter=25)
    assert fit.result.coef.dtype == dtype and fit.result.coef.shape == (40, 3)
    expected = in_memory_path(X, y, sigma, fit, method=method, max_iter=25)
    check_path(fit, expected, dtype)
    assert fit.result.lambda_ == expected.lambda_
    if method == "hybrid":
        assert 1e-15 < fit.result.lambda_ < 1  # selected inside the grid


@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nkrls_equals_in_memory(client, dtype, solver):
    """Along the default grid of 100 lambdas; "cholesky" solves each shifted system by its
    own factorisation (the eigendecomposition where one fails), as the core does."""
    X, y, sigma = data(dtype=dtype)
    fit = nd.nkrls_path(da.from_array(X, chunks=45), da.from_array(y, chunks=45), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, solver=solver)
    train, held = split(len(X))
    expected = nytro.nkrls_path(X[train], y[train], X[fit.center_rows], sigma, X_val=X[held], y_val=y[held],
                                n_threads=1, solver=solver)
    assert fit.result.selected == expected.selected and fit.result.lambda_ == expected.lambda_
    assert 0 < fit.result.selected < 99
    assert_close(fit.result.validation_rmse, expected.validation_rmse, dtype, "validation path")
    assert_close(fit.result.coef, expected.coef, dtype, "coef")


def test_shifted_solves_follow_the_cores_solvers():
    """The client's Tikhonov solves of A^T A, as the core's: "eigh" clips the eigenvalues
    at 0 for every shift; "cholesky" solves each shifted matrix as it is (an eigenvalue of
    -1e-3, from rounding, shifted by 1e-2: 1 / 9e-3, not 1 / 1e-2), and where the shifted
    matrix is not positive definite (shift 1e-4) falls back to the clipped
    eigendecomposition."""
    rng = np.random.default_rng(0)
    V, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    w = np.array([-1e-3, 0.5, 1.0, 2.0, 3.0, 4.0])
    H = (V * w) @ V.T
    H = (H + H.T) / 2
    c = rng.standard_normal((6, 2))
    shifts = [1e-2, 1e-4]
    clipped = [V @ ((V.T @ c) / (np.maximum(w, 0) + s)[:, None]) for s in shifts]
    np.testing.assert_allclose(shifted_solves(H, c, shifts, "eigh", np.dtype(np.float64)),
                               np.hstack(clipped), rtol=1e-10)
    exact = np.linalg.solve(H + shifts[0] * np.eye(6), c)
    np.testing.assert_allclose(shifted_solves(H, c, shifts, "cholesky", np.dtype(np.float64)),
                               np.hstack([exact, clipped[1]]), rtol=1e-10)
    assert relative_error(exact, clipped[0]) > 0.01


@pytest.mark.parametrize("solver, storage", [("gram", None), ("direct", None), ("direct", "float32")])
def test_chunks_of_one_row(client, solver, storage):
    """23 chunks of one row (more chunks than rows per worker): each chunk is all
    training or all hold-out rows; in "direct" mode a held-out row's chunk keeps an empty
    block (the kernel of no rows, which the core refuses to form)."""
    X, y, sigma = data(n=23, m=6)
    fit = nd.nytro_path(da.from_array(X, chunks=1), da.from_array(y, chunks=1), sigma, n_centers=6,
                        seed=SEED, validation_fraction=FRACTION, method="cg", max_iter=5, solver=solver,
                        storage=storage)
    assert fit.result.solver == solver and 0 < fit.n_val < len(X)
    check_path(fit, in_memory_path(X, y, sigma, fit, solver=solver, storage=storage, method="cg", max_iter=5),
               X.dtype)


def test_empty_chunks_are_skipped(client):
    X, y, sigma = data()
    rows = (100, 0, 90, 0, 67)
    fit = nd.nytro_path(da.from_array(X, chunks=(rows, 4)), da.from_array(y, chunks=(rows,)), sigma,
                        n_centers=40, seed=SEED, validation_fraction=FRACTION, method="gd", max_iter=30)
    check_path(fit, in_memory_path(X, y, sigma, fit, method="gd", max_iter=30), X.dtype)


def test_estimators_fit_and_predict_dask_arrays(client):
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    est = nytro.NytroRegressor(40, sigma, method="cg", max_iter=8, n_iter_no_change=None, validation_fraction=FRACTION,
                               random_state=3, solver="direct", fit_intercept=False).fit(Xd, yd)
    seed = int(np.random.RandomState(3).randint(0, 2**63 - 1, dtype=np.int64))
    train, held = (~nd.holdout_mask(np.arange(len(X)), FRACTION, seed), nd.holdout_mask(np.arange(len(X)),
                                                                                          FRACTION, seed))
    expected = nytro.nytro_path(X[train], y[train], est.centers_, sigma, X_val=X[held], y_val=y[held],
                                method="cg", max_iter=8, solver="direct", n_threads=1)
    assert est.n_iter_ == expected.n_iter and est.solver_ == "direct"
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    assert_close(est.validation_rmse_, expected.validation_rmse, X.dtype, "validation_rmse_")
    with_numpy_y = nytro.NytroRegressor(40, sigma, method="cg", max_iter=8, n_iter_no_change=None,
                                        validation_fraction=FRACTION, random_state=3, solver="direct",
                                        fit_intercept=False).fit(Xd, y)
    np.testing.assert_array_equal(with_numpy_y.coef_, est.coef_)  # y in memory: cut into X's chunks
    predicted = est.predict(Xd)
    assert isinstance(predicted, da.Array) and predicted.chunks == Xd.chunks[:1]
    np.testing.assert_allclose(predicted.compute(), est.predict(X), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="X has 3 features but the centres have 4"):
        est.predict(Xd[:, :3])
    with pytest.raises(ValueError) as in_memory:  # 1-D centres: the in-memory error, not an IndexError
        nytro.kernel_predict(X, X[0], est.coef_[:4], sigma)
    with pytest.raises(ValueError) as on_dask:
        nd.predict(Xd, X[0], est.coef_[:4], sigma)
    assert str(on_dask.value) == str(in_memory.value)

    # method "hybrid"; no intercept, as the function fits
    default = nytro.NytroRegressor(40, sigma, validation_fraction=FRACTION, random_state=3, fit_intercept=False).fit(
        Xd, yd)
    expected = nytro.nytro_path(X[train], y[train], default.centers_, sigma, X_val=X[held], y_val=y[held],
                                method="hybrid", n_iter_no_change=50, n_threads=1)
    assert (default.n_iter_, default.lambda_) == (expected.n_iter, expected.lambda_)
    assert_close(default.coef_, expected.coef, X.dtype, "hybrid coef_")

    krls = nytro.NystromKRLSRegressor(40, sigma, validation_fraction=FRACTION, random_state=3,
                                      fit_intercept=False).fit(Xd, yd)
    expected = nytro.nkrls_path(X[train], y[train], krls.centers_, sigma, X_val=X[held], y_val=y[held],
                                n_threads=1)
    assert krls.lambda_ == expected.lambda_
    assert_close(krls.coef_, expected.coef, X.dtype, "NKRLS coef_")


@pytest.mark.parametrize("weighted", [False, True])
def test_fit_intercept_centres_as_in_memory(client, weighted):
    """The weighted mean of each output, from one pass over y, is intercept_; the path is
    fitted to y less it, as in memory, and predict adds it back."""
    X, y, sigma = data(n_outputs=2)
    Y = y + np.array([1e4, -3.0])
    w = np.random.default_rng(2).uniform(0.5, 2, len(X)) if weighted else None
    Xd, Yd = da.from_array(X, chunks=60), da.from_array(Y, chunks=(60, 2))
    params = dict(method="cg", max_iter=8, n_iter_no_change=None, validation_fraction=FRACTION, random_state=3,
                  solver="direct", fit_intercept=True)
    est = nytro.NytroRegressor(40, sigma, **params).fit(Xd, Yd, sample_weight=w)
    intercept = np.average(Y, axis=0, weights=w)
    np.testing.assert_allclose(est.intercept_, intercept, rtol=1e-13)
    seed = int(np.random.RandomState(3).randint(0, 2**63 - 1, dtype=np.int64))
    held = nd.holdout_mask(np.arange(len(X)), FRACTION, seed)
    weights = {} if w is None else {"sample_weight": w[~held], "sample_weight_val": w[held]}
    expected = nytro.nytro_path(X[~held], Y[~held] - intercept, est.centers_, sigma, X_val=X[held],
                                y_val=Y[held] - intercept, method="cg", max_iter=8, solver="direct", n_threads=1,
                                **weights)
    assert est.n_iter_ == expected.n_iter
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    np.testing.assert_allclose(est.predict(Xd).compute(), est.predict(X), rtol=1e-12)
    kernel = nytro.kernel_matrix(X, est.centers_, sigma=sigma)
    np.testing.assert_allclose(est.predict(X), kernel @ est.coef_ + intercept, rtol=1e-12)
    one = nytro.NystromKRLSRegressor(40, sigma, validation_fraction=FRACTION, random_state=3,
                                     fit_intercept=True).fit(Xd, Y[:, 0], sample_weight=w)  # y in memory
    assert isinstance(one.intercept_, float) and one.intercept_ == pytest.approx(intercept[0], rel=1e-13)
    if weighted:  # integers times 2^-1070 (subnormal, exact): the same mean, as in memory
        counts = np.round(4 * w) + 1
        tiny = nytro.NytroRegressor(40, sigma, **params).fit(Xd, Yd, sample_weight=da.from_array(
            np.ldexp(counts, -1070), chunks=45))
        np.testing.assert_allclose(tiny.intercept_, np.average(Y, axis=0, weights=counts), rtol=1e-13)


def test_nan_in_one_chunk_gives_the_in_memory_error(client):
    X, y, sigma = data()
    X[200, 1] = np.nan  # in chunk 4 of 60-row chunks (a centre or not, the message is the same)
    with pytest.raises(ValueError) as in_memory:
        nytro.nytro_path(X, y, X[:5], sigma)
    with pytest.raises(ValueError) as on_dask:
        nd.nytro_path(da.from_array(X, chunks=60), da.from_array(y, chunks=60), sigma, n_centers=5, seed=SEED)
    assert str(on_dask.value) == str(in_memory.value)
    with pytest.raises(ValueError) as in_memory:
        nytro.NytroRegressor(5, sigma, method="cg").fit(X, y)
    with pytest.raises(ValueError) as on_dask:
        nytro.NytroRegressor(5, sigma, method="cg").fit(da.from_array(X, chunks=60), da.from_array(y, chunks=60))
    assert str(on_dask.value) == str(in_memory.value)


def test_unknown_chunk_sizes_are_refused_clearly(client):
    X, y, sigma = data()
    Xd = da.from_array(X, chunks=60)
    keep = Xd[:, 0] > -100  # every row, but Dask cannot know how many per chunk
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        nd.nytro_path(Xd[keep], da.from_array(y, chunks=60)[keep], sigma, n_centers=5)
    with pytest.raises(ValueError, match="^y has unknown chunk sizes.*compute_chunk_sizes"):
        nd.nytro_path(Xd, da.from_array(y, chunks=60)[keep], sigma, n_centers=5)
    # Once known, the same rows fit; prediction needs no offsets and takes unknown chunks.
    fit = nd.nytro_path(Xd[keep].compute_chunk_sizes(), da.from_array(y, chunks=60)[keep].compute_chunk_sizes(),
                        sigma, n_centers=5, seed=SEED)
    predicted = nd.predict(Xd[keep], fit.centers, fit.result.coef, sigma)
    assert np.isnan(predicted.shape[0])
    # The estimators check X before the passes that precede the fit's (a classifier's
    # labels, the intercept's means), and an array of unknown sizes is not taken for one
    # of the wrong length.
    for est, target in ((nytro.NytroClassifier(5, sigma), y > 0), (nytro.NytroRegressor(5, sigma, fit_intercept=True),
                                                                     y)):
        with pytest.raises(ValueError, match="^X has unknown chunk sizes.*compute_chunk_sizes"):
            est.fit(Xd[keep], target)
    with pytest.raises(ValueError, match="^y has unknown chunk sizes.*compute_chunk_sizes"):
        nytro.NytroClassifier(5, sigma).fit(Xd, da.from_array(y > 0, chunks=60)[keep])
    with pytest.raises(ValueError, match="^sample_weight has unknown chunk sizes.*compute_chunk_sizes"):
        nd.nytro_path(Xd, y, sigma, n_centers=5, sample_weight=da.ones(len(X), chunks=60)[keep])
    np.testing.assert_allclose(predicted.compute(), nytro.kernel_predict(X, fit.centers, fit.result.coef, sigma),
                               rtol=1e-12, atol=1e-12)


def test_empty_x_and_misshapen_y_give_the_in_memory_errors(client):
    """X of no rows or no features: the in-memory fit's error (scikit-learn's, for an
    estimator), not a failure inside the passes; a NumPy y of the wrong length or
    dimension: the error naming y, not Dask's on cutting it into X's chunks."""
    X, y, sigma = data(n=40)
    Xd = da.from_array(X, chunks=20)
    for est, target in ((nytro.NytroRegressor(5, sigma), y), (nytro.NytroRegressor(5, sigma, fit_intercept=True), y),
                        (nytro.NystromKRLSRegressor(5, sigma), y), (nytro.NytroClassifier(5, sigma), y > 0)):
        for rows, columns in ((slice(0, 0), slice(None)), (slice(None), slice(0, 0))):
            with pytest.raises(ValueError) as in_memory:
                est.fit(X[rows, columns], target[rows])
            with pytest.raises(ValueError) as on_dask:
                est.fit(Xd[rows, columns], target[rows])
            assert str(on_dask.value) == str(in_memory.value)
    with pytest.raises(ValueError, match=r"^X is empty \(shape \(0, 4\)\)"):
        nd.nytro_path(Xd[:0], y[:0], sigma, n_centers=5)
    for est in (nytro.NytroRegressor(5, sigma), nytro.NytroRegressor(5, sigma, fit_intercept=True)):
        with pytest.raises(ValueError, match="^y has 39 rows but X has 40"):
            est.fit(Xd, y[:-1])
        for bad in (y[:, None, None], y[:, None][:, :0], y[0]):  # no outputs, or no rows: no IndexError
            with pytest.raises(ValueError, match=rf"^y must be 1-D .* got shape {re.escape(str(np.shape(bad)))}$"):
                est.fit(Xd, bad)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_chunks_are_refused_by_name(client):
    """Chunks of scipy.sparse matrices: a TypeError naming X and the sparse chunks (the
    centres' rows were taken from them as from a 0-d array of one object: IndexError),
    while the same rows as one in-memory scipy.sparse matrix are fitted (nytro._sparse)."""
    import scipy.sparse
    X, y, sigma = data(n=40)
    Xs = da.from_array(X, chunks=20).map_blocks(scipy.sparse.csr_matrix, meta=scipy.sparse.csr_matrix((0, 0)))
    est = nytro.NytroRegressor(5, sigma, method="cg", max_iter=3, random_state=0)
    est.fit(scipy.sparse.csr_matrix(X), y)
    for fit in (lambda: est.fit(Xs, y), lambda: est.set_params(centers=np.arange(5)).fit(Xs, y),
                lambda: est.set_params(centers=None).fit(X, y).predict(Xs).compute()):
        with pytest.raises(TypeError, match="X: Dask arrays with scipy.sparse chunks are not supported yet"):
            fit()


def test_what_is_not_supported_yet_says_so(client):
    X, y, sigma = data(n=40)
    Xd, yd = da.from_array(X, chunks=20), da.from_array(y, chunks=20)
    with pytest.raises(NotImplementedError, match="storage='float16' is not supported on Dask"):
        nytro.NytroRegressor(5, sigma, storage="float16").fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="solver='spectral'.*'gram', 'direct'"):
        nytro.NytroRegressor(5, sigma, method="cg", solver="spectral").fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="KRLSRegressor does not take Dask arrays"):
        nytro.KRLSRegressor(sigma).fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="n_centers='auto' is fitted in memory only.*Dask arrays"):
        nytro.NytroRegressor("auto", sigma).fit(Xd, yd)
    with pytest.raises(ValueError, match="method='nope'"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, method="nope")


def test_tasks_use_their_workers_threads(client):
    """The C++ calls of a task on a 1-thread worker get 1 thread, whatever the cores."""
    threads = client.gather([client.submit(nd._cluster._task_threads, None, pure=False) for _ in range(4)])
    assert threads == [1, 1, 1, 1]
    assert client.submit(nd._cluster._task_threads, 8, pure=False).result() == 1


def _die_once(block, marker):
    """The block, after killing this worker process the first time any task runs it
    (the marker file, created atomically, says it has happened)."""
    import os
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return block
    os._exit(1)


def test_a_worker_killed_mid_fit_changes_nothing(client, tmp_path):
    """A worker dies while computing a chunk; its nanny restarts it, the scheduler reruns
    the chunk's tasks (the scattered centres and R still live on the other worker), and
    the fit equals the undisturbed one."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    options = dict(n_centers=40, seed=SEED, validation_fraction=FRACTION, method="nu", max_iter=40)
    expected = nd.nytro_path(Xd, yd, sigma, **options).result
    marker = str(tmp_path / "died")
    dying = Xd.map_blocks(_die_once, marker, meta=np.empty((0, 0), X.dtype))  # meta: never run on the client
    result = nd.nytro_path(dying, yd, sigma, **options).result
    assert (tmp_path / "died").exists()
    assert result.n_iter == expected.n_iter
    assert_close(result.validation_rmse, expected.validation_rmse, X.dtype, "validation path")
    assert_close(result.coef, expected.coef, X.dtype, "coef")
    client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


def _direct_fit_disturbed(monkeypatch, disturb):
    """A direct "cg" fit of data() (8 products) with disturb(operator) called once, before
    its fourth product; checked against the in-memory direct fit."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    options = dict(method="cg", max_iter=8, solver="direct")
    product = nd._passes._DirectOperator.__call__
    disturbed = []

    def disturbed_before_the_fourth(self, B):
        if self.products == 3 and not disturbed:
            disturb(self)
            disturbed.append(True)
        return product(self, B)

    monkeypatch.setattr(nd._passes._DirectOperator, "__call__", disturbed_before_the_fourth)
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, **options)
    assert disturbed and fit.result.products == 8
    check_path(fit, in_memory_path(X, y, sigma, fit, **options), X.dtype)


def test_a_worker_killed_between_direct_products_changes_nothing(client, monkeypatch):
    """solver="direct": a worker holding persisted K_i blocks dies between two products
    of the path (its nanny restarts it empty); the scheduler recomputes the lost blocks
    again, and the fit equals the in-memory one (a product cancelled by the loss is
    repeated, never summed from the surviving workers' parts). On the code without the
    rebuild, the product failed with distributed's FutureCancelledError."""
    import os

    # Both workers up first: the test before this one kills a worker too, and its
    # replacement may still be registering. Seen once in CI under load: that worker
    # registered during this fit, and the fit failed as a loss twice in one product.
    client.wait_for_workers(2, timeout=60)

    def kill_a_holder(operator):
        holders = {w for ws in client.who_has(list(operator.blocks)).values() for w in ws}
        victim = sorted(holders)[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, 9)  # no goodbye: the scheduler learns of it from the broken connection

    _direct_fit_disturbed(monkeypatch, kill_a_holder)
    client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


def _pause_for(seconds, dask_worker):
    """Pause this worker (no new tasks start on it) for `seconds` (run on its event loop)."""
    from distributed.core import Status
    dask_worker.status = Status.paused
    dask_worker.loop.call_later(seconds, setattr, dask_worker, "status", Status.running)


class _BlockReaders(distributed.diagnostics.plugin.SchedulerPlugin):
    """On the scheduler: for each task that reads a kept block, whether it may run only on
    the worker that holds (or will compute) the block; and how many product tasks came."""

    name = "nytro-block-readers"

    def __init__(self):
        self.pinned, self.products = [], 0

    def update_graph(self, scheduler, *, tasks, **kwargs):
        for key in tasks:
            ts = scheduler.tasks.get(key)
            if ts is None or ts.prefix.name not in ("direct_rhs", "direct_product"):  # key_split drops the "_"
                continue
            self.products += ts.prefix.name == "direct_product"
            block = next(d for d in ts.dependencies if d.prefix.name == "direct_block")
            where = {w.address for w in block.who_has or ()} or block.worker_restrictions
            self.pinned.append(bool(where) and ts.worker_restrictions == set(where) and not ts.loose_restrictions)


def _blocks_moved(dask_worker):
    """The _direct_block results this worker has fetched from another (its transfer log)."""
    return [key for entry in dask_worker.transfer_incoming_log for key in entry["keys"]
            if str(key).startswith("_direct_block")]


def test_direct_products_run_where_their_blocks_are(client):
    """No K_i block moves: the tasks that compute a block and its A^T y share may run only
    on the worker chosen for it (they wait while it is paused, the other worker free),
    and the products are no tasks: each worker sums its own blocks' shares. The code that
    left the placement to the scheduler pinned nothing: its work stealing moved product
    tasks to an idle worker, which fetched their blocks (a GB each at the 10^6-row
    benchmark's size, at every product)."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    options = dict(method="cg", max_iter=8, solver="direct")
    client.register_plugin(_BlockReaders())
    client.run(lambda dask_worker: dask_worker.transfer_incoming_log.clear())
    # Paused for longer than the blocks' computation waits before checking its workers.
    client.run(_pause_for, 4 * getattr(nd._passes._DirectOperator, "_patience", 0.5),
               workers=[sorted(client.has_what())[0]])
    try:
        fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, **options)
        pinned, products = client.run_on_scheduler(
            lambda dask_scheduler: (dask_scheduler.plugins[_BlockReaders.name].pinned,
                                    dask_scheduler.plugins[_BlockReaders.name].products))
    finally:
        client.unregister_scheduler_plugin(_BlockReaders.name)
    assert fit.result.products == 8 and products == 0
    assert len(pinned) == 7 and all(pinned)  # A^T y's shares, over 7 chunks
    assert not any(client.run(_blocks_moved).values())
    check_path(fit, in_memory_path(X, y, sigma, fit, **options), X.dtype)


class _Messages:
    """Counts the client's graphs sent to the scheduler and its scatters."""

    def __init__(self, monkeypatch):
        self.graphs = self.scatters = 0
        graph, scatter = distributed.Client._graph_to_futures, distributed.Client.scatter

        def counted_graph(*args, **kwargs):
            self.graphs += 1
            return graph(*args, **kwargs)

        def counted_scatter(*args, **kwargs):
            self.scatters += 1
            return scatter(*args, **kwargs)

        monkeypatch.setattr(distributed.Client, "_graph_to_futures", counted_graph)
        monkeypatch.setattr(distributed.Client, "scatter", counted_scatter)


def _faults_per_buffer(mib):
    """Minor page faults per MiB of a buffer of `mib` MiB allocated, written and freed in
    this process (256 where each is a fresh mapping)."""
    import resource
    first = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        np.ones(mib << 17).sum()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - first) / (20 * mib)


def _kept_after_free(mib, count):
    """MiB of RSS this process still holds after a thread other than the main one (as a
    worker's task thread, whose allocations come from an arena of its own) allocated
    `count` arrays of `mib` MiB, each followed by a small array that stays (128 KiB, from
    the heap under any worker setting), and freed the large ones: the pattern of a
    worker's chunks, freed between allocations that live on."""
    import threading

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    small, kept = [], []

    def allocate():
        before, large = rss(), []
        for _ in range(count):
            large.append(np.ones(mib << 17))
            small.append(np.ones(1 << 14))
        del large
        kept.append((rss() - before) / 2**20)

    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
    return kept[0]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_workers_reuse_buffers_after_a_fit(client):
    """distributed's nanny sets MALLOC_TRIM_THRESHOLD_ in its workers, which makes every
    buffer past 128 KiB a fresh mmap: the core's 0.5-2 MiB packing buffers (at every
    output tile) were page-faulted anew (256 faults a MiB), and a chunk's normal equations
    ran up to 1.3x slower than in a plain process. After a fit's first C++ call a worker's
    freed buffers of those sizes are reused, and chunk-sized ones (8 MiB) are returned to
    the OS when freed: with a 32 MiB mmap threshold the holes they left in the heap were
    kept (issue 47), and a fit from a zarr store raised a worker's unmanaged memory past
    distributed's spill threshold."""
    assert all(env.get("MALLOC_TRIM_THRESHOLD_") for env in client.run(lambda: dict(os.environ)).values())
    X, y, sigma = data()
    nd.nytro_path(da.from_array(X, chunks=60), da.from_array(y, chunks=60), sigma, n_centers=20, seed=SEED,
                  validation_fraction=FRACTION, method="cg", max_iter=2, solver="gram")
    for mib in (1, 3):
        assert all(faults < 16 for faults in client.run(_faults_per_buffer, mib).values()), mib
    # 8 x 8 MiB freed; the 8 small arrays (1 MiB) stay.
    kept = client.run(_kept_after_free, 8, 8)
    assert all(mib < 16 for mib in kept.values()), kept


def test_direct_blocks_are_sent_before_the_factor(client, monkeypatch):
    """solver="direct": the kept blocks need the centres only, so their graph goes out
    before the client factors K_mm, and the workers compute them meanwhile (the second
    graph of the fit, after the split, which gathers the centres); the fit is unchanged."""
    X, y, sigma = data()
    messages = _Messages(monkeypatch)
    sent = []
    parts = nd._fit._nystrom_factor_parts

    def factor(*args, **kwargs):
        sent.append(messages.graphs)
        return parts(*args, **kwargs)

    monkeypatch.setattr(nd._fit, "_nystrom_factor_parts", factor)
    fit = nd.nytro_path(da.from_array(X, chunks=60), da.from_array(y, chunks=60), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method="cg", max_iter=8, solver="direct")
    assert sent == [2] and messages.graphs == 2
    check_path(fit, in_memory_path(X, y, sigma, fit, solver="direct", method="cg", max_iter=8), X.dtype)


def _persisted_on(client, X, y, chunks, home):
    """X and y as Dask arrays of `chunks` rows, chunk b persisted on worker home(b, workers)."""
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])

    def where(key):
        return [home(key[1], workers)] if isinstance(key, tuple) and len(key) > 1 else None

    with dask.annotate(workers=where, allow_other_workers=False):
        Xd, yd = da.from_array(X, chunks=(chunks, -1)), da.from_array(y, chunks=chunks)
    Xd, yd = client.persist([Xd, yd], optimize_graph=False)
    distributed.wait([Xd, yd])
    return Xd, yd, workers


def _gram_tasks_by_worker(client, Xd, yd, sigma):
    """Where each chunk's gram task ran in a gram fit: {task: worker}."""
    with distributed.get_task_stream(client) as stream:
        nd.nytro_path(Xd, yd, sigma, n_centers=20, seed=SEED, validation_fraction=FRACTION, method="cg", max_iter=4,
                      solver="gram")
    ran = {str(record["key"]): record["worker"] for record in stream.data if "_gram_part" in str(record["key"])}
    assert len(ran) == len(nd._data._blocks(nd._data._as_dask_data(Xd, yd, None)))
    return ran


def test_chunk_tasks_run_where_their_chunks_are_persisted(client):
    """Persisted chunks, spread evenly: each chunk's gram task, and each kept block of the
    direct mode, is computed on the worker holding the chunk. The broadcast centres and
    factor made every worker a candidate for every task, and the scheduler sometimes ran
    three of four chunks' tasks on one worker; the direct mode handed the blocks to the
    workers in turn, moving the chunks."""
    X, y, sigma = data()
    Xd, yd, workers = _persisted_on(client, X, y, 17, lambda b, workers: workers[b // 2 % len(workers)])
    blocks = nd._data._blocks(nd._data._as_dask_data(Xd, yd, None))
    holders = [sorted(client.who_has([x.dask[x.key]])[x.key])[0] for x, _, _, _ in blocks]
    assert nd._cluster._placement(blocks) == holders
    ran = _gram_tasks_by_worker(client, Xd, yd, sigma)
    assert sorted(ran.values()) == sorted(holders)
    # The direct mode's kept blocks too: computed where their chunks are, no chunk moved.
    op = nd._passes._DirectOperator(nd._data._as_dask_data(Xd, yd, None), FRACTION, SEED, X[:20], np.eye(20),
                                    nd._data._Kernel("gaussian", sigma, 1.5), None, None, None)
    assert op._homes == holders
    assert op.rhs().shape == (20, 1)


def test_chunk_tasks_are_shared_where_one_worker_holds_every_chunk(client):
    """Every chunk persisted on one worker: the chunks' tasks are still shared between the
    workers by their threads (half each here), the extra ones on the least loaded."""
    X, y, sigma = data()
    Xd, yd, workers = _persisted_on(client, X, y, 17, lambda b, workers: workers[0])
    blocks = nd._data._blocks(nd._data._as_dask_data(Xd, yd, None))
    homes = nd._cluster._placement(blocks)
    assert homes.count(workers[0]) == homes.count(workers[1]) == len(blocks) // 2
    ran = _gram_tasks_by_worker(client, Xd, yd, sigma)
    assert sorted(ran.values()) == sorted(homes)


def _threads_of_a_product(block, B, n_threads):
    """A direct product's stand-in: the threads its C++ call would take, and the product."""
    return np.array([nd._cluster._task_threads(n_threads),
                     float(np.sum(nd._passes._direct_product(block, B, n_threads)))])


def test_direct_products_use_each_workers_own_threads(client):
    """The direct products run in each worker's thread pool outside any task, where
    distributed's get_worker finds no worker: they must still take the worker's nthreads
    (1 here), not every core of the machine (the two workers' C++ calls would then share
    the cores twice over). Their sum is K^T (K B) over the training rows."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    d = nd._data._as_dask_data(Xd, yd, None)
    C = X[:20]
    op = nd._passes._DirectOperator(d, FRACTION, SEED, C, np.eye(20), nd._data._Kernel("gaussian", sigma, 1.5), None,
                                    None, None)
    B = np.linspace(-1, 1, 20)[:, None]
    threads, total = op._sum(_threads_of_a_product, (2,), B, None)
    assert threads == len(op.blocks)  # one thread per block's product
    held = nd.holdout_mask(np.arange(len(X)), FRACTION, SEED)
    K = nytro.kernel_matrix(X[~held], C, sigma=sigma)
    assert total == pytest.approx(float(np.sum(K.T @ (K @ B))), rel=1e-12)


@pytest.mark.parametrize("solver", ["gram", "direct"])
def test_a_fit_takes_one_round_trip_per_pass(client, monkeypatch, solver):
    """A fit sends these graphs and nothing else: the split counts, which also gather the
    centres (drawn by the client before it, the data being small), the normal equations
    (direct: the kept blocks with their A^T y and the hold-out rows), and in gram mode the
    hold-out errors; the small centres, R and coefficients travel inside the graphs, and
    the direct mode's products and hold-out errors ask the workers directly. Earlier code
    scattered the arrays first (two more round trips a fit), gathered the centres in a
    graph of their own, took A^T y in a pass of its own, sent a graph per product (13
    graphs here), then a graph for the hold-out errors (4)."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    messages = _Messages(monkeypatch)
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, method="cg",
                        max_iter=8, solver=solver)
    assert (messages.graphs, messages.scatters) == ({"gram": 3, "direct": 2}[solver], 0)
    assert fit.result.products == 8
    check_path(fit, in_memory_path(X, y, sigma, fit, solver=solver, method="cg", max_iter=8), X.dtype)


@pytest.mark.parametrize("fraction", [FRACTION, None])
def test_centres_drawn_before_the_split_pass_are_the_same(client, monkeypatch, fraction):
    """Up to _CLIENT_SPLIT_ROWS rows the client splits the rows itself and the first pass
    gathers the centres; past it the centres are drawn from the pass's counts and gathered
    by a second pass. Both draw the same rows (ragged chunks, one of them empty after a
    concatenation), so the fits are identical."""
    X, y, sigma = data()
    Xd = da.concatenate([da.from_array(X[:50], chunks=23), da.from_array(X[:0]), da.from_array(X[50:], chunks=61)])
    yd = da.from_array(y, chunks=Xd.chunks[0])
    fits = {}
    for limit in (nd._centres._CLIENT_SPLIT_ROWS, 0):
        monkeypatch.setattr(nd._centres, "_CLIENT_SPLIT_ROWS", limit)
        messages = _Messages(monkeypatch)
        fits[limit] = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=fraction,
                                    method="cg", max_iter=8, solver="gram")
        assert messages.graphs == (2 if limit else 3) + (fraction is not None)
    early, late = fits.values()
    np.testing.assert_array_equal(early.center_rows, late.center_rows)
    np.testing.assert_array_equal(early.centers, late.centers)
    np.testing.assert_array_equal(early.result.coef, late.result.coef)


def test_too_many_centres_for_the_client_split_gives_the_error(client):
    """The client's early draw steps aside where its checks fail: the fit reports them as
    before (the training rows left after the split, named)."""
    X, y, sigma = data()
    with pytest.raises(ValueError, match="n_centers=300 is more than the .* training rows"):
        nd.nytro_path(da.from_array(X, chunks=60), da.from_array(y, chunks=60), sigma, n_centers=300, seed=SEED,
                      validation_fraction=FRACTION, method="cg", max_iter=8)


def test_without_holdout_equals_in_memory(client):
    """validation_fraction=None: every row trains, max_iter iterations (NKRLS: its one
    lambda)."""
    X, y, sigma = data(n=120)
    Xd, yd = da.from_array(X, chunks=50), da.from_array(y, chunks=50)
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=30, seed=SEED, validation_fraction=None, method="gd", max_iter=30)
    assert (fit.n_train, fit.n_val) == (120, 0) and len(fit.result.validation_rmse) == 0
    expected = nytro.nytro_path(X, y, X[fit.center_rows], sigma, method="gd", max_iter=30, solver="gram", n_threads=1)
    assert fit.result.n_iter == expected.n_iter == 30
    assert_close(fit.result.coef, expected.coef, X.dtype, "coef")
    for given in (None, 0.0):  # hybrid_lambda=0: the grid's first lambda, as in memory
        fit = nd.nytro_path(Xd, yd, sigma, n_centers=30, seed=SEED, validation_fraction=None, method="hybrid",
                            max_iter=20, hybrid_lambda=given)
        expected = nytro.nytro_path(X, y, X[fit.center_rows], sigma, method="hybrid", max_iter=20, n_threads=1,
                                    hybrid_lambda=given)
        assert fit.result.lambda_ == expected.lambda_
        assert_close(fit.result.coef, expected.coef, X.dtype, "hybrid coef")
    fit = nd.nkrls_path(Xd, yd, sigma, n_centers=30, seed=SEED, validation_fraction=None, lambdas=[1e-4])
    expected = nytro.nkrls_path(X, y, X[fit.center_rows], sigma, lambdas=[1e-4], n_threads=1)
    assert_close(fit.result.coef, expected.coef, X.dtype, "NKRLS coef")
    with pytest.raises(ValueError) as on_dask:
        nd.nkrls_path(Xd, yd, sigma, n_centers=30, validation_fraction=None)
    with pytest.raises(ValueError) as in_memory:
        nytro.nkrls_path(X, y, X[fit.center_rows], sigma)
    assert str(on_dask.value) == str(in_memory.value)  # naming lambdas


@pytest.mark.parametrize("solver", ["gram", "direct"])
def test_linear_kernel_overflow_is_refused_as_in_memory(client, solver):
    """A linear kernel on X * 1e120: A^T A overflows. cg and hybrid stopped at t = 1 with
    the zero model, gd and NKRLS failed in SciPy; each now names the overflow, as the core
    does in memory."""
    X, y, _ = data(n=200)
    Xd = da.from_array(X * 1e120, chunks=50)
    for est in [nytro.NytroRegressor(20, kernel="linear", method=method, solver=solver, random_state=0)
                for method in ("gd", "cg", "hybrid")] + [nytro.NystromKRLSRegressor(20, kernel="linear",
                                                                                     random_state=0)]:
        with pytest.raises(RuntimeError, match="overflow.*rescale X"):
            est.fit(Xd, y)


def test_linear_kernel_grids_follow_the_feature_scale(client):
    """Features of 1e-10: the linear kernel's spectrum is 1e-20 of a distance kernel's.
    The default lambda grids (NKRLS's, hybrid's) are the paper's times max ||x||^2 over
    the training rows, as in memory; the paper's absolute grid over-regularised every
    lambda into the zero model."""
    rng = np.random.default_rng(0)
    U = rng.uniform(-1, 1, (300, 3))
    y = U @ np.array([1.0, -1.0, 0.5]) + 0.01 * rng.standard_normal(300)
    Xd = da.from_array(U * 1e-10, chunks=70)
    for est in (nytro.NytroRegressor(20, kernel="linear", random_state=0),
                nytro.NystromKRLSRegressor(20, kernel="linear", random_state=0)):
        est.fit(Xd, y)
        assert np.sqrt(np.mean((np.asarray(est.predict(Xd)) - y) ** 2)) < 0.05, type(est).__name__
    grid = est.lambdas_
    assert 0 < grid[-1] <= (U**2).sum(1).max() * 1e-20 * (1 + 1e-12)
    np.testing.assert_allclose(grid / grid[-1], nytro.paper_lambdas(), rtol=1e-15)


def test_targets_near_the_end_of_the_range(client):
    """y of size 2^600: scaled by a power of two as in memory, so that the squared
    hold-out errors do not overflow."""
    X, y, sigma = data()
    y = y * 2.0**600
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method="nu", max_iter=40)
    check_path(fit, in_memory_path(X, y, sigma, fit, method="nu", max_iter=40), X.dtype)
    assert np.isfinite(fit.result.validation_rmse).all()
    # Finite y beyond float32 with float32 data: the in-memory error naming y, not a
    # divergence of the path on the infinities the cast made.
    params = dict(method="cg", max_iter=8, n_iter_no_change=None, random_state=3, fit_intercept=False)
    with pytest.raises(ValueError) as in_memory:
        nytro.NytroRegressor(10, sigma, **params).fit(X.astype(np.float32), y)
    with pytest.raises(ValueError) as on_dask:
        nytro.NytroRegressor(10, sigma, **params).fit(da.from_array(X.astype(np.float32), chunks=64), y)
    assert str(on_dask.value) == str(in_memory.value)
    assert str(in_memory.value).startswith("y overflows float32")
    # The same numbers held as objects, or as strings, fit as numbers (scikit-learn's
    # y_numeric), their scale too: unscaled, their squared errors overflowed (a path of
    # infinities, t = 1 selected, silently).
    Xd = da.from_array(X, chunks=64)
    numbers = nytro.NytroRegressor(10, sigma, **params).fit(Xd, y)
    for held in (y.astype(object), y.astype(str)):
        fit = nytro.NytroRegressor(10, sigma, **params).fit(Xd, held)
        assert fit.n_iter_ == numbers.n_iter_
        assert_close(fit.validation_rmse_, numbers.validation_rmse_, X.dtype, "validation_rmse_")
        assert_close(fit.coef_, numbers.coef_, X.dtype, "coef_")


def assert_columns_close(actual, expected, dtype, what):
    """Column by column (each relative to its own size): columns of wildly different
    magnitudes would otherwise be judged by the largest alone."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    for j in range(expected.shape[1]):
        assert_close(actual[:, j], expected[:, j], dtype, f"{what}, column {j}")


# Column 1 beyond float64's 2^128 (float32's 2^32) and column 2 below its inverse: each
# gets its own power of two in memory (chk.TargetScales), and must on Dask too.
COLUMN_MAGNITUDES = {np.dtype(np.float64): [1.0, 2.0**300, 2.0**-200], np.dtype(np.float32): [1.0, 2.0**60, 2.0**-50]}


@pytest.mark.parametrize("method, solver, stopping", [("nu", "gram", "best"), ("gd", "gram", "window"),
                                                      ("hybrid", "gram", "relative"), ("cg", "direct", "best")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_per_column_target_scales_equal_in_memory(client, method, solver, stopping, dtype):
    """y's columns of wildly different magnitudes: each scaled by its own power of two in
    the tasks, the hold-out errors weighted per column, the results scaled back; the same
    coef (column by column), path and selection as in memory."""
    X, y, sigma = data(dtype=dtype, n_outputs=3)
    y = (y * np.asarray(COLUMN_MAGNITUDES[np.dtype(dtype)])).astype(dtype)
    options = dict(method=method, max_iter=8 if method == "cg" else 40, stopping=stopping,
                   tol={"best": None, "window": 1e-3 * 2.0**300 if dtype == np.float64 else 1e-3 * 2.0**60,
                        "relative": 1e-3}[stopping])
    fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=(70, 3)), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, solver=solver, **options)
    expected = in_memory_path(X, y, sigma, fit, solver=solver, **options)
    assert (fit.result.n_iter, fit.result.iterations_run) == (expected.n_iter, expected.iterations_run)
    assert fit.result.lambda_ == expected.lambda_
    assert np.isfinite(fit.result.validation_rmse).all() and np.isfinite(fit.result.coef).all()
    assert_close(fit.result.validation_rmse, expected.validation_rmse, dtype, "validation path")
    if dtype == np.float64:
        assert_columns_close(fit.result.coef, expected.coef, dtype, "coef")
        return
    # float32: Dask sums the chunks' products in another order than the core, and on this
    # problem float32's rounding moves the coefficients by about 1e-4 relative, the fixed
    # tolerance itself. So ask what the issue asks of float32: that Dask's coefficients be
    # no further from the float64 answer than twice the core's own float32 coefficients are
    # (each column relative to its own size).
    exact = in_memory_path(X.astype(np.float64), y.astype(np.float64), sigma, fit, solver=solver, **options)
    for j in range(expected.coef.shape[1]):
        own = relative_error(expected.coef[:, j], exact.coef[:, j])
        err = relative_error(fit.result.coef[:, j], exact.coef[:, j])
        assert err <= max(RTOL[np.dtype(dtype)], 2 * own), f"coef, column {j}: {err:.3e} from float64 (core {own:.3e})"


def test_per_column_target_scales_nkrls(client):
    X, y, sigma = data(n_outputs=3)
    y = y * np.asarray(COLUMN_MAGNITUDES[np.dtype(np.float64)])
    fit = nd.nkrls_path(da.from_array(X, chunks=45), da.from_array(y, chunks=(45, 3)), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION)
    train, held = split(len(X))
    expected = nytro.nkrls_path(X[train], y[train], X[fit.center_rows], sigma, X_val=X[held], y_val=y[held],
                                n_threads=1)
    assert fit.result.selected == expected.selected
    assert_close(fit.result.validation_rmse, expected.validation_rmse, X.dtype, "validation path")
    assert_columns_close(fit.result.coef, expected.coef, X.dtype, "coef")


def test_hybrid_with_zero_targets(client):
    """A^T y = 0: no Krylov space; every prediction is 0 and the path is flat, as in memory."""
    X, _, sigma = data(n=80)
    y = np.zeros(len(X))
    y[nd.holdout_mask(np.arange(len(X)), FRACTION, SEED)] = 1.0  # only hold-out rows are nonzero
    fit = nd.nytro_path(da.from_array(X, chunks=30), da.from_array(y, chunks=30), sigma, n_centers=10, seed=SEED,
                        validation_fraction=FRACTION, method="hybrid", max_iter=12)
    expected = in_memory_path(X, y, sigma, fit, method="hybrid", max_iter=12)
    assert not fit.result.coef.any() and fit.result.lambda_ == expected.lambda_
    check_path(fit, expected, X.dtype)


def test_tasks_fold_a_chunk_in_row_blocks(monkeypatch):
    """The chunk tasks (run here, in-process) give the same shares for blocks of a few
    rows as a direct computation over the whole chunk: A^T A and A^T y; the hold-out
    images' triangular factor (up to row signs)."""
    X, y, sigma = data(n=90)
    C = X[:12]
    R = nytro.nystrom_factor(nytro.gaussian_kernel(C, C, sigma))
    Y = y[:, None]
    monkeypatch.setattr(nd._data, "_BLOCK_ELEMENTS", 100)  # blocks of 100 // width rows
    kern = nd._data._Kernel("gaussian", sigma, 1.5)
    share = nd._passes._gram_part(X, Y, 0, 90, FRACTION, SEED, C, R, kern, X.dtype, None, 1, None)
    train, held = split(90)
    A = nytro.gaussian_kernel(X[train], C, sigma) @ R
    np.testing.assert_allclose(share, np.hstack([A.T @ A, A.T @ Y[train]]), rtol=1e-12, atol=1e-12)
    share = nd._passes._gram_part(X, Y, 0, 90, FRACTION, SEED, C, None, kern, X.dtype, None, 1, None)  # kernel first
    K = nytro.gaussian_kernel(X[train], C, sigma)
    np.testing.assert_allclose(share, np.hstack([K.T @ K, K.T @ Y[train]]), rtol=1e-12, atol=1e-12)
    bases = np.linalg.qr(np.random.default_rng(0).standard_normal((12, 5)))[0]
    factors = nd._passes._images_part(X, Y, 0, 90, FRACTION, SEED, C, bases, [5], kern, X.dtype, None, 1, None)
    images = np.hstack([nytro.gaussian_kernel(X[held], C, sigma) @ bases, Y[held]])
    direct = np.linalg.qr(images, mode="r")
    np.testing.assert_allclose(np.abs(factors[0]), np.abs(direct), rtol=1e-10, atol=1e-12)


def test_predict_sends_large_centres_once_not_in_the_graph(client):
    """Centres of 14 MiB: scattered to the workers, where embedding them in the graph made
    distributed warn of a large graph (an error under this suite's warning filter)."""
    rng = np.random.default_rng(0)
    centers, coef = rng.standard_normal((20_000, 90)), rng.standard_normal(20_000)
    X = rng.standard_normal((40, 90))
    predicted = nd.predict(da.from_array(X, chunks=20), centers, coef, 5.0).compute()
    np.testing.assert_allclose(predicted, nytro.kernel_predict(X, centers, coef, 5.0), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------- options, kernels, weights, centres
def test_functions_take_the_table_rows_and_options(client):
    """The Dask functions' parameters are rows of nytro.options (DASK_NYTRO, DASK_NKRLS):
    the same names and defaults as the in-memory functions, the same options objects, and
    the values Dask does not take refused by their rows."""
    import inspect

    from nytro import _dask_options as dopt
    for function, family, in_memory in ((nd.nytro_path, dopt.DASK_NYTRO, nytro.nytro_path),
                                        (nd.nkrls_path, dopt.DASK_NKRLS, nytro.nkrls_path)):
        sig, twin = inspect.signature(function), inspect.signature(in_memory)
        assert sig.parameters["options"].default is None
        for param in family.params + dopt.DASK_ONLY:
            assert sig.parameters[param.name].default == param.default, (function.__name__, param.name)
            if param.name in twin.parameters:
                assert twin.parameters[param.name].default == param.default, (function.__name__, param.name)
    X, y, sigma = data(n=120)
    Xd, yd = da.from_array(X, chunks=60), da.from_array(y, chunks=60)
    args = dict(n_centers=20, seed=SEED, validation_fraction=FRACTION, method="nu", max_iter=10)
    by_keyword = nd.nytro_path(Xd, yd, sigma, solver="gram", factor="qr", **args).result
    by_object = nd.nytro_path(Xd, yd, sigma, options=nytro.NytroOptions(solver="gram", factor="qr"), **args).result
    assert by_object.solver == by_keyword.solver == "gram"
    np.testing.assert_array_equal(by_object.coef, by_keyword.coef)
    with pytest.raises(ValueError, match="solver is given twice"):
        nd.nytro_path(Xd, yd, sigma, solver="direct", options=nytro.NytroOptions(solver="gram"), **args)
    with pytest.raises(ValueError, match="options must be a nytro.NytroOptions"):
        nd.nytro_path(Xd, yd, sigma, options=nytro.TikhonovOptions(), **args)
    refused = [(nd.nytro_path, dict(storage="float16"), "storage='float16' is not supported on Dask"),
               (nd.nytro_path, dict(storage=np.float16, solver="direct"), "storage=.*float16.* is not supported"),
               (nd.nytro_path, dict(solver="spectral"), "solver='spectral'.*'gram', 'direct', 'auto'")]
    for function, kwargs, message in refused:
        with pytest.raises(NotImplementedError, match=message):
            function(Xd, yd, sigma, n_centers=5, **kwargs)
    with pytest.raises(ValueError, match="hybrid_lambda"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, hybrid_lambda=-1.0)
    with pytest.raises(ValueError, match="split_every"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, split_every=1)
    with pytest.raises(ValueError, match="solver=.nope. is not one of"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, solver="nope")


# The kernels besides the one-bandwidth Gaussian. "linear" has rank d = 4, so its Krylov
# methods end at t = 4, where the core's path ends too.
KERNELS = {"laplacian": dict(kernel="laplacian"), "matern-2.5": dict(kernel="matern", matern_nu=2.5),
           "linear": dict(kernel="linear"), "ard": dict(sigma=np.array([0.7, 1.3, 1.0, 1.6]))}
# Each kernel runs every method; the direct mode takes the paper's step (no Lanczos
# estimate: fewer round trips), which for "linear" is 1 / (n max ||x||^2).
MODES = [("gd", "gram", 60, "auto"), ("nu", "direct", 12, "paper"), ("cg", "direct", 8, None),
         ("hybrid", "gram", 30, None)]


def in_memory_fit(X, y, sigma, fit, w=None, function=nytro.nytro_path, **kwargs):
    """The in-memory function on the Dask fit's training rows, hold-out rows, centres and
    weights (w: one per row of X, split alike)."""
    train, held = split(len(X))
    weights = {} if w is None else dict(sample_weight=w[train], sample_weight_val=w[held])
    return function(X[train], y[train], fit.centers, sigma, X_val=X[held], y_val=y[held], n_threads=1,
                    **weights, **kwargs)


@pytest.mark.parametrize("method, solver, max_iter, step", MODES, ids=[f"{m[0]}-{m[1]}" for m in MODES])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernels_equal_in_memory(client, kernel, method, solver, max_iter, step):
    X, y, _ = data()
    kwargs = dict(KERNELS[kernel])
    sigma = kwargs.pop("sigma", 1.0)
    steps = {} if step is None else dict(step_size=step)
    fit = nd.nytro_path(da.from_array(X, chunks=130), da.from_array(y, chunks=130), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method=method, max_iter=max_iter, solver=solver, **steps,
                        **kwargs)
    assert fit.result.solver == solver
    expected = in_memory_fit(X, y, sigma, fit, method=method, max_iter=max_iter, solver=solver, **steps, **kwargs)
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_
    if kernel == "linear":
        assert fit.result.rank == 4


def weights(n, seed=3):
    """Weights in [0, 2), every fifth one 0."""
    w = np.random.default_rng(seed).uniform(0, 2, n)
    w[::5] = 0
    return w


WEIGHTED = [("gd", "gram", 60), ("gd", "direct", 20), ("nu", "gram", 25), ("nu", "direct", 12), ("cg", "gram", 8),
            ("cg", "direct", 8), ("hybrid", "gram", 30)]


@pytest.mark.parametrize("method, solver, max_iter", WEIGHTED, ids=[f"{m[0]}-{m[1]}" for m in WEIGHTED])
def test_sample_weights_equal_in_memory(client, method, solver, max_iter):
    """sample_weight (a Dask array chunked unlike X, zeros included): the training rows'
    weights weigh the loss and the hold-out rows' the RMSE, as the in-memory function's
    sample_weight and sample_weight_val."""
    X, y, sigma = data()
    w = weights(len(X))
    fit = nd.nytro_path(da.from_array(X, chunks=100), da.from_array(y, chunks=100), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method=method, max_iter=max_iter, solver=solver,
                        sample_weight=da.from_array(w, chunks=77))
    expected = in_memory_fit(X, y, sigma, fit, w, method=method, max_iter=max_iter, solver=solver)
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_
    unweighted = in_memory_fit(X, y, sigma, fit, method=method, max_iter=max_iter, solver=solver)
    assert relative_error(fit.result.validation_rmse[:3], unweighted.validation_rmse[:3]) > 1e-3  # weights matter
    # Weights as tiny as 1e-310 (subnormal): n / sum(w) overflowed, and the fit diverged.
    # Integers times 2^-1070 are exact, and fit what they do.
    w = np.round(4 * w)
    fits = [nd.nytro_path(da.from_array(X, chunks=100), y, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION,
                          method=method, max_iter=max_iter, solver=solver, sample_weight=v).result
            for v in (w, np.ldexp(w, -1070))]
    np.testing.assert_array_equal(fits[1].coef, fits[0].coef)
    np.testing.assert_array_equal(fits[1].validation_rmse, fits[0].validation_rmse)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sample_weights_nkrls_and_several_outputs(client, dtype):
    X, y, sigma = data(dtype=dtype, n_outputs=2)
    w = weights(len(X))
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=(100, 2))
    fit = nd.nkrls_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, sample_weight=w)
    expected = in_memory_fit(X, y, sigma, fit, w, function=nytro.nkrls_path)
    assert fit.result.selected == expected.selected
    assert_close(fit.result.validation_rmse, expected.validation_rmse, dtype, "validation path")
    assert_close(fit.result.coef, expected.coef, dtype, "coef")
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, method="hybrid",
                        max_iter=20, sample_weight=w)
    check_path(fit, in_memory_fit(X, y, sigma, fit, w, method="hybrid", max_iter=20), dtype)


def test_given_centers_equal_in_memory(client):
    """centers= as the estimators take it: points, or row indices into X before the split
    (a hold-out row and a negative index included)."""
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    _, held = split(len(X))
    held_rows = [r for r in np.flatnonzero(held) if r % 7][:3]
    rows = np.concatenate([held_rows, np.arange(0, 200, 7), [-1]])
    fit = nd.nytro_path(Xd, yd, sigma, centers=rows, seed=SEED, validation_fraction=FRACTION, method="cg",
                        max_iter=8, solver="direct")
    np.testing.assert_array_equal(fit.centers, X[rows])
    np.testing.assert_array_equal(fit.center_rows, np.where(rows < 0, rows + len(X), rows))
    check_path(fit, in_memory_fit(X, y, sigma, fit, method="cg", max_iter=8, solver="direct"), X.dtype)
    points = X[:30] + 0.25
    fit = nd.nytro_path(Xd, yd, sigma, centers=points, seed=SEED, validation_fraction=FRACTION, method="hybrid",
                        max_iter=30)
    assert fit.center_rows is None
    np.testing.assert_array_equal(fit.centers, points)
    check_path(fit, in_memory_fit(X, y, sigma, fit, method="hybrid", max_iter=30), X.dtype)
    fit = nd.nkrls_path(Xd, yd, sigma, centers=points, seed=SEED, validation_fraction=FRACTION)
    expected = in_memory_fit(X, y, sigma, fit, function=nytro.nkrls_path)
    assert fit.result.selected == expected.selected
    assert_close(fit.result.coef, expected.coef, X.dtype, "NKRLS coef")


def test_estimator_with_kernel_weights_and_centers(client):
    """NytroRegressor.fit on Dask arrays with a Matern kernel, given centre indices and
    sample_weight; predict on a Dask array with that kernel."""
    X, y, sigma = data()
    w = weights(len(X))
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    rows = np.arange(0, 240, 6)
    est = nytro.NytroRegressor(40, sigma, kernel="matern", matern_nu=2.5, centers=rows, method="cg", max_iter=8,
                               n_iter_no_change=None, validation_fraction=FRACTION, random_state=3, fit_intercept=False)
    est.fit(Xd, yd, sample_weight=da.from_array(w, chunks=100))
    seed = int(np.random.RandomState(3).randint(0, 2**63 - 1, dtype=np.int64))
    held = nd.holdout_mask(np.arange(len(X)), FRACTION, seed)
    expected = nytro.nytro_path(X[~held], y[~held], X[rows], sigma, kernel="matern", matern_nu=2.5, X_val=X[held],
                                y_val=y[held], sample_weight=w[~held], sample_weight_val=w[held], method="cg",
                                max_iter=8, solver=est.solver_, n_threads=1)
    assert est.n_iter_ == expected.n_iter
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    assert_close(est.validation_rmse_, expected.validation_rmse, X.dtype, "validation_rmse_")
    np.testing.assert_allclose(est.predict(Xd).compute(), est.predict(X), rtol=1e-12, atol=1e-12)


def _message(call):
    with pytest.raises(ValueError) as error:
        call()
    return str(error.value)


def test_bad_kernel_weights_and_centers_give_the_in_memory_errors(client):
    """The same ValueError as the in-memory estimator (or function) gives for the same
    input: kernels, sample weights (NumPy and Dask arrays), centres."""
    X, y, sigma = data(n=60)
    Xd, yd = da.from_array(X, chunks=25), da.from_array(y, chunks=25)

    def both(fit_args, **params):
        """(in-memory message, Dask message) of NytroRegressor(**params).fit."""
        est = dict(n_centers=5, sigma=sigma, method="cg", max_iter=3, validation_fraction=FRACTION, random_state=0)
        est.update(params)
        in_memory = _message(lambda: nytro.NytroRegressor(**est).fit(X, y, **fit_args))
        dask_weights = {k: da.from_array(v, chunks=20) if isinstance(v, np.ndarray) else v
                        for k, v in fit_args.items()}
        on_dask = _message(lambda: nytro.NytroRegressor(**est).fit(Xd, yd, **dask_weights))
        return in_memory, on_dask

    w = np.ones(len(X))
    negative, nan = w.copy(), w.copy()
    negative[[33, 41]] = -1.0
    nan[[47, 52]] = np.nan
    nan[10] = -2  # a NaN is reported before a negative weight, wherever it is
    cases = [({}, dict(kernel="nope")), ({}, dict(kernel="matern", matern_nu=1.0)),
             ({}, dict(sigma=np.ones(3))), ({}, dict(sigma=np.array([1.0, 1.0, -1.0, 1.0]))),
             (dict(sample_weight=negative), {}), (dict(sample_weight=nan), {}),
             (dict(sample_weight=np.zeros(len(X))), {}), (dict(sample_weight=np.ones(7)), {}),
             (dict(sample_weight=[[1.0]]), {}),
             ({}, dict(centers=np.array([3, 3]))), ({}, dict(centers=np.array([1, 60]))),
             ({}, dict(centers=X[:5, :3])), ({}, dict(centers=np.array([True]))),
             ({}, dict(center_selection="nope"))]
    for fit_args, params in cases:
        in_memory, on_dask = both(fit_args, **params)
        assert on_dask == in_memory, (fit_args, params)
    # Complex weights: refused, not cast to their real parts.
    assert both(dict(sample_weight=w + 1j)) == ("sample_weight must be real numbers, got complex values",) * 2
    # The splits differ (a hash on Dask, a permutation in memory), and so do the numbers of
    # training rows these messages name.
    with pytest.raises(ValueError, match=r"^centers has 59 indices, more than the \d+ training rows$"):
        nytro.NytroRegressor(5, sigma, centers=np.arange(59), validation_fraction=FRACTION).fit(Xd, yd)
    # Zero weight on every hold-out row: refused by name, as in memory.
    held = nd.holdout_mask(np.arange(len(X)), FRACTION, SEED)
    with pytest.raises(ValueError, match=r"sample_weight is zero on every one of the \d+ hold-out rows.*the seed$"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, seed=SEED, validation_fraction=FRACTION,
                      sample_weight=da.from_array(np.where(held, 0.0, 1.0), chunks=25))
    # An estimator's message names its own parameter, random_state, as in memory.
    held = nd.holdout_mask(np.arange(len(X)), FRACTION, int(np.random.RandomState(0).randint(0, 2**63 - 1,
                                                                                             dtype=np.int64)))
    with pytest.raises(ValueError, match=r"sample_weight is zero on every one of the \d+ hold-out rows.*"
                                         "change random_state$"):
        nytro.NytroRegressor(5, sigma, validation_fraction=FRACTION, random_state=0).fit(
            Xd, yd, sample_weight=np.where(held, 0.0, 1.0))


@pytest.mark.parametrize("n_outputs, weighted", [(None, False), (2, True)], ids=["one-output", "two-weighted"])
def test_hybrid_direct_equals_in_memory_direct(client, n_outputs, weighted):
    """"hybrid" in the direct mode: its Lanczos products are passes over the workers'
    persisted K_i (one per basis vector), the hold-out images as in "gram" mode; the
    in-memory direct solver's (t, lambda), path and coef."""
    X, y, sigma = data(n_outputs=n_outputs)
    w = weights(len(X)) if weighted else None
    fit = nd.nytro_path(da.from_array(X, chunks=(90, 2)), da.from_array(y, chunks=90), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION, method="hybrid", max_iter=15, solver="direct",
                        sample_weight=w)
    assert fit.result.solver == "direct" and fit.result.products >= 15
    expected = in_memory_fit(X, y, sigma, fit, w, method="hybrid", max_iter=15, solver="direct")
    check_path(fit, expected, X.dtype)
    assert fit.result.lambda_ == expected.lambda_ and 1 < fit.result.n_iter < 15


@pytest.mark.parametrize("method, max_iter, weighted", [("gd", 20, False), ("nu", 12, True), ("cg", 8, False)])
def test_float32_storage_equals_in_memory(client, method, max_iter, weighted):
    """storage="float32" in the direct mode: the workers keep K_i in float32 (computed from
    the rows rounded to float32, as the core's K_nm), products and the path in float64,
    the hold-out kernel in float32: the in-memory storage="float32" fit to 1e-10, which
    differs from the float64-storage fit by float32's rounding."""
    X, y, sigma = data()
    w = weights(len(X)) if weighted else None
    fit = nd.nytro_path(da.from_array(X, chunks=100), da.from_array(y, chunks=100), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method=method, max_iter=max_iter, solver="direct",
                        options=nytro.NytroOptions(storage="float32"), sample_weight=w,
                        **(stepwise := dict(iterates="stepwise", step_size="paper") if method == "gd" else {}))
    assert fit.result.coef.dtype == np.float64
    # gd stepped (its Lanczos iterates agree with stepping only to 64 float32 epsilons
    # under float32 storage: test_float32_storage_in_gram_mode_equals_in_memory).
    expected = in_memory_fit(X, y, sigma, fit, w, method=method, max_iter=max_iter, solver="direct",
                             storage="float32", **stepwise)
    check_path(fit, expected, X.dtype)
    wide = in_memory_fit(X, y, sigma, fit, w, method=method, max_iter=max_iter, solver="direct", **stepwise)
    assert relative_error(fit.result.coef, wide.coef) > 1e-8  # the storage's rounding, not float64's


@pytest.mark.parametrize("estimator, max_iter", [("hybrid", 20), ("gd", 60), ("nkrls", None)])
def test_refit_equals_in_memory(client, estimator, max_iter):
    """refit=True on Dask arrays: after the hold-out fit, all rows (weighted), the selected
    t and lambda (hybrid_lambda for "hybrid"), the centres drawn from the training part;
    coef_ equals the in-memory function's on all rows with those centres."""
    X, y, sigma = data()
    w = weights(len(X))
    Xd, yd = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    if estimator == "nkrls":
        est = nytro.NystromKRLSRegressor(40, sigma, validation_fraction=FRACTION, refit=True, random_state=3,
                                         fit_intercept=False)
        est.fit(Xd, yd, sample_weight=w)
        expected = nytro.nkrls_path(X, y, est.centers_, sigma, lambdas=[est.lambda_], sample_weight=w, n_threads=1)
    else:
        est = nytro.NytroRegressor(40, sigma, method=estimator, max_iter=max_iter, n_iter_no_change=None, solver="gram",
                                   validation_fraction=FRACTION, refit=True, random_state=3, fit_intercept=False)
        est.fit(Xd, yd, sample_weight=w)
        assert 1 < est.n_iter_ < max_iter
        expected = nytro.nytro_path(X, y, est.centers_, sigma, method=estimator, max_iter=est.n_iter_,
                                    hybrid_lambda=est.lambda_, sample_weight=w, solver="gram", n_threads=1)
        assert_close(est.step_size_, expected.step_size, X.dtype, "step_size_")
    held_out = est.validation_rmse_
    assert len(held_out) > 0  # the selection was made on the hold-out fit
    assert_close(est.coef_, expected.coef, X.dtype, "refitted coef_")


@pytest.mark.parametrize("kernel", ["gaussian", "matern"])
def test_leverage_centers_equal_in_memory(client, kernel):
    """center_selection="leverage": the sampler's levels read the training rows they draw,
    gathered from their chunks; the same rows as nytro.centers.leverage_centers on the
    training rows (global order) with the same seed, then the in-memory path on them."""
    from nytro.centers import leverage_centers
    X, y, sigma = data(n=400)
    train, _ = split(len(X))
    options = dict(kernel=kernel, matern_nu=2.5)
    fit = nd.nytro_path(da.from_array(X, chunks=90), da.from_array(y, chunks=90), sigma, n_centers=20, seed=SEED,
                        validation_fraction=FRACTION, center_selection="leverage", method="cg", max_iter=8,
                        solver="gram", **options)
    center_seed = (SEED + 0x5851F42D4C957F2D) % 2**64  # nytro.dask's centre stream
    chosen = np.flatnonzero(train)[leverage_centers(X[train], 20, sigma, center_seed, **options)]
    np.testing.assert_array_equal(fit.center_rows, chosen)
    assert not np.array_equal(np.sort(chosen), np.sort(np.flatnonzero(train)[nytro.sample_centers(
        int(train.sum()), 20, center_seed)]))  # not the uniform draw
    check_path(fit, in_memory_fit(X, y, sigma, fit, method="cg", max_iter=8, solver="gram", **options), X.dtype)

@pytest.mark.parametrize("sigma", [4.0, 8.0])
def test_hybrid_stops_where_its_krylov_space_is_exhausted(client, sigma):
    """20 distinct points among 200 rows (A^T A numerically singular at float32's rounding)
    and targets off the data's range (an offset of 10): Lanczos must stop, as in memory,
    where its remainder or a Ritz value is at the rounding of a float32 product with
    A^T A, and solve the last step through the Ritz values above it. Before, the Dask
    hybrid ran on into directions of rounding (16 steps where memory stops at 15 at
    sigma = 4, 12 against 11 at sigma = 8): another path, and another model."""
    rng = np.random.default_rng(1)
    points = rng.standard_normal((20, 3))
    groups = rng.integers(0, 20, 200)
    groups[:20] = np.arange(20)  # every point present
    X, y = points[groups].astype(np.float32), (rng.standard_normal(200) + 10.0).astype(np.float32)
    fit = nd.nytro_path(da.from_array(X, chunks=70), da.from_array(y, chunks=70), sigma, n_centers=60, seed=SEED,
                        validation_fraction=FRACTION, method="hybrid", max_iter=60)
    expected = in_memory_path(X, y, sigma, fit, method="hybrid", max_iter=60)
    result = fit.result
    assert result.rank == expected.rank < 20
    assert (result.n_iter, result.iterations_run) == (expected.n_iter, expected.iterations_run)
    assert result.lambda_ == expected.lambda_
    assert_close(result.validation_rmse, expected.validation_rmse, X.dtype, "validation path")
    # The model behind the path's selected value: its hold-out RMSE, recomputed in float64.
    assert np.isfinite(result.coef).all()
    _, held = split(len(X))
    K_val = nytro.gaussian_kernel(X[held].astype(np.float64), X[fit.center_rows].astype(np.float64), sigma)
    rmse = np.sqrt(np.mean((K_val @ result.coef.astype(np.float64) - y[held]) ** 2))
    assert_close(rmse, result.validation_rmse[result.n_iter - 1], X.dtype, "selected model's hold-out RMSE")
