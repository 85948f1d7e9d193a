"""The overhead of fitting on Dask arrays: the same fit in memory and on a Dask
LocalCluster sharing the same cores (issue 28 asks Dask within 1.3x of in memory).

A synthetic problem (X of n rows x d standard normal features, y = sin(sum of the
first four features) + noise) is split by ``nytro.dask.holdout_mask``; the centres are
those the Dask fit draws. The in-memory fit is ``nytro.nytro_path`` on the same training
rows, hold-out rows and centres, with all the cores (--threads); the Dask fit runs on a
LocalCluster of --threads worker processes of one thread each, with X and y persisted in
the workers' memory first (so the comparison is of the computation, not of shipping the
data to the workers). Both are timed interleaved in a seeded random order, --reps times
each after a warm-up; the report gives the medians, their ratio, and the relative
difference of the two fits' coefficients (which must agree: the same fit).

Run it alone on a quiet machine (the full size takes minutes):

    python benchmarks/bench_dask.py --n 1000000 --m 1000 --reps 5 --out benchmarks/results/bench_dask
    python benchmarks/bench_dask.py --quick          # a smoke run of a few seconds
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np

import nytro
import nytro.dask as nd
from bench_kernels import interleaved_times, machine, write_report  # a sibling script: benchmarks/ is on sys.path


def synthetic(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, :4].sum(1)) + 0.1 * rng.standard_normal(n)
    return X, y


def run(args) -> dict:
    import dask.array as da
    from distributed import Client, LocalCluster

    X, y = synthetic(args.n, args.d, args.seed)
    sigma = float(np.sqrt(args.d))
    options = dict(method=args.method, max_iter=args.max_iter, stopping="best")
    held = nd.holdout_mask(np.arange(args.n), args.fraction, args.seed)
    rows = {}
    with LocalCluster(n_workers=args.threads, threads_per_worker=1, processes=True, dashboard_address=":0",
                      worker_dashboard_address=":0") as cluster, Client(cluster) as client:
        Xd = da.from_array(X, chunks=(args.chunk, -1)).persist()
        yd = da.from_array(y, chunks=args.chunk).persist()
        client.wait_for_workers(args.threads)
        for solver in args.solvers:
            first = nd.nytro_path(Xd, yd, sigma, n_centers=args.m, validation_fraction=args.fraction,
                                  seed=args.seed, solver=solver, **options)
            C = first.centers
            X_train, y_train, X_val, y_val = X[~held], y[~held], X[held], y[held]
            results = {}

            def in_memory():
                results["memory"] = nytro.nytro_path(X_train, y_train, C, sigma, X_val=X_val, y_val=y_val,
                                                     solver=solver, n_threads=args.threads, **options)

            def on_dask():
                results["dask"] = nd.nytro_path(Xd, yd, sigma, n_centers=args.m, validation_fraction=args.fraction,
                                                seed=args.seed, solver=solver, **options).result

            times = interleaved_times({"memory": in_memory, "dask": on_dask}, args.reps)
            memory, dask_ = statistics.median(times["memory"]), statistics.median(times["dask"])
            a, b = results["dask"].coef, results["memory"].coef
            rows[solver] = dict(memory_s=memory, dask_s=dask_, ratio=dask_ / memory, times=times,
                                n_iter=[results["dask"].n_iter, results["memory"].n_iter],
                                coef_relative_difference=float(np.linalg.norm(a - b) / np.linalg.norm(b)))
    return rows


def format_report(args, rows) -> str:
    mach = machine()
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores; BLAS {mach['blas']}",
             f"n = {args.n}, d = {args.d}, m = {args.m}, method {args.method}, max_iter {args.max_iter}, "
             f"chunks of {args.chunk} rows, {args.threads} cores (in memory: {args.threads} threads; Dask: "
             f"{args.threads} workers x 1 thread), median of {args.reps} interleaved runs", "",
             "| solver | in memory (s) | Dask (s) | Dask / memory | t* (Dask, memory) | coef rel. diff |",
             "|---|---|---|---|---|---|"]
    for solver, r in rows.items():
        lines.append(f"| {solver} | {r['memory_s']:.3f} | {r['dask_s']:.3f} | {r['ratio']:.2f} | "
                     f"{r['n_iter'][0]}, {r['n_iter'][1]} | {r['coef_relative_difference']:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--m", type=int, default=1000)
    parser.add_argument("--method", default="cg")
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--fraction", type=float, default=0.2)
    parser.add_argument("--solvers", default="gram,direct")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: n = 20000, m = 100, one repetition")
    parser.add_argument("--out", default=None, help="folder for bench_dask.json and .md")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.m, args.chunk, args.reps, args.max_iter = 20_000, 100, 5_000, 1, 10
    args.solvers = args.solvers.split(",")
    rows = run(args)
    text = format_report(args, rows)
    if args.out:
        write_report(args.out, "bench_dask", dict(args=vars(args), machine=machine(), rows=rows), text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
