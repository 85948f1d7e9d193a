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

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
from conftest import make_problem, relative_error  # noqa: E402

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


# hybrid: max_iter past the rank (40), where its Krylov space is invariant and the path
# repeats its last value.
@pytest.mark.parametrize("method, max_iter", [("gd", 80), ("nu", 40), ("cg", 8), ("hybrid", 45)])
@pytest.mark.parametrize("chunks", [50, 257, 300], ids=["uneven", "one-chunk", "chunk-past-n"])
def test_path_equals_in_memory(client, method, max_iter, chunks):
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks), sigma,
                        n_centers=40, validation_fraction=FRACTION, seed=SEED, method=method, max_iter=max_iter)
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
    estimate of lambda_max, made of distributed products)."""
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=(chunks, 2)), da.from_array(y, chunks=chunks), sigma,
                        n_centers=40, validation_fraction=FRACTION, seed=SEED, method=method, max_iter=max_iter,
                        solver="direct")
    assert fit.result.solver == "direct"
    assert fit.result.products >= max_iter  # every iterate took a distributed product
    expected = in_memory_path(X, y, sigma, fit, solver="direct", method=method, max_iter=max_iter)
    check_path(fit, expected, X.dtype)
    assert 1 < fit.result.n_iter < max_iter


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
    assert nd._choose_solver("auto", "gd", n, k, 100, 8, [2**40, 2**40]) == "direct"   # 4T < 2k
    assert nd._choose_solver("auto", "gd", n, k, 600, 8, [2**40, 2**40]) == "gram"     # 4T > 2k
    assert nd._choose_solver("auto", "cg", n, k, 100, 8, [2**30, 2**30]) == "gram"     # 4 GB each > 0.5 GiB
    assert nd._choose_solver("auto", "cg", n, k, 100, 8, [0, 0]) == "direct"           # no limit
    assert nd._choose_solver("auto", "hybrid", n, k, 10, 8, [0]) == "gram"
    assert nd._choose_solver("auto", "gd", n, k, 10, 8, None) == "gram"                # no cluster
    assert nd._choose_solver("direct", "gd", n, k, 600, 8, None) == "direct"


def test_auto_runs_direct_on_a_cluster(client):
    X, y, sigma = data()
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method="cg", max_iter=8, solver="auto")
    assert fit.result.solver == "direct"  # 4 x 8 < 2 x 40, and the blocks are small
    check_path(fit, in_memory_path(X, y, sigma, fit, solver="direct", method="cg", max_iter=8), X.dtype)
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method="gd", max_iter=80, solver="auto")
    assert fit.result.solver == "gram"


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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nkrls_equals_in_memory(client, dtype):
    X, y, sigma = data(dtype=dtype)
    fit = nd.nkrls_path(da.from_array(X, chunks=45), da.from_array(y, chunks=45), sigma, n_centers=40,
                        seed=SEED, validation_fraction=FRACTION)
    train, held = split(len(X))
    expected = nytro.nkrls_path(X[train], y[train], X[fit.center_rows], sigma, X_val=X[held], y_val=y[held],
                                n_threads=1)
    assert fit.result.selected == expected.selected and fit.result.lambda_ == expected.lambda_
    assert 0 < fit.result.selected < 99
    assert_close(fit.result.validation_rmse, expected.validation_rmse, dtype, "validation path")
    assert_close(fit.result.coef, expected.coef, dtype, "coef")


def test_chunks_of_one_row(client):
    """23 chunks of one row (more chunks than rows per worker): each chunk is all
    training or all hold-out rows."""
    X, y, sigma = data(n=23, m=6)
    fit = nd.nytro_path(da.from_array(X, chunks=1), da.from_array(y, chunks=1), sigma, n_centers=6,
                        seed=SEED, validation_fraction=FRACTION, method="cg", max_iter=5)
    check_path(fit, in_memory_path(X, y, sigma, fit, method="cg", max_iter=5), X.dtype)


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
                               random_state=3).fit(Xd, yd)
    seed = int(np.random.RandomState(3).randint(0, 2**63 - 1, dtype=np.int64))
    train, held = (~nd.holdout_mask(np.arange(len(X)), FRACTION, seed), nd.holdout_mask(np.arange(len(X)),
                                                                                          FRACTION, seed))
    expected = nytro.nytro_path(X[train], y[train], est.centers_, sigma, X_val=X[held], y_val=y[held],
                                method="cg", max_iter=8, solver="direct", n_threads=1)
    # solver "auto": 8 products cost less than forming A^T A (4 x 8 < 2 x 40)
    assert est.n_iter_ == expected.n_iter and est.solver_ == "direct"
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    assert_close(est.validation_rmse_, expected.validation_rmse, X.dtype, "validation_rmse_")
    with_numpy_y = nytro.NytroRegressor(40, sigma, method="cg", max_iter=8, n_iter_no_change=None,
                                        validation_fraction=FRACTION, random_state=3).fit(Xd, y)
    np.testing.assert_array_equal(with_numpy_y.coef_, est.coef_)  # y in memory: cut into X's chunks
    predicted = est.predict(Xd)
    assert isinstance(predicted, da.Array) and predicted.chunks == Xd.chunks[:1]
    np.testing.assert_allclose(predicted.compute(), est.predict(X), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="X has 3 features but the centres have 4"):
        est.predict(Xd[:, :3])

    default = nytro.NytroRegressor(40, sigma, validation_fraction=FRACTION, random_state=3).fit(Xd, yd)  # hybrid
    expected = nytro.nytro_path(X[train], y[train], default.centers_, sigma, X_val=X[held], y_val=y[held],
                                method="hybrid", n_iter_no_change=50, n_threads=1)
    assert (default.n_iter_, default.lambda_) == (expected.n_iter, expected.lambda_)
    assert_close(default.coef_, expected.coef, X.dtype, "hybrid coef_")

    krls = nytro.NystromKRLSRegressor(40, sigma, validation_fraction=FRACTION, random_state=3).fit(Xd, yd)
    expected = nytro.nkrls_path(X[train], y[train], krls.centers_, sigma, X_val=X[held], y_val=y[held],
                                n_threads=1)
    assert krls.lambda_ == expected.lambda_
    assert_close(krls.coef_, expected.coef, X.dtype, "NKRLS coef_")


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
    np.testing.assert_allclose(predicted.compute(), nytro.kernel_predict(X, fit.centers, fit.result.coef, sigma),
                               rtol=1e-12, atol=1e-12)


def test_what_is_not_supported_yet_says_so(client):
    X, y, sigma = data(n=40)
    Xd, yd = da.from_array(X, chunks=20), da.from_array(y, chunks=20)
    with pytest.raises(NotImplementedError, match="storage='float32' is not supported"):
        nytro.NytroRegressor(5, sigma, storage="float32").fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="solver='spectral'.*'gram', 'direct'"):
        nytro.NytroRegressor(5, sigma, method="cg", solver="spectral").fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="'hybrid' with solver='direct'"):
        nytro.NytroRegressor(5, sigma, method="hybrid", solver="direct").fit(Xd, yd)
    with pytest.raises(NotImplementedError, match="KRLSRegressor does not take Dask arrays"):
        nytro.KRLSRegressor(sigma).fit(Xd, yd)
    with pytest.raises(ValueError, match="method='nope'"):
        nd.nytro_path(Xd, yd, sigma, n_centers=5, method="nope")


def test_tasks_use_their_workers_threads(client):
    """The C++ calls of a task on a 1-thread worker get 1 thread, whatever the cores."""
    threads = client.gather([client.submit(nd._task_threads, None, pure=False) for _ in range(4)])
    assert threads == [1, 1, 1, 1]
    assert client.submit(nd._task_threads, 8, pure=False).result() == 1


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


def test_a_worker_killed_between_direct_products_changes_nothing(client, monkeypatch):
    """solver="direct": a worker holding persisted K_i blocks dies between two products
    of the path (its nanny restarts it empty); the scheduler recomputes the lost blocks
    again, and the fit equals the in-memory one (a product cancelled by the loss is
    repeated, never summed from the surviving workers' parts). On the code without the
    rebuild, the product failed with distributed's FutureCancelledError."""
    import os
    X, y, sigma = data()
    Xd, yd = da.from_array(X, chunks=40), da.from_array(y, chunks=40)
    options = dict(method="cg", max_iter=8, solver="direct")
    product = nd._DirectOperator.__call__
    killed = []

    def kill_before_the_fourth(self, B):
        if self.products == 3 and not killed:
            holders = {w for ws in client.who_has(list(self.blocks)).values() for w in ws}
            victim = sorted(holders)[0]
            pid = client.run(os.getpid, workers=[victim])[victim]
            os.kill(pid, 9)  # no goodbye: the scheduler learns of it from the broken connection
            killed.append(victim)
        return product(self, B)

    monkeypatch.setattr(nd._DirectOperator, "__call__", kill_before_the_fourth)
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, **options)
    assert killed and fit.result.products == 8
    check_path(fit, in_memory_path(X, y, sigma, fit, **options), X.dtype)
    client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


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
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=30, seed=SEED, validation_fraction=None, method="hybrid",
                        max_iter=20)
    expected = nytro.nytro_path(X, y, X[fit.center_rows], sigma, method="hybrid", max_iter=20, n_threads=1)
    assert fit.result.lambda_ == expected.lambda_
    assert_close(fit.result.coef, expected.coef, X.dtype, "hybrid coef")
    fit = nd.nkrls_path(Xd, yd, sigma, n_centers=30, seed=SEED, validation_fraction=None, lambdas=[1e-4])
    expected = nytro.nkrls_path(X, y, X[fit.center_rows], sigma, lambdas=[1e-4], n_threads=1)
    assert_close(fit.result.coef, expected.coef, X.dtype, "NKRLS coef")
    with pytest.raises(ValueError, match="exactly one lambda"):
        nd.nkrls_path(Xd, yd, sigma, n_centers=30, validation_fraction=None)


def test_targets_near_the_end_of_the_range(client):
    """y of size 2^600: scaled by a power of two as in memory, so that the squared
    hold-out errors do not overflow."""
    X, y, sigma = data()
    y = y * 2.0**600
    fit = nd.nytro_path(da.from_array(X, chunks=64), da.from_array(y, chunks=64), sigma, n_centers=40, seed=SEED,
                        validation_fraction=FRACTION, method="nu", max_iter=40)
    check_path(fit, in_memory_path(X, y, sigma, fit, method="nu", max_iter=40), X.dtype)
    assert np.isfinite(fit.result.validation_rmse).all()


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
    assert_columns_close(fit.result.coef, expected.coef, dtype, "coef")


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
    monkeypatch.setattr(nd, "_BLOCK_ELEMENTS", 100)  # blocks of 100 // width rows
    share = nd._gram_part(X, Y, 0, 90, FRACTION, SEED, C, R, sigma, X.dtype, None, 1, None)
    train, held = split(90)
    A = nytro.gaussian_kernel(X[train], C, sigma) @ R
    np.testing.assert_allclose(share, np.hstack([A.T @ A, A.T @ Y[train]]), rtol=1e-12, atol=1e-12)
    share = nd._gram_part(X, Y, 0, 90, FRACTION, SEED, C, None, sigma, X.dtype, None, 1, None)  # kernel first
    K = nytro.gaussian_kernel(X[train], C, sigma)
    np.testing.assert_allclose(share, np.hstack([K.T @ K, K.T @ Y[train]]), rtol=1e-12, atol=1e-12)
    bases = np.linalg.qr(np.random.default_rng(0).standard_normal((12, 5)))[0]
    factors = nd._images_part(X, Y, 0, 90, FRACTION, SEED, C, bases, [5], sigma, X.dtype, None, 1, None)
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
