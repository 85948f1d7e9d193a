"""nytro on Dask (issue 28): the overhead against in memory, a fit out of core, and the
cost model that projects it to a cluster.

Three subcommands, each writing a JSON and a markdown table with --out:

``overhead``: the same fit in memory and on a Dask LocalCluster sharing the same cores.
The data (Ijcnn's 49990 training rows, or a synthetic n x d problem) are split by
``nytro.dask.holdout_mask``; the centres are those the Dask fit draws. The in-memory fit
is ``nytro.nytro_path`` on the same training rows, hold-out rows and centres with all the
cores; the Dask fit runs on each --layouts cluster (WxT: W worker processes of T threads,
W T = the cores) with X and y persisted in the workers' memory first, their chunks spread
evenly over the workers (the comparison is of the computation, not of shipping data). Runs
are interleaved in a seeded random order, --reps each after a warm-up; the report gives
medians, their ratio, the fits' selected t and the relative difference of their
coefficients, and the load average before and after.

``out-of-core``: writes (or reuses) a float32 zarr store of n rows x d (--store), and fits
it with ``nytro.dask.nytro_path`` on a LocalCluster whose workers' memory_limit is far
below the store's size. Reports the time per stage, rows/s, peak RSS of the client and of
each worker, the store's read rate through the same cluster, the core's rate on one chunk
in this process (one thread), and what the cost model predicts.

``model``: the cost model alone (no run), for given n, m, d, nodes and measured rates.

    python benchmarks/bench_dask.py overhead --dataset ijcnn1 --m 2000 --reps 3 --out benchmarks/results/dask
    python benchmarks/bench_dask.py overhead --dataset synthetic --n 1000000 --m 500 --reps 3 \\
        --out benchmarks/results/dask
    python benchmarks/bench_dask.py out-of-core --n 10000000 --m 500 --out benchmarks/results/dask
    python benchmarks/bench_dask.py out-of-core --n 100000000 --m 2000 --workers 16   # the issue's size
    python benchmarks/bench_dask.py overhead --quick          # a smoke run of a few seconds
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import time

import numpy as np

import nytro
import nytro.dask as nd
from nytro._api import _nystrom_factor_parts
from bench_kernels import interleaved_times, machine, write_report  # a sibling script: benchmarks/ is on sys.path


def synthetic(n, d, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    y = (np.sin(X[:, :4].sum(1)) + 0.1 * rng.standard_normal(n)).astype(dtype)
    return X, y


def load(args):
    """X, y, sigma, a description."""
    if args.dataset == "synthetic":
        X, y = synthetic(args.n, args.d, args.seed)
        return X, y, float(np.sqrt(args.d)), f"synthetic n = {args.n}, d = {args.d}"
    from nytro.datasets import load_dataset
    data = load_dataset(args.dataset, args.data)
    return (np.ascontiguousarray(data.X_train), np.ascontiguousarray(data.y_train, dtype=np.float64), 1.0,
            f"{args.dataset} training rows, n = {data.X_train.shape[0]}, d = {data.X_train.shape[1]}, sigma = 1")


def load_average():
    return [round(v, 2) for v in os.getloadavg()]


def cluster(workers, threads, memory_limit="auto"):
    from distributed import LocalCluster
    return LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=":0",
                        worker_dashboard_address=":0", memory_limit=memory_limit)


# ------------------------------------------------------------------------ overhead
def persisted_evenly(client, X, y, chunk):
    """X and y as Dask arrays of `chunk` rows, chunk b of both persisted on worker b mod W.
    Left to the scheduler, 4 chunks on 2 workers were sometimes placed 3 and 1, and the
    gram pass's tasks, which run where their chunk is, then took a third longer."""
    import dask
    import dask.array as da
    from distributed import wait
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])

    def home(key):  # a chunk's key is (name, row block[, column block])
        return [workers[key[1] % len(workers)]] if isinstance(key, tuple) and len(key) > 1 else None

    with dask.annotate(workers=home, allow_other_workers=False):
        Xd, yd = da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk)
    Xd, yd = client.persist([Xd, yd], optimize_graph=False)
    wait([Xd, yd])
    return Xd, yd


def overhead(args) -> dict:
    from distributed import Client

    X, y, sigma, description = load(args)
    n = len(X)
    options = dict(method=args.method, max_iter=args.max_iter, stopping="best")
    held = nd.holdout_mask(np.arange(n), args.fraction, args.seed)
    X_train, y_train, X_val, y_val = X[~held], y[~held], X[held], y[held]
    rows = {}
    before = load_average()
    for layout in args.layouts:
        workers, threads = (int(v) for v in layout.split("x"))
        chunk = args.chunk or -(-n // (workers * args.chunks_per_worker))
        with cluster(workers, threads) as lc, Client(lc) as client:
            client.wait_for_workers(workers)
            Xd, yd = persisted_evenly(client, X, y, chunk)
            for solver in args.solvers:
                C = nd.nytro_path(Xd, yd, sigma, n_centers=args.m, validation_fraction=args.fraction,
                                  seed=args.seed, solver=solver, **options).centers
                results = {}

                def in_memory():
                    results["memory"] = nytro.nytro_path(X_train, y_train, C, sigma, X_val=X_val, y_val=y_val,
                                                         solver=solver, n_threads=workers * threads, **options)

                def on_dask():
                    results["dask"] = nd.nytro_path(Xd, yd, sigma, n_centers=args.m, validation_fraction=args.fraction,
                                                    seed=args.seed, solver=solver, **options).result

                times = interleaved_times({"memory": in_memory, "dask": on_dask}, args.reps)
                memory, dask_ = statistics.median(times["memory"]), statistics.median(times["dask"])
                a, b = results["dask"].coef, results["memory"].coef
                rows[f"{layout} {solver}"] = dict(
                    layout=layout, solver=solver, chunk_rows=chunk, chunks=-(-n // chunk), memory_s=memory,
                    dask_s=dask_, ratio=dask_ / memory, times=times,
                    n_iter=[results["dask"].n_iter, results["memory"].n_iter],
                    coef_relative_difference=float(np.linalg.norm(a - b) / np.linalg.norm(b)))
    return dict(description=description, rows=rows, load_before=before, load_after=load_average())


def format_overhead(args, report) -> str:
    mach = machine()
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores (shared with other jobs: load average "
             f"{report['load_before']} before, {report['load_after']} after; the figures are noisy)",
             f"{report['description']}, m = {args.m}, method {args.method}, max_iter {args.max_iter}, "
             f"validation_fraction {args.fraction}; in memory: {args.cores} threads; Dask: LocalCluster WxT "
             f"(W worker processes x T threads), X and y persisted, chunks spread evenly; median of {args.reps} "
             "interleaved runs", "",
             "| layout | solver | chunks | in memory (s) | Dask (s) | Dask / memory | t* (Dask, memory) | "
             "coef rel. diff |", "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"].values():
        lines.append(f"| {r['layout']} | {r['solver']} | {r['chunks']} x {r['chunk_rows']} | {r['memory_s']:.3f} | "
                     f"{r['dask_s']:.3f} | {r['ratio']:.2f} | {r['n_iter'][0]}, {r['n_iter'][1]} | "
                     f"{r['coef_relative_difference']:.1e} |")
    return "\n".join(lines) + "\n"


# -------------------------------------------------------------------- cost model
def flops_per_row(m, k, d, q, kernel_first, triangular=True):
    """Flops per training row of the gram pass. With a triangular factor (pivoted or
    Cholesky: R on its k support centres, k = m at full rank): the kernel row on the
    support (distances 2 k d, the exponential counted as a few flops per entry, 4 k), then
    K R as a triangle (k^2) and the rank update (k^2 with symmetry), or, kernel first, the
    rank update of K alone (k^2); and K^T y (2 k q). A dense R (the qr factor) acts on all
    m centres: the kernel row on m, K R (2 m k) and the rank update (k^2)."""
    if not triangular:
        return 2 * m * d + 4 * m + 2 * m * k + k * k + 2 * k * q
    kernel = 2 * k * d + 4 * k
    if kernel_first:
        return kernel + k * k + 2 * k * q
    return kernel + 2 * k * k + 2 * k * q


def model(n, m, d, nodes, cores, core_flops, read_rate, *, q=1, itemsize=4, kernel_first=False, split_every=4,
          network=1.25e9, chunk_rows=1_000_000, task_overhead=1e-3, client_flops=None) -> dict:
    """Seconds of one gram fit's stages on `nodes` machines of `cores` cores each.

    core_flops: one core's rate on the gram task (measured, flops/s); read_rate: one
    node's read rate of the stored X (bytes/s); network: bytes/s between nodes. A pass
    costs, per node, its n / nodes rows' flops over its cores and their bytes over its
    read rate (whichever bounds, as the reads overlap the compute only partly: the larger
    is taken), the scheduler's task_overhead per chunk, and the reduction: a tree of
    fan-in split_every over the chunks, each level moving m (m + q) doubles per partial
    sum (8 m^2 bytes) into one node. The client then takes its factor of K_mm (m^3 / 3,
    Cholesky-like) and the path in m dimensions (a few m^3 for the step's estimate or an
    eigendecomposition), at client_flops."""
    client_flops = client_flops or core_flops * cores
    k = m
    per_row = flops_per_row(m, k, d, q, kernel_first)
    chunks = max(1, math.ceil(n / chunk_rows))
    compute = n / nodes * per_row / (cores * core_flops)
    read = n / nodes * d * itemsize / read_rate
    depth = max(1, math.ceil(math.log(chunks, split_every))) if chunks > 1 else 0
    partial = 8.0 * m * (m + q)
    reduction = depth * (split_every * partial / network + split_every * m * m / core_flops)
    schedule = chunks * task_overhead
    client = (m ** 3 / 3 + 4 * m ** 3) / client_flops
    gram_pass = max(compute, read) + reduction + schedule
    # The other passes: y (counts and peaks), the centres, the hold-out errors (the
    # validation rows' kernel and the predictions of each iterate: 2 m d + 2 m T per row).
    return dict(n=n, m=m, d=d, nodes=nodes, cores=cores, flops_per_row=per_row, compute_s=compute, read_s=read,
                reduction_s=reduction, reduction_bytes_per_partial=partial, tree_depth=depth,
                scheduler_s=schedule, client_s=client, gram_pass_s=gram_pass,
                total_s=gram_pass + client + read + schedule)


# ------------------------------------------------------------------ out of core
def write_store(path, n, d, chunk, seed):
    """A float32 zarr store X (n x d), y (n): y = sin(sum of X's first 4 columns) plus
    noise, written chunk by chunk (the writer never holds X)."""
    import zarr
    group = zarr.open_group(path, mode="w")
    Xz = group.create_array("X", shape=(n, d), chunks=(chunk, d), dtype="float32", compressors=None)
    yz = group.create_array("y", shape=(n,), chunks=(chunk,), dtype="float32", compressors=None)
    for b, start in enumerate(range(0, n, chunk)):
        X, y = synthetic(min(chunk, n - start), d, seed + b, np.float32)
        Xz[start:start + len(X)] = X
        yz[start:start + len(X)] = y
    group.attrs["seed"] = seed


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _sum_rows(block):
    return np.asarray(block, dtype=np.float64).sum(0, keepdims=True)


def out_of_core(args) -> dict:
    import dask.array as da
    import zarr
    from distributed import Client

    ok = os.path.exists(os.path.join(args.store, "zarr.json"))
    if ok:
        Xz = zarr.open_group(args.store, mode="r")["X"]
        ok = Xz.shape == (args.n, args.d) and Xz.chunks[0] == args.chunk
    t0 = time.perf_counter()
    if not ok:
        write_store(args.store, args.n, args.d, args.chunk, args.seed)
    write_s = time.perf_counter() - t0 if not ok else None
    store_bytes = args.n * args.d * 4
    report = dict(n=args.n, d=args.d, m=args.m, chunk_rows=args.chunk, store_bytes=store_bytes, write_s=write_s,
                  workers=args.workers, memory_limit=args.memory_limit, load_before=load_average())
    # The core's rate on one chunk, in this process, one thread (the gram task itself).
    X1, y1 = synthetic(min(args.chunk, args.n), args.d, args.seed, np.float32)
    C = X1[:args.m].astype(np.float32)
    # The factor as the fit's chunks take it: its support centres and triangle.
    support, R, upper = _nystrom_factor_parts(nytro.gaussian_kernel(C, C, args.sigma))
    C, R = C[support], R.astype(np.float32)

    def task():
        start = time.perf_counter()
        nd._passes._gram_part(X1, y1[:, None], 0, len(X1), args.fraction, args.seed, C, R,
                              nd._data._Kernel("gaussian", args.sigma, 1.5), np.dtype(np.float32), None, 1, None, upper)
        return time.perf_counter() - start

    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):  # one core, as a 1-thread worker's BLAS
        task()  # warm-up: the first call pays the BLAS pool's start and fresh pages
        task_s = statistics.median(task() for _ in range(3))
    train_rows = len(X1) * (1 - args.fraction)
    per_row = flops_per_row(args.m, R.shape[1], args.d, 1, False, upper)
    report["core"] = dict(chunk_task_s=task_s, rows_per_s=train_rows / task_s,
                          flops_per_s=train_rows * per_row / task_s)
    client_base = _peak_rss()
    with cluster(args.workers, 1, args.memory_limit) as lc, Client(lc) as client:
        client.wait_for_workers(args.workers)
        X = da.from_zarr(args.store, component="X")
        y = da.from_zarr(args.store, component="y")
        start = time.perf_counter()
        X.map_blocks(_sum_rows, chunks=(1, args.d), dtype=np.float64).sum(0).compute()
        read_s = time.perf_counter() - start
        report["read"] = dict(seconds=read_s, bytes_per_s=store_bytes / read_s)
        stages = {}
        original = {name: getattr(nd._fit, name) for name in ("_split_counts", "_centers", "_normal_equations",
                                                              "_holdout_errors")}

        def timed(name):
            def wrapper(*a, **kw):
                start = time.perf_counter()
                out = original[name](*a, **kw)
                stages[name.strip("_")] = stages.get(name.strip("_"), 0.0) + time.perf_counter() - start
                return out
            return wrapper

        for name in original:
            setattr(nd._fit, name, timed(name))
        try:
            start = time.perf_counter()
            fit = nd.nytro_path(X, y, args.sigma, n_centers=args.m, validation_fraction=args.fraction,
                                seed=args.seed, method=args.method, max_iter=args.max_iter, solver="gram",
                                dtype=np.float32)
            fit_s = time.perf_counter() - start
        finally:
            for name, fn in original.items():
                setattr(nd._fit, name, fn)
        workers = client.run(_peak_rss)
        limits = [w["memory_limit"] for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    report.update(fit_s=fit_s, stages=stages, rows_per_s=args.n / fit_s, n_iter=fit.result.n_iter,
                  rank=fit.result.rank, validation_rmse=float(fit.result.validation_rmse[fit.result.n_iter - 1]),
                  client_peak_rss=_peak_rss(), client_rss_before_fit=client_base,
                  worker_peak_rss=list(workers.values()), worker_memory_limits=limits, load_after=load_average())
    cores = args.workers
    report["model_here"] = model(args.n, args.m, args.d, 1, cores, report["core"]["flops_per_s"],
                                 report["read"]["bytes_per_s"], chunk_rows=args.chunk)
    report["model_issue_size"] = model(10**8, 2000, args.d, 1, cores, report["core"]["flops_per_s"],
                                       report["read"]["bytes_per_s"], chunk_rows=args.chunk)
    return report


def format_out_of_core(args, r) -> str:
    mach = machine()
    gib = 2.0**30
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores (shared: load average {r['load_before']} before, "
             f"{r['load_after']} after; noisy)",
             f"zarr store {r['n']} x {r['d']} float32 ({r['store_bytes'] / gib:.2f} GiB), chunks of {r['chunk_rows']} "
             f"rows; LocalCluster {r['workers']} workers x 1 thread, memory_limit {args.memory_limit} each; "
             f"m = {r['m']} (rank {r['rank']}), method {args.method}, max_iter {args.max_iter}, solver gram, float32",
             "", "| quantity | value |", "|---|---|",
             f"| fit, wall (s) | {r['fit_s']:.1f} |",
             f"| rows/s (all n) | {r['rows_per_s']:.3g} |"]
    for name, seconds in r["stages"].items():
        lines.append(f"| stage {name} (s) | {seconds:.1f} |")
    lines += [f"| store read through the cluster (s, GB/s) | {r['read']['seconds']:.1f}, "
              f"{r['read']['bytes_per_s'] / 1e9:.2f} |",
              f"| core, one chunk's gram task, 1 thread (training rows/s, GFLOP/s) | "
              f"{r['core']['rows_per_s']:.3g}, {r['core']['flops_per_s'] / 1e9:.1f} |",
              f"| gram pass predicted by the model (s) | {r['model_here']['gram_pass_s']:.1f} |",
              f"| peak RSS client (GiB; before the fit {r['client_rss_before_fit'] / gib:.2f}) | "
              f"{r['client_peak_rss'] / gib:.2f} |",
              f"| peak RSS workers (GiB) | {', '.join(f'{v / gib:.2f}' for v in r['worker_peak_rss'])} |",
              f"| selected t, hold-out RMSE | {r['n_iter']}, {r['validation_rmse']:.4f} |",
              "", f"Model for the issue's size (10^8 x 10, m = 2000, this machine's measured rates, "
              f"{r['workers']} cores): gram pass {r['model_issue_size']['gram_pass_s']:.0f} s "
              f"(compute {r['model_issue_size']['compute_s']:.0f} s, read {r['model_issue_size']['read_s']:.0f} s)."]
    return "\n".join(lines) + "\n"


def format_model(rows) -> str:
    lines = ["| n | m | nodes x cores | compute (s) | read (s) | reduction (s) | scheduler (s) | client (s) | "
             "total (s) | partial sum (GB) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']:.0e} | {r['m']} | {r['nodes']} x {r['cores']} | {r['compute_s']:.3g} | "
                     f"{r['read_s']:.3g} | {r['reduction_s']:.3g} | {r['scheduler_s']:.3g} | {r['client_s']:.3g} | "
                     f"{r['total_s']:.3g} | {r['reduction_bytes_per_partial'] / 1e9:.3g} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--dataset", default="synthetic", help="synthetic, or a nytro.datasets name (ijcnn1)")
    o.add_argument("--data", default=os.environ.get("NYTRO_DATA"), help="the datasets' folder")
    o.add_argument("--n", type=int, default=1_000_000)
    o.add_argument("--d", type=int, default=10)
    o.add_argument("--m", type=int, default=500)
    o.add_argument("--method", default="cg")
    o.add_argument("--max-iter", type=int, default=20)
    o.add_argument("--chunk", type=int, default=None, help="rows per chunk (default: --chunks-per-worker)")
    o.add_argument("--chunks-per-worker", type=int, default=2)
    o.add_argument("--fraction", type=float, default=0.2)
    o.add_argument("--solvers", default="gram,direct")
    o.add_argument("--layouts", default="2x1,1x2", help="WxT clusters: W workers of T threads")
    o.add_argument("--reps", type=int, default=3)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--quick", action="store_true", help="a smoke run: n = 20000, m = 100, one repetition")
    o.add_argument("--out", default=None)
    c = sub.add_parser("out-of-core")
    c.add_argument("--store", default="/tmp/nytro_bench_dask.zarr")
    c.add_argument("--n", type=int, default=10_000_000)
    c.add_argument("--d", type=int, default=10)
    c.add_argument("--m", type=int, default=500)
    c.add_argument("--chunk", type=int, default=500_000)
    c.add_argument("--workers", type=int, default=2)
    c.add_argument("--memory-limit", default="1GiB")
    c.add_argument("--sigma", type=float, default=float(np.sqrt(10)))
    c.add_argument("--method", default="cg")
    c.add_argument("--max-iter", type=int, default=20)
    c.add_argument("--fraction", type=float, default=0.2)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", default=None)
    p = sub.add_parser("model")
    p.add_argument("--core-gflops", type=float, required=True, help="one core's rate on the gram task")
    p.add_argument("--read-gbs", type=float, default=1.0, help="one node's read rate of X, GB/s")
    p.add_argument("--n", type=float, default=1e9)
    p.add_argument("--ms", default="2000,10000,30000")
    p.add_argument("--nodes", default="1,32,128")
    p.add_argument("--cores", type=int, default=16)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.command == "overhead":
        if args.quick:
            args.n, args.m, args.reps, args.max_iter, args.dataset = 20_000, 100, 1, 10, "synthetic"
        args.solvers, args.layouts = args.solvers.split(","), args.layouts.split(",")
        args.cores = nytro._checks.available_cores()
        report = overhead(args)
        stem, text = f"overhead_{args.dataset}", format_overhead(args, report)
    elif args.command == "out-of-core":
        report = out_of_core(args)
        stem, text = "out_of_core", format_out_of_core(args, report)
    else:
        rows = [model(int(args.n), int(m), args.d, int(nodes), args.cores, args.core_gflops * 1e9, args.read_gbs * 1e9)
                for m in args.ms.split(",") for nodes in args.nodes.split(",")]
        report, stem, text = dict(rows=rows), "model", format_model(rows)
    report = dict(args=vars(args), machine=machine(), report=report)
    if args.out:
        write_report(args.out, stem, report, text)
        with open(os.path.join(args.out, f"{stem}_command.txt"), "w") as f:
            f.write("python benchmarks/bench_dask.py " + " ".join(argv or __import__("sys").argv[1:]) + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
