"""Does solver="auto" pick a solver within 10% of the fastest? For each cell of a grid of
(n, m, d, method), every solver (direct, gram, spectral) and "auto" fit the same synthetic
problem with NytroRegressor, interleaved: each round runs the four in a seeded random
order, so that a drift of the machine's speed over minutes falls on all of them alike.
Reported per cell: the median seconds of each over the rounds, the fastest solver, the
solver auto chose, and whether auto's median is within 10% of the fastest's (and whether
the solver it chose is: auto's own time also carries its choice).

Each fit runs with the BLAS pool (SciPy's OpenBLAS, which runs the spectral solver's
eigendecomposition) capped at the fit's thread count by threadpoolctl, so that every solver
runs on as many threads: the core leaves the pool as the caller set it, and an uncapped
pool of two on a loaded machine made the eigendecomposition 10-30x slower than on one
thread (benchmarks/results/spectral/history.md, "The spectral solver's stages").

Each fit starts 0.2 s after the one before: the spectral solver's eigendecomposition
runs in SciPy's OpenBLAS, whose threads keep spinning for about 0.1 s after it returns,
and a fit started in that time shares the cores with them (a 48 ms gram fit took 62-105
ms right after a spectral one). The pause measures each solver on its own.

The machine rates auto chose from (nytro.machine_rates: probed once, or cached, or
pinned by NYTRO_RATES) are recorded with the results, with the load average at the start
and the end: on a shared machine the figures are noisy.

    python benchmarks/bench_auto.py --out benchmarks/results/auto               # a few minutes, 2 cores
    python benchmarks/bench_auto.py --quick                                     # under a minute
    python benchmarks/bench_auto.py --threads 16 --n 50000,200000 --m 1000,4000 --out /tmp/auto16
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np
from threadpoolctl import threadpool_limits

import nytro
from bench_kernels import machine  # a sibling script: benchmarks/ is on sys.path

SOLVERS = ("direct", "gram", "spectral")
WITHIN = 1.10  # auto must be within 10% of the fastest
PAUSE_S = 0.2  # between fits: OpenBLAS's threads spin for about 0.1 s after a call


def int_list(text: str):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def problem(n: int, d: int, seed: int = 0):
    """Standard normal features, a smooth target plus noise; sigma = sqrt(d) keeps the
    kernel neither flat nor diagonal at any d."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, : min(d, 3)].sum(axis=1)) + 0.1 * rng.standard_normal(n)
    return X, y, math.sqrt(d)


def fit_seconds(X, y, sigma, m, method, solver, threads, max_iter):
    est = nytro.NytroRegressor(n_centers=m, sigma=sigma, method=method, max_iter=max_iter, solver=solver,
                               n_threads=threads, random_state=0)
    time.sleep(PAUSE_S)
    with threadpool_limits(threads, user_api="blas"):
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
    return seconds, est.solver_, int(est.n_iter_)


def run_cell(n, m, d, method, args, rng):
    X, y, sigma = problem(n, d)
    names = list(SOLVERS) + ["auto"]
    times = {name: [] for name in names}
    chosen, n_iter = [], {}
    for _ in range(args.rounds):
        for index in rng.permutation(len(names)):
            name = names[index]
            seconds, solver, t = fit_seconds(X, y, sigma, m, method, name, args.threads, args.max_iter)
            times[name].append(seconds)
            n_iter[name] = t
            if name == "auto":
                chosen.append(solver)
    medians = {name: statistics.median(v) for name, v in times.items()}
    fastest = min(SOLVERS, key=lambda s: medians[s])
    choice = max(set(chosen), key=chosen.count)
    return {
        "n": n, "m": m, "d": d, "method": method, "seconds": times, "median_s": medians, "n_iter": n_iter,
        "fastest": fastest, "auto_chose": chosen, "auto_choice": choice,
        "auto_over_fastest": medians["auto"] / medians[fastest],
        "choice_over_fastest": medians[choice] / medians[fastest],
        "auto_within_10pct": medians["auto"] <= WITHIN * medians[fastest],
        "choice_within_10pct": medians[choice] <= WITHIN * medians[fastest],
    }


def machine_with_threads(threads: int) -> dict:
    return {**machine(), "threads": threads, "isa": nytro._config.isa_info()["selected"],
            "python": sys.version.split()[0]}


def markdown(result: dict) -> str:
    info, rates = result["machine"], result["rates"]
    lines = [
        f"# solver='auto' against the fastest solver ({result['date']})",
        "",
        f"{info['cpu']}, {info['cores']} cores available, {info['threads']} threads per fit (BLAS pool capped "
        "alike), core variant "
        f"{info['isa']}; load average {result['load_start']} at the start, {result['load_end']} at the end"
        + (" (**a shared, loaded machine: noisy figures**)" if result["load_start"][0] > info["cores"] else "")
        + ".",
        "",
        f"Rates auto chose from ({rates['source']}): products {rates['flops'] / 1e9:.3g} GFLOP/s float64, "
        f"{rates['flops32'] / 1e9:.3g} float32; read {rates['bytes'] / 1e9:.3g} GB/s, "
        f"first write {rates['fresh_bytes'] / 1e9:.3g} GB/s.",
        "",
        f"Medians over {result['rounds']} interleaved rounds, seconds per NytroRegressor fit "
        f"(max_iter={result['max_iter']}, 20% hold-out).",
        "",
        "| n | m | d | method | direct | gram | spectral | auto (chose) | fastest | auto / fastest | within 10% |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        med = c["median_s"]
        verdict = "yes" if c["auto_within_10pct"] else ("choice yes" if c["choice_within_10pct"] else "**no**")
        lines.append(
            f"| {c['n']} | {c['m']} | {c['d']} | {c['method']} | {med['direct']:.3f} | {med['gram']:.3f} | "
            f"{med['spectral']:.3f} | {med['auto']:.3f} ({c['auto_choice']}) | {c['fastest']} | "
            f"{c['auto_over_fastest']:.2f} | {verdict} |")
    ok = sum(c["auto_within_10pct"] for c in result["cells"])
    ok_choice = sum(c["choice_within_10pct"] for c in result["cells"])
    lines += ["", f"auto within 10% of the fastest in {ok} of {len(result['cells'])} cells; the solver it chose "
              f"within 10% in {ok_choice}. 'choice yes': auto's own median is over 10% but the solver it chose "
              "is within 10% (the gap is noise or auto's overhead).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int_list, default=[10000, 30000], help="training rows (comma-separated)")
    parser.add_argument("--m", type=int_list, default=[300, 1000], help="centres (comma-separated)")
    parser.add_argument("--d", type=int_list, default=[10], help="features (comma-separated)")
    parser.add_argument("--methods", default="gd,hybrid", help="comma-separated: gd, nu, cg, hybrid")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--threads", type=int, default=None, help="n_threads of every fit (default: all cores)")
    parser.add_argument("--quick", action="store_true", help="two small cells, two rounds (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the order of each round")
    parser.add_argument("--out", default=None, help="folder for auto.json and auto.md")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    for method in methods:
        if method not in ("gd", "nu", "cg", "hybrid"):
            parser.error(f"--methods: unknown method {method!r}")
    if args.quick:
        args.n, args.m, args.d, methods, args.rounds = [8000], [300], [10], ["gd", "hybrid"], 2
    threads = args.threads or nytro.default_n_threads()
    args.threads = threads
    load_start = [round(v, 2) for v in os.getloadavg()]
    rates = nytro.machine_rates(threads)  # probed (or read) before the first timed fit
    rng = np.random.default_rng(args.seed)
    cells = []
    result = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
        "machine": machine_with_threads(threads), "rates": rates, "rounds": args.rounds, "max_iter": args.max_iter,
        "load_start": load_start, "load_end": load_start, "cells": cells,
    }
    text = markdown(result)
    for n, m, d, method in itertools.product(args.n, args.m, args.d, methods):
        if m > n:
            continue
        cell = run_cell(n, m, d, method, args, rng)
        cells.append(cell)
        print(f"n={n} m={m} d={d} {method}: " + ", ".join(f"{k} {v:.3f}s" for k, v in cell["median_s"].items())
              + f"; auto chose {cell['auto_choice']}, {cell['auto_over_fastest']:.2f}x the fastest "
              f"({cell['fastest']})", flush=True)
        # Written after every cell, so that a run cut short keeps what it measured.
        result["load_end"] = [round(v, 2) for v in os.getloadavg()]
        text = markdown(result)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "auto.json"), "w") as f:
                json.dump(result, f, indent=1)
            with open(os.path.join(args.out, "auto.md"), "w") as f:
                f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
