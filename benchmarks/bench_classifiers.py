"""Classifiers on the paper's binary datasets: test classification error beside test RMSE
(of the decision values against the +-1 labels) for NytroClassifier and
NystromKRLSClassifier, and for scikit-learn's Nystroem + RidgeClassifier and Nystroem +
LinearSVC on the same hold-out split and the same centres, in one run.

The paper's protocol (docs/protocol.md): a seeded 20% hold-out part of the training set,
m centres drawn uniformly from the rest, the paper's sigma. Every method selects its
regularisation on that hold-out part by classification error (the peers: alpha = lambda n
for lambda in {1e-10, 1e-8, ..., 1} for RidgeClassifier, each value a fit that forms
F^T F; C in {0.01, 0.1, 1, 10} for LinearSVC); nytro also with selection="rmse". BLAS
and OpenMP are capped at --threads for every method (threadpoolctl). Where the shared machine makes the
paper's sizes impractical, m, the training rows and the test rows are cut (--m, --n-train,
--n-test; the defaults are stated in the output).

    PYTHONPATH=python python benchmarks/bench_classifiers.py --out benchmarks/results/classifiers
"""
from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import nytro
from nytro import NystromKRLSClassifier, NytroClassifier
from nytro.datasets import load_dataset
from nytro.experiments import protocol as P

# (m, training rows, test rows) per dataset; None: the paper's. Chosen for a shared
# 2-core machine: Ijcnn at m = 1000 instead of 5000 on 30000 of its 91701 test rows,
# Covertype at m = 1000 (paper: 10000) on 60000 of its 522910 training rows and 20000 of
# its test rows (the paper's sizes take 16.7 GB and hours here).
DEFAULT_SIZES = {"adult": (1000, None, None), "ijcnn1": (1000, None, 30000), "covtype": (1000, 60000, 20000)}
SVC_C = (0.01, 0.1, 1.0, 10.0)
RIDGE_LAMBDAS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-2, 1.0)


def subsample(X, y, n, seed):
    if n is None or n >= len(X):
        return X, y
    rows = np.sort(np.random.RandomState(seed).permutation(len(X))[:n])
    return X[rows], y[rows]


def error_and_rmse(scores, y):
    """Error of sign(scores) against +-1 labels y, and RMSE of the scores."""
    return float(np.mean(np.where(scores > 0, 1.0, -1.0) != y)), float(np.sqrt(np.mean((scores - y) ** 2)))


def timed(fit):
    t0 = time.perf_counter()
    out = fit()
    return time.perf_counter() - t0, out


def run_dataset(name, m, n_train, n_test, seed, threads, data_dir):
    config = P.CONFIGS[name]
    data = load_dataset(name, data_dir)
    X, y = subsample(data.X_train, data.y_train, n_train, seed)
    X_te, y_te = subsample(data.X_test, data.y_test, n_test, seed + 1)
    split = P.holdout_split(len(X), m, seed)
    centers = split.center_rows(X)
    sigma = config.sigma
    rows = []

    def record(method, seconds, scores, param):
        err, rmse = error_and_rmse(scores, y_te)
        rows.append({"dataset": config.label, "method": method, "test_error": err, "test_rmse": rmse,
                     "fit_seconds": seconds, "selected": param})
        print(f"  {method:34s} error {err:.4f}  rmse {rmse:.4f}  {seconds:7.2f} s  ({param})", flush=True)

    common = dict(n_centers=m, sigma=sigma, random_state=seed, n_threads=threads, **config.nytro_options())
    for method, selection in (("hybrid", "error"), ("hybrid", "rmse"), ("gd", "error")):
        extra = {"max_iter": P.MAX_ITER, "n_iter_no_change": None} if method == "gd" else {}
        est = NytroClassifier(method=method, selection=selection, **extra, **common)
        seconds, est = timed(lambda: est.fit(X, y))
        assert np.array_equal(est.centers_, centers)  # the peers below see these centres
        param = f"t={est.n_iter_}" + (f", lambda={est.lambda_:.3g}" if est.lambda_ is not None else "")
        record(f"NytroClassifier {method} ({selection})", seconds, est.decision_function(X_te), param)
    nk = {k: v for k, v in common.items() if k != "solver"}
    nk["storage"] = config.nystrom_options().get("storage")
    est = NystromKRLSClassifier(**nk)
    seconds, est = timed(lambda: est.fit(X, y))
    record("NystromKRLSClassifier (error)", seconds, est.decision_function(X_te), f"lambda={est.lambda_:.3g}")

    from sklearn.linear_model import RidgeClassifier
    from sklearn.svm import LinearSVC
    from nytro.experiments.table2 import _nystroem_features
    X_tr, y_tr, X_val, y_val = split.parts(X, y)

    def select(make, grid):
        """Features of our centres, then the grid's value with the fewest hold-out errors
        (the first of a tie); the time covers the feature map and every fit."""
        t0 = time.perf_counter()
        features = _nystroem_features(centers, sigma, seed)
        F_tr, F_val = features.transform(X_tr), features.transform(X_val)
        best = None
        for value in grid:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # LinearSVC's ConvergenceWarning on the tiny C
                model = make(value).fit(F_tr, y_tr)
            errors = np.count_nonzero(model.predict(F_val) != y_val)
            if best is None or errors < best[0]:
                best = (errors, value, model)
        return time.perf_counter() - t0, best[2].decision_function(features.transform(X_te)), best[1]

    seconds, scores, lam = select(lambda lam: RidgeClassifier(alpha=lam * len(X_tr), solver="cholesky"),
                                  RIDGE_LAMBDAS)
    record("Nystroem + RidgeClassifier", seconds, scores, f"lambda={lam:.3g}")
    seconds, scores, c = select(lambda c: LinearSVC(C=c, random_state=seed), SVC_C)
    record("Nystroem + LinearSVC", seconds, scores, f"C={c:g}")
    return {"dataset": config.label, "n_train": int(len(split.train)), "n_val": int(len(split.val)),
            "n_test": int(len(X_te)), "d": int(X.shape[1]), "m": int(m), "sigma": sigma, "rows": rows}


def markdown(result):
    info = result["machine"]
    lines = [f"Machine: {P.machine_line(info)}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}. Shared machine: times are noisy.",
             ""]
    for ds in result["datasets"]:
        lines += [f"**{ds['dataset']}**: n_train = {ds['n_train']} (+ {ds['n_val']} hold-out), n_test = "
                  f"{ds['n_test']}, d = {ds['d']}, m = {ds['m']}, sigma = {ds['sigma']}", "",
                  "| method | test error | test RMSE | fit (s) | selected |", "|---|---|---|---|---|"]
        lines += [f"| {r['method']} | {r['test_error']:.4f} | {r['test_rmse']:.4f} | {r['fit_seconds']:.2f} | "
                  f"{r['selected']} |" for r in ds["rows"]]
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="adult,ijcnn1,covtype")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--data-dir", default=os.environ.get("NYTRO_DATA", "/work/shared/data"))
    parser.add_argument("--m", type=int, default=None, help="centres for every dataset (default: per dataset)")
    parser.add_argument("--n-train", type=int, default=None, help="training rows cap (default: per dataset)")
    parser.add_argument("--n-test", type=int, default=None, help="test rows cap (default: per dataset)")
    parser.add_argument("--out", default=None, help="folder for classifiers.json and classifiers.md")
    args = parser.parse_args(argv)
    threads = args.threads or nytro.default_n_threads()
    result = {"machine": P.machine_info(threads), "command": "python benchmarks/bench_classifiers.py " +
              " ".join(argv if argv is not None else __import__("sys").argv[1:]), "datasets": []}
    from threadpoolctl import threadpool_limits
    for name in args.datasets.split(","):
        m, n_train, n_test = DEFAULT_SIZES[name]
        m, n_train, n_test = args.m or m, args.n_train or n_train, args.n_test or n_test
        print(f"{name}: m = {m}, training rows <= {n_train}, test rows <= {n_test}", flush=True)
        with threadpool_limits(threads), P.path_cut_expected():
            result["datasets"].append(run_dataset(name, m, n_train, n_test, args.seed, threads, args.data_dir))
    result["load_average_at_end"] = list(os.getloadavg())
    print(markdown(result))
    if args.out:
        write(result, Path(args.out))
    return 0


def write(result, out: Path):
    """classifiers.json (every number and the machine), classifiers.md, command.txt and
    machine.txt (the layout of benchmarks/results/<claim>/)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "classifiers.json").write_text(json.dumps(result, indent=1))
    (out / "classifiers.md").write_text(markdown(result) + "\n")
    (out / "command.txt").write_text(result["command"] + "\n")
    (out / "machine.txt").write_text(P.machine_line(result["machine"]) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
