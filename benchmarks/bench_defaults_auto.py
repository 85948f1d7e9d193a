"""The estimators' defaults on raw data (issue 44): NytroRegressor() / NytroClassifier() with
sigma="auto" and fit_intercept=True, against a tuned GridSearchCV pipeline (StandardScaler
and a sigma grid over the same estimator) and scikit-learn's HistGradientBoosting with its
defaults, on scikit-learn's bundled data sets and, with the NYTRO data kit (--data-dir or
$NYTRO_DATA), the paper's data sets, test error and time in one run.

Each bundled set is split 75/25 (stratified for the classifiers) by each seed; a paper set
keeps its official split (cpuSmall: file order), its rows cut to --max-train / --max-test by
a fixed draw, and the seeds vary only the estimators' random_state. The paper's sets are read
with the kit's own load.py, unscaled, as the user would have them. Every fit sees the
training part only, raw (the grid's pipeline standardises inside each fold). The rows:

* defaults: the estimator with its defaults, random_state=seed;
* old defaults: sigma=1.0 and fit_intercept=False, the defaults before sigma="auto";
* grid: GridSearchCV(StandardScaler + the estimator, sigma in GRID, cv=3), refitted on
  the whole training part (its time includes the search);
* hgb: HistGradientBoostingRegressor / Classifier(random_state=seed).

Regression reports the test RMSE; classification the test error rate, the log loss of
predict_proba and the expected calibration error (top-label, 15 equal-width bins). The
error ratio is the row's mean test error (or RMSE) over the seeds divided by the grid's:
each seed's test part has the same rows, so for the classifiers it is the ratio of the
test errors made in all, defined where the grid makes any (a per-seed ratio is not, on
wine's 45 test rows, where the grid makes none on some seeds). The time ratio is the
row's over the grid's, same seed, averaged over the seeds.

    PYTHONPATH=python python benchmarks/bench_defaults_auto.py --out benchmarks/results/defaults_auto
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn import datasets as skd
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import nytro
from nytro.experiments import protocol as P

# name: (loader, task)
DATASETS = {
    "diabetes": (lambda: skd.load_diabetes(return_X_y=True, scaled=False), "regression"),
    "breast_cancer": (lambda: skd.load_breast_cancer(return_X_y=True), "classification"),
    "digits": (lambda: skd.load_digits(return_X_y=True), "classification"),
    "wine": (lambda: skd.load_wine(return_X_y=True), "classification"),
}
# name: task, for the paper's sets read from the data kit (its load.py, unscaled features)
PAPER = {"cpusmall": "regression", "insurance": "classification", "adult": "classification",
         "ijcnn1": "classification", "covtype_binary": "classification"}
GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # sigma on standardised features
QUICK_GRID = (1.0, 4.0)
ROWS = ("defaults", "old defaults", "grid", "hgb")


def calibration_error(proba, y_index, bins: int = 15) -> float:
    """Top-label expected calibration error: the mean over equal-width confidence bins of
    |accuracy - confidence|, each bin weighted by its share of the rows."""
    confidence = proba.max(1)
    correct = proba.argmax(1) == y_index
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        rows = which == b
        if rows.any():
            total += rows.mean() * abs(correct[rows].mean() - confidence[rows].mean())
    return float(total)


def scores(model, X, y, task, classes=None):
    if task == "regression":
        return {"rmse": P.rmse(model.predict(X), y)}
    proba = model.predict_proba(X)
    index = np.searchsorted(classes, y)
    return {"error": float(np.mean(model.predict(X) != y)), "log_loss": float(log_loss(y, proba, labels=classes)),
            "ece": calibration_error(proba, index)}


def models(task, seed, threads, grid, cv):
    est = nytro.NytroRegressor if task == "regression" else nytro.NytroClassifier
    folds = (KFold if task == "regression" else StratifiedKFold)(cv, shuffle=True, random_state=seed)
    search = GridSearchCV(Pipeline([("scale", StandardScaler()), ("model", est(random_state=seed, n_jobs=threads))]),
                          {"model__sigma": list(grid)}, cv=folds, error_score="raise")
    hgb = (HistGradientBoostingRegressor if task == "regression" else HistGradientBoostingClassifier)(
        random_state=seed)
    return {"defaults": est(random_state=seed, n_jobs=threads),
            "old defaults": est(sigma=1.0, random_state=seed, n_jobs=threads,
                                **({"fit_intercept": False} if task == "regression" else {})),
            "grid": search, "hgb": hgb}


def data_kit(data_dir):
    """The data kit's own load.py (it reads the files unscaled), imported from data_dir."""
    import importlib.util
    path = Path(data_dir, "load.py")
    if not path.is_file():
        raise SystemExit(f"--data-dir {data_dir!r} has no load.py: the paper's sets need the NYTRO data kit")
    spec = importlib.util.spec_from_file_location("nytro_data_kit", path)
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    return kit


def paper_split(kit, name, max_train, max_test, test_from_train=None):
    """The official split, each part cut to its cap by a fixed draw (the same for every seed).
    test_from_train: a fraction; the test rows are then that part of the official training
    rows (a fixed draw, stratified for the classifiers) and the official test rows are not
    read, so that a shift between the official parts shows as the difference."""
    X_tr, y_tr, X_te, y_te = getattr(kit, f"load_{name}")()
    if test_from_train is not None:
        from sklearn.model_selection import train_test_split
        X_tr, X_te, y_tr, y_te = train_test_split(
            X_tr, y_tr, test_size=test_from_train, random_state=2,
            stratify=y_tr if PAPER[name] == "classification" else None)

    def cut(X, y, n, salt):
        if n is None or n >= len(X):
            return X, y
        rows = np.sort(np.random.RandomState(salt).permutation(len(X))[:n])
        return X[rows], y[rows]

    return (*cut(X_tr, y_tr, max_train, 0), *cut(X_te, y_te, max_test, 1))


def run_dataset(name, seeds, threads, grid, cv, kit=None, max_train=None, max_test=None, test_from_train=None):
    if name in PAPER:
        task = PAPER[name]
        parts = paper_split(kit, name, max_train, max_test, test_from_train)
        X, y = np.concatenate([parts[0], parts[2]]), np.concatenate([parts[1], parts[3]])
    else:
        loader, task = DATASETS[name]
        X, y = loader()
    X = np.asarray(X, dtype=np.float64)
    fits = {row: [] for row in ROWS}
    for seed in seeds:
        if name in PAPER:
            X_tr, y_tr, X_te, y_te = parts
        else:
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=seed,
                                                      stratify=y if task == "classification" else None)
        classes = np.unique(y_tr)
        for row, model in models(task, seed, threads, grid, cv).items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the n_centers cap on small sets, path-cut warnings
                t0 = time.perf_counter()
                model.fit(X_tr, y_tr)
                seconds = time.perf_counter() - t0
            fit = {"seed": seed, "seconds": seconds, **scores(model, X_te, y_te, task, classes)}
            if row == "defaults":
                fit["sigma_candidates"] = model.sigma_candidates_.tolist()
                fit["sigma_scores"] = model.sigma_scores_.tolist()
                fit["sigma_range"] = [float(np.min(model.sigma_)), float(np.max(model.sigma_))]
            if row == "grid":
                fit["best_sigma"] = model.best_params_["model__sigma"]
            fits[row].append(fit)
    metric = "rmse" if task == "regression" else "error"
    grid_error = _mean(fits["grid"], metric)
    ratios = {row: {"error": _mean(fits[row], metric) / grid_error if grid_error > 0 else float("nan"),
                    "time": float(np.mean([a["seconds"] / b["seconds"] for a, b in zip(fits[row], fits["grid"])]))}
              for row in ROWS}
    return {"dataset": name, "task": task, "n": int(X.shape[0]), "n_train": int(len(X_tr)), "d": int(X.shape[1]),
            "classes": None if task == "regression" else int(len(np.unique(y))), "metric": metric, "fits": fits,
            "vs_grid": ratios}


def warm_up(threads):
    """One small fit of each estimator, untimed: the process's first fit also starts the
    thread pools and may probe the machine's rates (nytro's cost model), which would
    otherwise be charged to whichever row happens to be timed first."""
    X, y = skd.load_diabetes(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nytro.NytroRegressor(n_jobs=threads).fit(X, y)
        nytro.NytroClassifier(n_jobs=threads).fit(X, y > np.median(y))


def _mean(fits, key):
    return float(np.mean([f[key] for f in fits]))


def markdown(result):
    info = result["machine"]
    lines = [f"Machine: {P.machine_line(info)}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}.",
             *(["", f"Test rows: {result['test_from_train']:g} of the official training rows (--test-from-train), "
                "not the official test rows."] if result.get("test_from_train") else []),
             "", f"Seeds: {result['seeds']}; grid: StandardScaler + sigma in {list(result['grid'])}, "
             f"cv={result['cv']}. Means over the seeds; the error ratio is of the means over the seeds "
             "(the errors made in all), the time ratio the mean of each seed's.",
             "",
             "| data set | n (train) x d | row | test RMSE / error | log loss | ECE | fit (s) | error / grid's | "
             "time / grid's |",
             "|---|---|---|---|---|---|---|---|---|"]
    for ds in result["datasets"]:
        for row in ROWS:
            fits = ds["fits"][row]
            clf = ds["task"] == "classification"
            head = (f"| {ds['dataset']} | {ds['n']} ({ds['n_train']}) x {ds['d']} | {row} | "
                    f"{_mean(fits, ds['metric']):.4g} | ")
            lines.append(head + (f"{_mean(fits, 'log_loss'):.4g} | {_mean(fits, 'ece'):.3f} | " if clf else "- | - | "))
            lines[-1] += (f"{_mean(fits, 'seconds'):.2f} | {ds['vs_grid'][row]['error']:.3f} | "
                          f"{ds['vs_grid'][row]['time']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=None,
                        help="comma-separated (default: the four bundled sets, and the paper's with --data-dir)")
    parser.add_argument("--data-dir", default=os.environ.get("NYTRO_DATA"),
                        help="the NYTRO data kit (default: $NYTRO_DATA), for the paper's sets")
    parser.add_argument("--max-train", type=int, default=50000, help="a paper set's training rows (default 50000)")
    parser.add_argument("--max-test", type=int, default=50000, help="a paper set's test rows (default 50000)")
    parser.add_argument("--test-from-train", type=float, default=None, metavar="FRACTION",
                        help="the paper's sets: test on this fraction of the official training rows, not on the "
                             "official test rows (a check for a shift between the two)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..k-1: splits and random_state (default 3)")
    parser.add_argument("--cv", type=int, default=3, help="the grid's folds (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="nytro's threads (and the peers' BLAS)")
    parser.add_argument("--quick", action="store_true", help="diabetes and wine, 1 seed, a 2-value grid, cv=2 (CI)")
    parser.add_argument("--out", default=None, help="folder for defaults_auto.json and defaults_auto.md")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if args.max_train < 2 or args.max_test < 1:
        parser.error("--max-train must be >= 2 and --max-test >= 1")
    if args.test_from_train is not None and not 0 < args.test_from_train < 1:
        parser.error(f"--test-from-train must be in (0, 1), got {args.test_from_train}")
    names = (args.datasets.split(",") if args.datasets else
             list(DATASETS) + (list(PAPER) if args.data_dir else []))
    unknown = [n for n in names if n not in DATASETS and n not in PAPER]
    if unknown:
        parser.error(f"unknown data sets {unknown}; known: {', '.join([*DATASETS, *PAPER])}")
    kit = None
    if any(n in PAPER for n in names) and not args.quick:
        if not args.data_dir:
            parser.error("the paper's sets need the NYTRO data kit: set NYTRO_DATA or --data-dir")
        kit = data_kit(args.data_dir)
    seeds, grid, cv = (list(range(args.seeds)), GRID, args.cv)
    if args.quick:
        names = [n for n in names if n in ("diabetes", "wine")] or ["wine"]
        seeds, grid, cv = [0], QUICK_GRID, 2
    threads = args.threads or nytro.default_n_threads()
    result = {"machine": P.machine_info(threads),
              "command": "python benchmarks/bench_defaults_auto.py " + " ".join(argv if argv is not None else
                                                                                 sys.argv[1:]),
              "seeds": seeds, "grid": list(grid), "cv": cv, "max_train": args.max_train,
              "max_test": args.max_test, "test_from_train": args.test_from_train}
    from threadpoolctl import threadpool_limits
    with threadpool_limits(threads):
        warm_up(threads)
        result["datasets"] = [run_dataset(name, seeds, threads, grid, cv, kit, args.max_train, args.max_test,
                                          args.test_from_train) for name in names]
    result["load_average_at_end"] = list(os.getloadavg())
    if args.out:
        write(result, args.out)
    else:
        print(markdown(result))
    return 0


def write(result, out: str):
    """defaults_auto.json (every number and the machine) and defaults_auto.md, command.txt
    and machine.txt (the layout of benchmarks/results/<claim>/)."""
    P.write_report(out, "defaults_auto", P.json_ready(result), markdown(result) + "\n")
    P.write_command(out, "command.txt", result["command"])
    Path(out, "machine.txt").write_text(P.machine_line(result["machine"]) + "\n")


if __name__ == "__main__":
    sys.exit(main())
