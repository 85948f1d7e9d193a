"""Accelerated early stopping (issue: performance): iterations and time that the nu-method
and conjugate gradients need to reach the best hold-out RMSE of the paper's GD path
(500 iterations, step 1/lambda_max(A^T A)), on the same split and centres.

For each dataset: GD runs its 500 iterations (best of path) and sets the target RMSE; nu
and CG then run with the same split and centres, the first iteration t whose hold-out RMSE
is at or below the target is reported, and the fit is timed again stopped at that t
(max_iter = t), with the solver that auto picks for that length and with "direct".
Medians of --reps timings. Run it alone on a quiet machine.

    python benchmarks/bench_acceleration.py --datasets insurance,adult,ijcnn1 \
        --out benchmarks/results/acceleration
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import nytro
from nytro.experiments import protocol as P


def timed_fit(estimator, X, y, reps):
    times = []
    for _ in range(reps):
        with P.path_cut_expected():
            start = time.perf_counter()
            estimator.fit(X, y)
            times.append(time.perf_counter() - start)
    return statistics.median(times), estimator


def run_dataset(name, data_dir, reps, threads, quick):
    config = P.dataset_config(name)
    data = P.load(config, data_dir, n_train=2000 if quick else None)
    X, y = data.X_train, data.y_train
    m = 200 if quick else config.m
    common = dict(n_centers=m, sigma=config.sigma, random_state=0, n_threads=threads, n_iter_no_change=None,
                  **config.nytro_options())
    gd_seconds, gd = timed_fit(nytro.NytroRegressor(method="gd", max_iter=500, **common), X, y, reps)
    target = float(gd.validation_rmse_.min())
    rows = [{"method": "gd", "requested": "auto", "solver": gd.solver_, "t": gd.n_iter_, "seconds": gd_seconds,
             "val_rmse": target, "iterations_run": len(gd.validation_rmse_)}]
    for method in ("nu", "cg"):
        with P.path_cut_expected():
            probe = nytro.NytroRegressor(method=method, max_iter=500, **common).fit(X, y)
        reached = np.flatnonzero(probe.validation_rmse_ <= target)
        if reached.size == 0:
            best = float(probe.validation_rmse_.min())
            rows.append({"method": method, "t": None, "note": "did not reach GD's best in 500 iterations",
                         "best_val_rmse": best, "gap_percent": 100 * (best / target - 1)})
            continue
        t = int(reached[0]) + 1
        for solver in ("auto", "direct"):
            seconds, est = timed_fit(nytro.NytroRegressor(method=method, max_iter=t, solver=solver,
                                                          **{k: v for k, v in common.items() if k != "solver"}),
                                     X, y, reps)
            rows.append({"method": method, "requested": solver, "solver": est.solver_, "t": t, "seconds": seconds,
                         "val_rmse": float(est.validation_rmse_[-1])})
    return {"dataset": name, "m": m, "sigma": config.sigma, "target_val_rmse": target, "rows": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="insurance,adult,ijcnn1")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default="benchmarks/results/acceleration")
    parser.add_argument("--quick", action="store_true", help="2000 rows, m = 200, 1 repetition (CI)")
    args = parser.parse_args(argv)
    reps = 1 if args.quick else args.reps
    threads = P.resolve_threads(args.threads)
    report = {"command": "python benchmarks/bench_acceleration.py " + " ".join(argv or []),
              "machine": P.machine_info(P.resolve_threads(args.threads)),
              "datasets": [run_dataset(d, args.data_dir, reps, threads, args.quick)
                           for d in args.datasets.split(",")]}
    lines = [P.machine_line(report["machine"]), "",
             "| dataset (m) | method | solver | t to reach GD's best val RMSE | time (s) | val RMSE |",
             "|---|---|---|---|---|---|"]
    for d in report["datasets"]:
        for r in d["rows"]:
            if r.get("t") is None:
                lines.append(f"| {d['dataset']} ({d['m']}) | {r['method']} | - | not reached "
                             f"(best {r['gap_percent']:+.2f}% of target) | - | {r['best_val_rmse']:.5f} |")
            else:
                label = "GD best of 500 (target)" if r["method"] == "gd" else str(r["t"])
                solver = r["solver"] if r["requested"] == r["solver"] else f"{r['requested']} ({r['solver']})"
                lines.append(f"| {d['dataset']} ({d['m']}) | {r['method']} | {solver} | {label} | "
                             f"{r['seconds']:.3f} | {r['val_rmse']:.5f} |")
    P.write_report(args.out, "acceleration", report, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
