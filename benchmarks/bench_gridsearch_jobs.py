"""GridSearchCV(n_jobs=k) over a nytro estimator (issue 44): the search's wall time with
k worker processes against k = 1, on the bundled cpuSmall set.

Each search fits every candidate of a small grid (sigma x n_centers) on every fold, all
with the estimators' n_jobs=None: nytro's threads follow the context, so in the search's
loky workers joblib's limit of cpu_count // k threads per worker, and in the k = 1
search (which runs in this process) every CPU. The rule this checks: the two levels of
parallelism neither oversubscribe the CPUs (k workers x all threads) nor serialise.
A third search runs in one process with the estimators' n_jobs=1, the share each of k
workers gets on k cores, to tell the cost of the core's threads from that of the workers.
The searches run interleaved after one untimed warm-up search each (it starts the
workers, which import nytro and read or probe the machine's rates once), and the table
gives the medians; the ratio is k's median over 1's.

    PYTHONPATH=python python benchmarks/bench_gridsearch_jobs.py --out benchmarks/results/gridsearch_jobs
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import GridSearchCV, KFold

import nytro
from nytro.datasets import load_cpusmall
from nytro.experiments import protocol as P

GRID = {"sigma": [0.5, 1.0], "n_centers": [200, 400]}


def search(X, y, n_jobs, cv, estimator):
    grid = GridSearchCV(estimator, GRID, cv=KFold(cv, shuffle=True, random_state=0), n_jobs=n_jobs,
                        error_score="raise")
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid.fit(X, y)
    return time.perf_counter() - t0, grid


def run(n_rows, cv, repeats, jobs, classifier):
    data = load_cpusmall()
    rows = np.sort(np.random.default_rng(0).choice(data.X_train.shape[0], size=min(n_rows, data.X_train.shape[0]),
                                                   replace=False))
    X, y = data.X_train[rows], data.y_train[rows]
    cls = nytro.NytroClassifier if classifier else nytro.NytroRegressor
    if classifier:  # above or below the median of the target
        y = y > np.median(y)
    # (the search's n_jobs, the estimator's n_jobs): the two compared, and one process
    # whose fits run on one thread, the share each of k workers gets on k cores.
    configs = {"1": (1, None), str(jobs): (jobs, None), "1, one thread": (1, 1)}
    times = {name: [] for name in configs}
    best = {}
    for search_jobs, fit_jobs in configs.values():  # warm-up: the workers start, import nytro, read the rates
        search(X, y, search_jobs, cv, cls(random_state=0, n_jobs=fit_jobs))
    for _ in range(repeats):
        for name, (search_jobs, fit_jobs) in configs.items():
            seconds, grid = search(X, y, search_jobs, cv, cls(random_state=0, n_jobs=fit_jobs))
            times[name].append(seconds)
            best[name] = {"params": grid.best_params_, "score": float(grid.best_score_)}
    medians = {name: statistics.median(v) for name, v in times.items()}
    return {"n_rows": int(X.shape[0]), "cv": cv, "grid": GRID,
            "candidates": int(np.prod([len(v) for v in GRID.values()])), "estimator": cls.__name__,
            "repeats": repeats, "jobs": jobs, "seconds": times, "median_seconds": medians,
            "ratio": medians[str(jobs)] / medians["1"],
            "best": best, "same_best": all(b == best["1"] for b in best.values())}


def markdown(result):
    info = result["machine"]
    lines = [f"Machine: {P.machine_line(info)}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}. Shared machine: times are noisy.",
             "",
             "| estimator | rows | folds x candidates | n_jobs=1 (s) | n_jobs=k (s) | k | ratio k / 1 | "
             "n_jobs=1, fits on one thread (s) | same best |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run_ in result["runs"]:
        med = run_["median_seconds"]
        k = run_["jobs"]
        lines.append(f"| {run_['estimator']} | {run_['n_rows']} | {run_['cv']} x {run_['candidates']} | "
                     f"{med['1']:.2f} | {med[str(k)]:.2f} | {k} | {run_['ratio']:.2f} | {med['1, one thread']:.2f} | "
                     f"{run_['same_best']} |")
    lines += ["", f"Medians of {result['runs'][0]['repeats']} interleaved repeats after one warm-up search each; "
              "the estimators' n_jobs=None (threads from the context) except in the last column (n_jobs=1)."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows of cpuSmall searched (default 1000)")
    parser.add_argument("--cv", type=int, default=3, help="folds (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="the search's n_jobs compared with 1 (default 2)")
    parser.add_argument("--classifier", action="store_true", help="also search a NytroClassifier (y above its median)")
    parser.add_argument("--quick", action="store_true", help="500 rows, 1 repeat (CI)")
    parser.add_argument("--out", default=None, help="folder for gridsearch_jobs.json and gridsearch_jobs.md")
    args = parser.parse_args(argv)
    rows, repeats = (500, 1) if args.quick else (args.rows, args.repeats)
    result = {"machine": P.machine_info(nytro.default_n_threads()),
              "command": "python benchmarks/bench_gridsearch_jobs.py " + " ".join(argv if argv is not None else
                                                                                    sys.argv[1:]),
              "runs": [run(rows, args.cv, repeats, args.jobs, classifier)
                       for classifier in ((False, True) if args.classifier else (False,))]}
    result["load_average_at_end"] = list(os.getloadavg())
    if args.out:
        write(result, args.out)
    else:
        print(markdown(result))
    return result


def write(result, out: str):
    """gridsearch_jobs.json (every number and the machine) and gridsearch_jobs.md (printed
    too), command.txt and machine.txt (the layout of benchmarks/results/<claim>/)."""
    P.write_claim(out, "gridsearch_jobs", result, markdown(result) + "\n")


if __name__ == "__main__":
    main()
