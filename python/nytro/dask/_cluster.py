"""Where the tasks run: the distributed client, the workers' threads and malloc, broadcasts
and tree sums, pinned tasks and their placement, the products asked of the workers
directly, and the cost model of solver="auto" on a cluster."""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import os
import threading
import time
from dataclasses import dataclass

import numpy as np

import dask

from .. import _checks as chk
from ._data import _blocks, _Data


# One C++ / BLAS call at a time per worker process, each with all the worker's threads:
# the worker may run several tasks at once, and their threads must not add up past the
# worker's share of the cores. The BLAS pool itself is left as the worker set it
# (distributed's nanny starts workers with OPENBLAS/MKL/OMP_NUM_THREADS=1): a fit never
# changes process-wide state.
_CORE_LOCK = threading.Lock()


# The client's products in m dimensions up to this many multiply-adds are made without
# BLAS (einsum's own loop, a fraction of a millisecond at m = 1000): after a threaded BLAS
# call, OpenBLAS's idle threads spin for about a tenth of a second of a core each, and on a
# LocalCluster that core is taken from the workers, whose pass is then under way.
_CLIENT_PRODUCT_MACS = 1 << 22


# distributed's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which also turns
# off glibc's dynamic mmap threshold: every allocation past 128 KiB is then a fresh mmap,
# and a freed block at the heap's top is returned at once. The core allocates buffers of
# 0.5-2 MiB per output tile (Eigen's packing), each page-faulted anew, so a chunk's normal
# equations ran up to 1.3x slower in a worker than in a plain process. Once per worker
# process, before its first C++ call, nytro lets buffers of that size come from the heap
# and stay there between tiles: mmap threshold 4 MiB, trim threshold 8 MiB (a worker keeps
# up to that much freed memory at a heap's top). Not higher: the arrays of a task's size
# (a chunk read from storage, its conversion to the computation's dtype, its training
# rows) must stay mappings of their own, returned to the OS when freed. Taken from the
# heap, they are freed at different times (a chunk lives until its task has run) between
# other allocations of the worker's threads, and the holes they leave are never trimmed:
# the worker's unmanaged memory then grows pass after pass, until distributed reports it
# as memory pressure, or spills and pauses (issue 47). Not where the worker was given its
# own MALLOC_MMAP_THRESHOLD_, or a trim threshold of 8 MiB or more.
_MMAP_THRESHOLD = 4 << 20


_TRIM_THRESHOLD = 8 << 20


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


@functools.cache
def _tune_worker_malloc():
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if trim is None or not trim.isdigit() or int(trim) >= _TRIM_THRESHOLD or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


# The worker's nthreads while _held_sum computes on it: in the thread pool it runs in,
# outside a task, distributed's get_worker finds no worker.
_HELD = threading.local()


def _task_threads(requested: int | None) -> int:
    """The threads a C++ call on this worker may use: the worker's own (its nthreads),
    never more than the cores this process may run on, nor than the caller asked. Called
    before every C++ call of a task, it also tunes the worker's malloc once
    (_tune_worker_malloc)."""
    _tune_worker_malloc()
    n = chk.available_cores()
    held = getattr(_HELD, "nthreads", None)
    if held:
        n = min(n, held)
    else:
        try:
            from distributed import get_worker
            n = min(n, get_worker().state.nthreads)
        except (ImportError, ValueError):  # not on a distributed worker: the local scheduler
            pass
    return max(1, min(n, requested) if requested else n)


def _client():
    """The current distributed Client, or None (Dask's local schedulers)."""
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


# An array up to this size travels inside the pass's graph (one copy, which the workers
# fetch from each other), saving the scatter's round trip to the scheduler; a larger one is
# scattered to every worker once (a graph of many MiB is slow to send, and Dask warns).
_IN_GRAPH_BYTES = 1 << 20


def _broadcast(*arrays):
    """The arrays as the tasks of a pass take them, each sent to the workers once: a small
    one as a single value of the graph, a larger one scattered to every worker; as they
    are without a distributed client (the local scheduler shares memory)."""
    client = _client()
    if client is None:
        return arrays
    large = [a for a in arrays if np.asarray(a).nbytes > _IN_GRAPH_BYTES]
    scattered = iter(client.scatter(large, broadcast=True, hash=False) if large else ())
    return tuple(next(scattered) if np.asarray(a).nbytes > _IN_GRAPH_BYTES else dask.delayed(a) for a in arrays)


def _client_product(A, B):
    """A @ B on the client (B 1-D or 2-D), without waking BLAS's threads where it is small
    (_CLIENT_PRODUCT_MACS)."""
    columns = B.shape[1] if B.ndim == 2 else 1
    if A.shape[0] * A.shape[1] * columns <= _CLIENT_PRODUCT_MACS:
        return np.einsum("ij,j...->i...", A, B)
    return A @ B


def _add(*parts):
    """The sum of the partial sums `parts` in float64, added in their order. An overflow
    is no warning here: the callers refuse non-finite sums by name (A^T A overflowing,
    diverged iterations)."""
    total = np.array(parts[0], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for part in parts[1:]:
            total += part
    return total


def _tree_sum(parts, shape, split_every):
    """The sum of the delayed arrays `parts` (each of `shape`, float64) as one delayed
    value: a tree of _add tasks in which at most split_every partial sums meet (Dask's
    reductions' default fan-in for None). Plain tasks, not a dask.array reduction, whose
    graph takes several times as long to build and schedule (the direct mode builds one
    per product)."""
    fan_in = split_every or dask.config.get("split_every", 4)
    level = list(parts) or [dask.delayed(np.zeros)(shape)]
    while len(level) > 1:
        level = [dask.delayed(_add)(*level[i:i + fan_in]) for i in range(0, len(level), fan_in)]
    return level[0]


# Seconds to wait for a worker when the cluster has none (a TimeoutError after them).
_WORKER_WAIT = 60.0


class _WorkerLost(Exception):
    """A worker that holds blocks has left the cluster, or no longer holds them."""


class _Missing:
    """What a worker answers for blocks it does not hold."""


async def _held_sum(task, keys, args, dask_worker=None):
    """On a worker (client.run): the sum, in float64 and in the order of keys[its
    address], of task(block, *args) over the blocks it holds under those keys, computed in
    its thread pool (not on its event loop, which must keep answering the scheduler);
    a _Missing where it lacks one."""
    import asyncio
    mine = keys[dask_worker.address]
    if not all(key in dask_worker.data for key in mine):
        return _Missing()
    blocks = [dask_worker.data[key] for key in mine]  # read here: the data store is the event loop's
    nthreads = dask_worker.state.nthreads

    def held_sum():
        _HELD.nthreads = nthreads
        try:
            return _add(*(task(block, *args) for block in blocks))
        finally:
            _HELD.nthreads = None
    return await asyncio.get_running_loop().run_in_executor(dask_worker.executors["default"], held_sum)


def _homes(client, count) -> list:
    """The worker each of `count` blocks is computed and read on: the workers (by address)
    in turn, each as many times in a round as it has threads; None each without a client."""
    if client is None:
        return [None] * count
    workers = client.scheduler_info(n_workers=-1)["workers"]
    if not workers:  # all restarting (their nannies bring them back) or not started yet
        client.wait_for_workers(1, timeout=_WORKER_WAIT)
        workers = client.scheduler_info(n_workers=-1)["workers"]
    slots = [address for address in sorted(workers) for _ in range(max(1, int(workers[address].get("nthreads") or 1)))]
    return [slots[i % len(slots)] for i in range(count)]


def _chunk_tasks(data: _Data, task, *args) -> list:
    """task(x, y, start, stop, *args) for every chunk (_blocks), as delayed values, each
    placed by _placement where X's chunks are persisted (loosely: another worker may run it
    if that one has gone), left to the scheduler otherwise."""
    blocks = _blocks(data)
    tasks = []
    for (x, y, start, stop), home in zip(blocks, _placement(blocks)):
        if home is None:
            tasks.append(dask.delayed(task)(x, y, start, stop, *args))
            continue
        with dask.annotate(workers=[home], allow_other_workers=True):
            tasks.append(dask.delayed(task)(x, y, start, stop, *args))
    return tasks


def _placement(blocks) -> list:
    """The worker to run each chunk's task of a pass on (None: the scheduler's choice), for
    chunks of X persisted on the workers: the worker holding the chunk, unless that worker
    already has its share of the chunks (their count times its share of the threads,
    rounded up), then the least loaded worker. The arrays a pass broadcasts are on every
    worker, which made each worker a candidate for every task: left to itself, the
    scheduler sometimes ran three of four evenly persisted chunks' tasks on one of two
    workers, and a gram pass took a third longer."""
    client = _client()
    if client is None:
        return [None] * len(blocks)
    from distributed import Future
    graph = {b: x.dask.get(x.key) for b, (x, _, _, _) in enumerate(blocks)}
    persisted = {b: value for b, value in graph.items() if isinstance(value, Future)}
    who = client.who_has(list(persisted.values())) if persisted else {}
    holders = {b: sorted(who[future.key]) for b, future in persisted.items() if who.get(future.key)}
    threads = {address: max(1, int(info.get("nthreads") or 1))
               for address, info in client.scheduler_info(n_workers=-1)["workers"].items()}
    if not holders or not threads:
        return [None] * len(blocks)
    total = sum(threads.values())
    share = {address: math.ceil(len(holders) * t / total) for address, t in threads.items()}
    load = dict.fromkeys(threads, 0)
    homes = [None] * len(blocks)
    for b, where in holders.items():
        home = next((w for w in where if w in load and load[w] < share[w]), None)
        if home is not None:
            homes[b] = home
            load[home] += 1
    for b in holders:
        if homes[b] is None:
            homes[b] = min(sorted(load), key=lambda w: load[w] / threads[w])
            load[homes[b]] += 1
    return homes


def _pinned(home, task, *args):
    """dask.delayed(task)(*args), to be run on the worker `home` and no other (None: anywhere)."""
    if home is None:
        return dask.delayed(task)(*args)
    with dask.annotate(workers=[home], allow_other_workers=False):
        return dask.delayed(task)(*args)


def _no_work(block):
    return np.zeros(1)  # never called: _round_trip_seconds's workers hold no blocks under its keys


# (scheduler address, chunks) -> seconds of one round trip of a product's shape.
_ROUND_TRIPS: dict = {}


def _round_trip_seconds(client, chunks, split_every=None) -> float:
    """The wall time of a direct product that does no work (each worker asked for its sum
    over `chunks` blocks spread as the blocks are, which it finds it does not hold): the
    round trip of every product. The best of three (the first may import on the workers),
    measured once per client and number of chunks."""
    key = (client.scheduler.address, chunks)
    if key not in _ROUND_TRIPS:
        held = {}
        for i, home in enumerate(_homes(client, chunks)):
            held.setdefault(home, []).append(f"nytro-no-block-{i}")
        times = []
        for _ in range(3):
            begin = time.perf_counter()
            client.run(_held_sum, _no_work, held, (), workers=sorted(held))  # no blocks there: nothing read
            times.append(time.perf_counter() - begin)
        _ROUND_TRIPS[key] = min(times)
    return _ROUND_TRIPS[key]


@dataclass
class _Cluster:
    """What "auto" weighs on a distributed client: each worker's memory_limit (0: none),
    the workers' flop/s together, and the seconds of a product's round trip."""

    limits: list
    flops: float
    latency: float


def _cluster(data: _Data) -> _Cluster | None:
    """The current distributed client's _Cluster for products over `data`'s chunks, or
    None without one. The workers' rate: the client's probed float64 (float32) flop/s per
    thread (nytro.machine_rates, cached) times the workers' threads. Its latency is left
    at 0: _auto_mode times a round trip only where it can change the choice."""
    client = _client()
    if client is None:
        return None
    from .._config import machine_rates
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    rate = machine_rates(1)["flops32" if data.dtype == np.float32 else "flops"]
    threads = sum(int(w.get("nthreads") or 1) for w in workers)
    return _Cluster([int(w.get("memory_limit") or 0) for w in workers], rate * threads, 0.0)


def _auto_mode(solver, method, n_train, k, max_iter, data, m, split_every, itemsize=None) -> str:
    """_choose_solver with the current cluster; a round trip is timed only when "direct"
    wins without it (a latency can only turn "direct" into "gram"). max_iter: the path's
    products; itemsize: the bytes of a kept kernel value (None: the computation's)."""
    cluster = _cluster(data) if solver == "auto" and method != "hybrid" else None
    args = (solver, method, n_train, k, max_iter, itemsize or data.dtype.itemsize)
    mode = _choose_solver(*args, m=m, **(dataclasses.asdict(cluster) if cluster else {}))
    if mode == "direct" and cluster is not None:
        cluster.latency = _round_trip_seconds(_client(), len(_blocks(data)), split_every)
        mode = _choose_solver(*args, m=m, **dataclasses.asdict(cluster))
    return mode


def _choose_solver(solver, method, n_train, k, max_iter, itemsize, limits=None, m=None, latency=0.0,
                   flops=math.inf):
    """ "gram" or "direct" for solver "auto" (see DASK_SOLVER's row in nytro._dask_options for
    the model; the direct mode's blocks hold n_train x m kernel values, m = k when not
    given). A round trip of `latency` seconds counts as latency * flops flops (`flops`:
    the workers' flop/s together): direct takes max_iter of them, gram one."""
    if solver != "auto":
        return solver
    if method == "hybrid" or not limits:  # no limits: the local schedulers, the blocks in this process
        return "gram"
    trip = latency * flops if latency > 0 else 0.0
    if not max_iter * (4 * n_train * k + trip) < 2 * n_train * k * k + k ** 3 + trip:
        return "gram"
    share = n_train * (m or k) * itemsize / len(limits)
    return "direct" if all(limit == 0 or share <= limit / 2 for limit in limits) else "gram"
