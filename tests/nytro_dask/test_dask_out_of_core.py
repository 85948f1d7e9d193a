"""A fit on a zarr store four times larger than the workers' memory (issue 28).

X (float32) is written to disk chunk by chunk and never held whole by the client nor by
any worker. To keep the in-memory answer affordable, every chunk of the store holds the
same base block B of rows (and y the same targets): the hold-out split still differs
from chunk to chunk (it hashes global row indices), and A^T A, A^T y and the hold-out
errors reduce to sums over chunks of masked products with k(B, C) R, computed here
once. The fit runs in float64 (each chunk converted on its worker), so it must equal
that reference to float64 rounding.
"""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
psutil = pytest.importorskip("psutil")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
from conftest import relative_error  # noqa: E402

# A worker process with nytro imported has an RSS of about 150 MiB here, 180 MiB where
# pandas is installed (scikit-learn imports it); distributed spills at 70% of memory_limit
# and pauses at 80%, so 384 MiB leaves a task ~90 MiB of headroom (the chunks queued on
# the worker, an 8 MiB chunk's float64 copy and its training rows) before any spill. The
# worker must return what its tasks free: see nytro.dask's malloc thresholds (issue 47).
MEMORY_LIMIT = 384 * 2**20
WORKERS = 2
ROWS, FEATURES = 32768, 64         # an 8 MiB float32 chunk
CHUNKS = 4 * WORKERS * MEMORY_LIMIT // (ROWS * FEATURES * 4)   # X is 4x the total limit
SEED, FRACTION, CENTERS, SIGMA, STEPS = 5, 0.2, 12, 6.0, 40


def _memory_report(dask_worker):
    """What this worker holds spilled (bytes in memory, on disk), its spilled keys, and its
    log lines about memory pressure."""
    record = tuple(dask_worker.data.spilled_total)
    words = ("spill", "paus", "unmanaged memory", "exceeded", "restart")
    logs = [line for _, line in dask_worker.get_logs() if any(w in line.lower() for w in words)]
    return record, len(getattr(dask_worker.data, "slow", {})), logs


@pytest.mark.slow  # 50-80 s on 2 shared cores: 3 GiB written, then read twice
def test_fit_from_a_zarr_store_four_times_the_workers_memory(tmp_path):
    rng = np.random.default_rng(0)
    B = rng.standard_normal((ROWS, FEATURES)).astype(np.float32)
    y_block = (np.sin(B[:, :4].sum(1)) + 0.1 * rng.standard_normal(ROWS)).astype(np.float32)
    n = CHUNKS * ROWS
    store = str(tmp_path / "data.zarr")
    group = zarr.open_group(store, mode="w")
    Xz = group.create_array("X", shape=(n, FEATURES), chunks=(ROWS, FEATURES), dtype="float32", compressors=None)
    yz = group.create_array("y", shape=(n,), chunks=(ROWS,), dtype="float32", compressors=None)
    for b in range(CHUNKS):  # one chunk at a time: the client never holds X
        Xz[b * ROWS:(b + 1) * ROWS] = B
        yz[b * ROWS:(b + 1) * ROWS] = y_block
    x_bytes = n * FEATURES * 4
    assert x_bytes >= 4 * WORKERS * MEMORY_LIMIT

    # The reference, from B: per chunk b, its training rows are B[~held_b].
    held = [nd.holdout_mask(np.arange(b * ROWS, (b + 1) * ROWS), FRACTION, SEED) for b in range(CHUNKS)]
    n_val = sum(int(h.sum()) for h in held)
    n_train = n - n_val

    with distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                                  memory_limit=MEMORY_LIMIT, dashboard_address=":0",
                                  worker_dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        workers_before = set(client.scheduler_info()["workers"])
        X = da.from_zarr(store, component="X")
        y = da.from_zarr(store, component="y")
        assert X.chunks[0] == (ROWS,) * CHUNKS

        process = psutil.Process(os.getpid())
        baseline = process.memory_info().rss
        peak = [baseline]
        done = threading.Event()

        def watch():
            while not done.wait(0.05):
                peak[0] = max(peak[0], process.memory_info().rss)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            fit = nd.nytro_path(X, y, SIGMA, n_centers=CENTERS, validation_fraction=FRACTION, seed=SEED,
                                method="gd", max_iter=STEPS, dtype=np.float64, solver="gram")
        finally:
            done.set()
            watcher.join()
        grown = peak[0] - baseline

        logs = client.run(_memory_report)
        workers_after = set(client.scheduler_info()["workers"])

    assert workers_after == workers_before, "a worker was restarted"
    for address, (spilled, slow, memory_lines) in logs.items():
        assert spilled[1] == 0 and slow == 0, f"{address} spilled to disk: {spilled}"
        assert not memory_lines, f"{address} logged memory pressure: {memory_lines}"
    assert grown < x_bytes / 4, f"the client's RSS grew by {grown / 2**20:.0f} MiB"
    assert (fit.n_train, fit.n_val) == (n_train, n_val)

    C = fit.centers
    np.testing.assert_array_equal(C, B[fit.center_rows % ROWS].astype(np.float64))
    R = nytro.nystrom_factor(nytro.gaussian_kernel(C, C, SIGMA))
    A = nytro.gaussian_kernel(B.astype(np.float64), C, SIGMA) @ R
    yb = y_block.astype(np.float64)
    H = sum(A[~h].T @ A[~h] for h in held)
    c = sum(A[~h].T @ yb[~h] for h in held)
    step = fit.result.step_size  # "auto": 1 / lambda_max(A^T A)
    assert relative_error(step, 1 / np.linalg.eigvalsh(H)[-1]) <= 1e-10
    beta, coefs = np.zeros(len(c)), []
    for _ in range(STEPS):
        beta = beta + step * (c - H @ beta)
        coefs.append(R @ beta)
    P = nytro.gaussian_kernel(B.astype(np.float64), C, SIGMA) @ np.column_stack(coefs)
    errors = sum((((P[h] - yb[h, None]) ** 2).sum(0)) for h in held)
    path = np.sqrt(errors / n_val)
    best = int(np.argmin(path))
    assert fit.result.n_iter == best + 1
    assert relative_error(fit.result.validation_rmse, path) <= 1e-10
    assert relative_error(fit.result.coef, coefs[best]) <= 1e-10
