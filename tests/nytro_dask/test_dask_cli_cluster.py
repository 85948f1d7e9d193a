"""The same fits on a cluster started with Dask's own command-line tools (issue 28): a
`dask scheduler` process and a `dask worker` process running two nannied workers, each in
a working directory of its own, found by the client through the scheduler's file, as on
many machines. Nothing in nytro may assume the LocalCluster's process tree: the
answers must equal the in-memory ones as they do there (tests/nytro_dask/test_dask.py).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
from test_dask import FRACTION, SEED, assert_close, check_path, data, in_memory_path, split  # noqa: E402

STARTUP = 120.0  # seconds for the scheduler's file and both workers to appear


def _wait_for(path, process, deadline):
    while not path.exists():
        if process.poll() is not None:
            raise RuntimeError(f"dask scheduler exited with {process.returncode} before writing {path}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"dask scheduler wrote no {path} in {STARTUP} s")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cli_client(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    file = root / "scheduler.json"
    # The workers import the nytro this test imports, wherever their working directory is.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(nytro.__file__))] + [os.path.abspath(p) for p in
                                                              os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    dirs = {name: root / name for name in ("scheduler", "workers")}
    for d in dirs.values():
        d.mkdir()
    commands = {
        "scheduler": ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                      str(file)],
        "workers": ["worker", "--scheduler-file", str(file), "--nworkers", "2", "--nthreads", "1", "--memory-limit",
                    "1GiB", "--no-dashboard", "--local-directory", str(dirs["workers"])],
    }
    processes = []
    client = None
    try:
        deadline = time.monotonic() + STARTUP
        for name, args in commands.items():
            processes.append(subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=dirs[name], env=env,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            if name == "scheduler":
                _wait_for(file, processes[0], deadline)
        client = distributed.Client(scheduler_file=str(file), timeout=STARTUP)
        client.wait_for_workers(2, timeout=max(1.0, deadline - time.monotonic()))
        yield client
    finally:
        if client is not None:
            client.close()
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _zarr_data(tmp_path, X, y, rows):
    """X and y written to a zarr store in chunks of `rows` rows, and read back lazily."""
    store = str(tmp_path / "data.zarr")
    group = zarr.open_group(store, mode="w")
    group.create_array("X", shape=X.shape, chunks=(rows, X.shape[1]), dtype=X.dtype)[:] = X
    group.create_array("y", shape=y.shape, chunks=(rows,), dtype=y.dtype)[:] = y
    return da.from_zarr(store, component="X"), da.from_zarr(store, component="y")


def test_the_workers_are_separate_cli_processes(cli_client):
    info = cli_client.scheduler_info(n_workers=-1)["workers"]
    assert len(info) == 2
    pids = cli_client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    assert all(cwd != os.getcwd() for cwd in cli_client.run(os.getcwd).values())


@pytest.mark.parametrize("solver", ["gram", "direct"])
def test_fit_from_zarr_on_a_cli_cluster_equals_in_memory(cli_client, tmp_path, solver):
    X, y, sigma = data()
    Xd, yd = _zarr_data(tmp_path, X, y, rows=70)
    fit = nd.nytro_path(Xd, yd, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, method="cg",
                        max_iter=8, solver=solver)
    assert fit.result.solver == solver
    check_path(fit, in_memory_path(X, y, sigma, fit, solver=solver, method="cg", max_iter=8), X.dtype)


def test_estimator_on_a_cli_cluster_predicts_as_in_memory(cli_client, tmp_path):
    """NytroRegressor on the zarr arrays: its coefficients equal those fitted in memory on
    the same split and centres, and a Dask prediction, computed on the workers, equals
    the in-memory prediction."""
    X, y, sigma = data()
    Xd, yd = _zarr_data(tmp_path, X, y, rows=64)
    est = nytro.NytroRegressor(40, sigma, method="cg", max_iter=8, n_iter_no_change=None,
                               validation_fraction=FRACTION, random_state=3, fit_intercept=False).fit(Xd, yd)
    seed = int(np.random.RandomState(3).randint(0, 2**63 - 1, dtype=np.int64))
    train, held = split(len(X), seed=seed)
    expected = nytro.nytro_path(X[train], y[train], est.centers_, sigma, X_val=X[held], y_val=y[held],
                                method="cg", max_iter=8, solver=est.solver_, n_threads=1)
    assert est.n_iter_ == expected.n_iter
    assert_close(est.coef_, expected.coef, X.dtype, "coef_")
    predicted = est.predict(Xd)
    assert isinstance(predicted, da.Array) and predicted.chunks == Xd.chunks[:1]
    np.testing.assert_allclose(predicted.compute(), est.predict(X), rtol=1e-12, atol=1e-12)
