"""Uniform against leverage-score centres (issue 29.3): test RMSE against m, the m each
needs to reach the same error, and the selection's time against the fit's.

Data: a mixture where uniform centres are wasted. Most rows (1 - tail) sit in one tight
Gaussian cluster, a couple of kernel widths across, where the target is nearly constant:
a handful of centres describe it. The rest are spread thinly over a wide box where the
target varies (sin(x1) cos(0.7 x2)): uniform draws put only the tail's share of the
centres there, leverage scores (nytro.centers) put most of them there. Test rows come
from the same mixture. (A literally "small dense" cluster is the opposite case: its rows
are redundant for the kernel and leverage scores give it fewer centres than uniform
draws do; what leverage sampling rewards is rare rows in regions of their own.)

For each m and each selection, --seeds seeded fits of NytroRegressor (method "hybrid",
default hold-out selection); the centres are drawn from the rows the estimator trains on
(its hold-out rows excluded), selected first (timed alone) and passed with centers=, so
the fit's time excludes the selection. Medians over seeds are reported, and
m_to_reach: the smallest m of the grid at which each selection's median test RMSE is at
or below a target (uniform's RMSE at its largest m, and 1.1 x leverage's best).

    python benchmarks/bench_centers.py --threads 1 --out benchmarks/results/centers

The figures are timings on a shared machine: see machine.txt (load average recorded).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import nytro
from nytro.centers import leverage_centers
from nytro.experiments import protocol as P


def mixture(n, seed, *, tail=0.05, d=2, width=0.3, box=5.0):
    rng = np.random.default_rng(seed)
    n_tail = int(round(tail * n))
    X = np.vstack([width * rng.standard_normal((n - n_tail, d)), rng.uniform(-box, box, (n_tail, d))])
    y = np.sin(X[:, 0]) * np.cos(0.7 * X[:, 1]) + 0.1 * rng.standard_normal(n)
    order = rng.permutation(n)
    return X[order], y[order]


def select(selection, X, m, sigma, seed, threads):
    start = time.perf_counter()
    if selection == "uniform":
        idx = nytro.sample_centers(X.shape[0], m, seed)
    else:
        idx = leverage_centers(X, m, sigma, seed, n_threads=threads)
    return np.asarray(idx), time.perf_counter() - start


def run(args):
    X, y = mixture(args.n, 0, tail=args.tail)
    Xt, yt = mixture(args.n_test, 1, tail=args.tail)
    rows = []
    for m in args.m:
        for selection in ("uniform", "leverage"):
            for seed in range(args.seeds):
                # Drawn from the rows NytroRegressor(random_state=seed) trains on: its hold-out
                # rows, which select t and lambda, are not centres.
                X_train = X[P.holdout_split(X.shape[0], None, seed).train]
                idx, select_s = select(selection, X_train, m, args.sigma, 100 + seed, args.threads)
                est = nytro.NytroRegressor(sigma=args.sigma, centers=X_train[idx], random_state=seed,
                                           n_threads=args.threads)
                start = time.perf_counter()
                est.fit(X, y)
                fit_s = time.perf_counter() - start
                rmse = float(np.sqrt(np.mean((est.predict(Xt) - yt) ** 2)))
                rows.append({"m": m, "selection": selection, "seed": seed, "test_rmse": rmse,
                             "select_seconds": select_s, "fit_seconds": fit_s, "n_iter": int(est.n_iter_),
                             "rank": int(est.rank_)})
                print(f"m={m:4d} {selection:8s} seed={seed} rmse={rmse:.4f} select={select_s:.3f}s "
                      f"fit={fit_s:.3f}s rank={est.rank_}", flush=True)
    return rows


def summarise(rows, m_grid):
    summary = {}
    for selection in ("uniform", "leverage"):
        per_m = {}
        for m in m_grid:
            part = [r for r in rows if r["m"] == m and r["selection"] == selection]
            per_m[m] = {"test_rmse": statistics.median(r["test_rmse"] for r in part),
                        "test_rmse_min": min(r["test_rmse"] for r in part),
                        "test_rmse_max": max(r["test_rmse"] for r in part),
                        "rank": statistics.median(r.get("rank", float("nan")) for r in part),
                        "select_seconds": statistics.median(r["select_seconds"] for r in part),
                        "fit_seconds": statistics.median(r["fit_seconds"] for r in part)}
        summary[selection] = per_m

    def m_to_reach(selection, target):
        for m in m_grid:
            if summary[selection][m]["test_rmse"] <= target:
                return m
        return None

    targets = {"uniform_at_largest_m": summary["uniform"][m_grid[-1]]["test_rmse"],
               "1.1_x_leverage_best": 1.1 * min(v["test_rmse"] for v in summary["leverage"].values())}
    reach = {name: {s: m_to_reach(s, t) for s in ("uniform", "leverage")} for name, t in targets.items()}
    return summary, targets, reach


def markdown(summary, targets, reach, m_grid):
    lines = ["| m | uniform RMSE | leverage RMSE | rank_ uniform / leverage | leverage selection s | "
             "fit s (uniform centres) | fit s (leverage centres) | selection / fit |",
             "|---|---|---|---|---|---|---|---|"]
    for m in m_grid:
        u, lv = summary["uniform"][m], summary["leverage"][m]
        ranks = " / ".join("-" if r != r else f"{r:.0f}" for r in (u["rank"], lv["rank"]))  # - : not recorded
        lines.append(f"| {m} | {u['test_rmse']:.4f} | {lv['test_rmse']:.4f} | {ranks} | "
                     f"{lv['select_seconds']:.3f} | {u['fit_seconds']:.3f} | {lv['fit_seconds']:.3f} | "
                     f"{lv['select_seconds'] / lv['fit_seconds']:.2f} |")
    lines.append("")
    for name, target in targets.items():
        lines.append(f"- target {name} = {target:.4f}: uniform needs m = {reach[name]['uniform']}, "
                     f"leverage m = {reach[name]['leverage']} (None: not within the grid)")
    return "\n".join(lines) + "\n"


def plot(summary, m_grid, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for selection, marker in (("uniform", "o"), ("leverage", "s")):
        line, = ax.plot(m_grid, [summary[selection][m]["test_rmse"] for m in m_grid], marker=marker, label=selection)
        ax.fill_between(m_grid, [summary[selection][m]["test_rmse_min"] for m in m_grid],
                        [summary[selection][m]["test_rmse_max"] for m in m_grid], color=line.get_color(), alpha=0.2,
                        linewidth=0)  # min to max over the seeds
    ax.set_xscale("log")
    ax.set_xticks(m_grid, [str(m) for m in m_grid])
    ax.minorticks_off()
    ax.set_xlabel("centres m")
    ax.set_ylabel("test RMSE (median; band: seeds)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--tail", type=float, default=0.05)
    parser.add_argument("--sigma", type=float, default=0.5)
    parser.add_argument("--m", type=int, nargs="+", default=[25, 50, 100, 200, 400, 800])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--render", type=Path, default=None,
                        help="rewrite the table of an earlier run's centers.json (no fits)")
    args = parser.parse_args()
    if args.render is not None:
        saved = json.loads(args.render.read_text())
        m_grid = saved["args"]["m"]
        summary, targets, reach = summarise(saved["rows"], m_grid)
        table = markdown(summary, targets, reach, m_grid)
        args.render.with_name("centers.md").write_text(table)
        plot(summary, m_grid, args.render.with_name("centers.png"))
        print(table)
        return
    threads = nytro.default_n_threads() if args.threads is None else args.threads
    load_before = os.getloadavg()
    with P.blas_threads(threads):  # the selection's Cholesky runs in NumPy's BLAS: the same thread count
        rows = run(args)
    load_after = os.getloadavg()
    summary, targets, reach = summarise(rows, args.m)
    table = markdown(summary, targets, reach, args.m)
    print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "centers.json").write_text(json.dumps(
            {"args": {k: v for k, v in vars(args).items() if k != "out"}, "rows": rows,
             "summary": {s: {str(m): v for m, v in per.items()} for s, per in summary.items()},
             "targets": targets, "m_to_reach": reach}, indent=1))
        (args.out / "centers.md").write_text(table)
        (args.out / "command.txt").write_text(shlex.join(["python", *sys.argv]) + "\n")
        (args.out / "machine.txt").write_text(
            f"{P.cpu_model()}, cpus {os.cpu_count()}, threads_used {threads}, load average (1, 5, 15 min) before "
            f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, after {load_after[0]:.2f} "
            f"{load_after[1]:.2f} {load_after[2]:.2f}: shared machine, timings noisy\n")
        plot(summary, args.m, args.out / "centers.png")


if __name__ == "__main__":
    main()
