"""Where the spectral solver's time goes, stage by stage, beside the Gram solver on the same
problem and the eigendecomposition's own time in NumPy.

Each fit is nytro_path (gd, max_iter, a 20% hold-out) on bench_auto's synthetic problem,
run with a progress callback; the core reports "factor" once the Nystrom factor is done,
"gram" per block of A^T A, "eigendecomposition" once V diag(s) V^T is done and
"step_size" while lambda_max is estimated. The stages cut at the last event of each:

  factor              K_mm and its pivoted Cholesky factor
  normal equations    A^T A and A^T y from streamed kernel blocks (n m^2 flops and more)
  eigendecomposition  LAPACK's dsyevd (SciPy's OpenBLAS) of the m x m A^T A
  set-up              V^T c, R V, the hold-out kernel's change of basis where it pays, and
                      the step (lambda_max, from the eigenvalues)
  path                the iterations (O(m) each) and their validation (2 n_val m flops each)

Three variants per cell, interleaved in a seeded random order each round: the spectral
solver with the BLAS pool as the process has it (nytro leaves it to the caller), the
spectral solver with the pool capped at one thread (threadpoolctl), and the Gram solver
(pool as set; it makes no LAPACK call on the path). Beside them, per round: NumPy's eigh of
an m x m matrix with the pool as set and capped at one thread, and dgemm's GFLOP/s
(2048^2) at the fits' thread count. On a machine whose cores are all busy, a pool of
several threads waits at each of the tridiagonal reduction's barriers, one per column.

    python benchmarks/bench_spectral.py --out benchmarks/results/spectral      # minutes on 2 cores
    python benchmarks/bench_spectral.py --n 20000,80000 --d 10,90 --m 1000,2000 --threads 1,2
    python benchmarks/bench_spectral.py --quick                                  # seconds
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import warnings
from datetime import datetime, timezone

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import nytro
from bench_auto import int_list, problem  # sibling scripts: benchmarks/ is on sys.path
from bench_kernels import machine

STAGES = ("factor", "normal equations", "eigendecomposition", "set-up", "path")
EVENT_ENDS = (("factor", "factor"), ("gram", "normal equations"), ("eigendecomposition", "eigendecomposition"),
              ("step_size", "set-up"))
VARIANTS = (("spectral", "pool as set"), ("spectral", "pool capped at 1"), ("gram", "pool as set"))


def stages_of(events: list, total: float) -> dict:
    """Seconds per stage (STAGES) of a fit that lasted `total`, from its (seconds, event)
    progress events: each stage ends at the last event of its kind; a stage without
    events (the Gram solver's eigendecomposition) takes 0 s, and the path the rest."""
    last = {}
    for t, event in events:
        last[event] = t
    out, previous = {}, 0.0
    for event, stage in EVENT_ENDS:
        end = last.get(event, previous)
        out[stage] = end - previous
        previous = end
    out["path"] = total - previous
    return out


def fit(X, y, X_val, y_val, centers, sigma, solver, threads, cap, max_iter):
    """(total seconds, stages, result) of one nytro_path fit, the BLAS pool capped at `cap`
    threads (None: as set)."""
    events = []

    def progress(stage, done, total):
        events.append((time.perf_counter() - start, stage))

    with threadpool_limits(cap, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = nytro.nytro_path(X, y, centers, sigma, X_val=X_val, y_val=y_val, max_iter=max_iter, solver=solver,
                                  n_threads=threads, progress=progress)
        total = time.perf_counter() - start
    return total, stages_of(events, total), result


def eigh_seconds(m: int, cap, rng) -> float:
    B = rng.standard_normal((m, m))
    H = B @ B.T / m
    with threadpool_limits(cap, user_api="blas"):
        start = time.perf_counter()
        np.linalg.eigh(H)
        return time.perf_counter() - start


def dgemm_gflops(threads: int, size: int, rng) -> float:
    A, B = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    with threadpool_limits(threads, user_api="blas"):
        A @ B  # warm-up: the pool, the packing buffers
        start = time.perf_counter()
        A @ B
        return 2.0 * size**3 / (time.perf_counter() - start) / 1e9


def run_cell(n, m, d, threads, args, rng):
    X, y, sigma = problem(n, d)
    n_val = n // 5
    X_fit, y_fit, X_val, y_val = X[n_val:], y[n_val:], X[:n_val], y[:n_val]
    centers = X_fit[nytro.sample_centers(X_fit.shape[0], m, 1)]
    runs = {f"{s}, {p}": [] for s, p in VARIANTS}
    reference = {"eigh, pool as set": [], "eigh, pool capped at 1": [], "dgemm_gflops": []}
    coefs = {}
    for _ in range(args.rounds):
        for index in rng.permutation(len(VARIANTS)):
            solver, pool = VARIANTS[index]
            cap = 1 if pool.endswith("at 1") else None
            total, stages, result = fit(X_fit, y_fit, X_val, y_val, centers, sigma, solver, threads, cap,
                                        args.max_iter)
            runs[f"{solver}, {pool}"].append({"seconds": total, "stages": stages})
            coefs[f"{solver}, {pool}"] = result.coef
        reference["eigh, pool as set"].append(eigh_seconds(m, None, rng))
        reference["eigh, pool capped at 1"].append(eigh_seconds(m, 1, rng))
        reference["dgemm_gflops"].append(dgemm_gflops(threads, args.gemm_size, rng))
    base = coefs[f"{VARIANTS[0][0]}, {VARIANTS[0][1]}"]
    medians = {name: {"seconds": statistics.median(r["seconds"] for r in rs),
                      "stages": {s: statistics.median(r["stages"][s] for r in rs) for s in STAGES}}
               for name, rs in runs.items()}
    return {"n": n, "n_val": n_val, "m": m, "d": d, "threads": threads, "runs": runs, "median": medians,
            "reference": reference, "reference_median": {k: statistics.median(v) for k, v in reference.items()},
            "max_coef_difference": {name: float(np.max(np.abs(c - base))) for name, c in coefs.items()}}


def markdown(result: dict) -> str:
    info = result["machine"]
    lines = [f"# The spectral solver's stages ({result['date']})", "",
             f"{info['cpu']}, {info['cores']} cores available; BLAS pool as set: {result['blas_pool']}; load average "
             f"{result['load_start']} at the start, {result['load_end']} at the end"
             + (" (**a shared, loaded machine: noisy figures**)" if result["load_start"][0] > info["cores"] else "")
             + ".", "",
             f"Medians over {result['rounds']} interleaved rounds, seconds per nytro_path fit (gd, "
             f"max_iter={result['max_iter']}, 20% hold-out); eigh: NumPy's of an m x m matrix; dgemm at the "
             "fit's threads.", "",
             "| n | m | d | threads | variant | total | " + " | ".join(STAGES) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(STAGES)]
    for c in result["cells"]:
        for name, med in c["median"].items():
            lines.append(f"| {c['n']} | {c['m']} | {c['d']} | {c['threads']} | {name} | {med['seconds']:.3f} | "
                         + " | ".join(f"{med['stages'][s]:.3f}" for s in STAGES) + " |")
        ref = c["reference_median"]
        lines.append(f"| {c['n']} | {c['m']} | {c['d']} | {c['threads']} | reference | | | | eigh "
                     f"{ref['eigh, pool as set']:.3f} as set, {ref['eigh, pool capped at 1']:.3f} capped | dgemm "
                     f"{ref['dgemm_gflops']:.1f} GFLOP/s | |")
    lines += ["", "Largest coefficient difference from the first variant: "
              + "; ".join(f"n={c['n']} m={c['m']}: {max(c['max_coef_difference'].values()):.1e}"
                          for c in result["cells"]), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int_list, default=[20000], help="rows, hold-out included (comma-separated)")
    parser.add_argument("--m", type=int_list, default=[1000, 2000], help="centres (comma-separated)")
    parser.add_argument("--d", type=int_list, default=[10], help="features (comma-separated)")
    parser.add_argument("--threads", type=int_list, default=[1, 2], help="n_threads of the fits (comma-separated)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--gemm-size", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="one small cell, one round (seconds)")
    parser.add_argument("--out", default=None, help="folder for bench_spectral.json and .md")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.m, args.d, args.threads, args.rounds, args.gemm_size = [3000], [200], [5], [1], 1, 256
    rng = np.random.default_rng(args.seed)
    pools = [f"{i['internal_api']} {i.get('version')}, {i['num_threads']} threads"
             for i in threadpool_info() if i["user_api"] == "blas"]
    result = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
              "machine": machine(), "blas_pool": "; ".join(pools), "rounds": args.rounds, "max_iter": args.max_iter,
              "load_start": [round(v, 2) for v in os.getloadavg()], "cells": []}
    result["load_end"] = result["load_start"]
    for n, m, d, threads in itertools.product(args.n, args.m, args.d, args.threads):
        if m > n * 4 // 5:
            continue
        cell = run_cell(n, m, d, threads, args, rng)
        result["cells"].append(cell)
        result["load_end"] = [round(v, 2) for v in os.getloadavg()]
        print(f"n={n} m={m} d={d} threads={threads}: " + ", ".join(
            f"{name} {med['seconds']:.2f} s (eig {med['stages']['eigendecomposition']:.2f})"
            for name, med in cell["median"].items()), flush=True)
        if args.out:  # after every cell, so that a run cut short keeps what it measured
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "bench_spectral.json"), "w") as f:
                json.dump(result, f, indent=1)
            with open(os.path.join(args.out, "bench_spectral.md"), "w") as f:
                f.write(markdown(result))
    if not args.out:
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
