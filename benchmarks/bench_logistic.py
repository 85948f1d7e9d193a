"""The logistic loss the NYTRO way: test log loss, error and fit time, in one run, of
NytroLogisticClassifier (methods "nesterov" and "newton"), scikit-learn's
LogisticRegression on Nystroem features of the same m and kernel with C chosen by
cross-validation on the log loss (LogisticRegressionCV), a LogisticFalkon-style peer
(_logistic_falkon.py: Tikhonov penalties decreasing along a path, Newton steps by
Nystrom-preconditioned CG, on NYTRO's centres, the penalty chosen on hold-out rows), and
NytroClassifier's least-squares fit with its calibrated predict_proba.

Bundled sets (scikit-learn's breast_cancer, binary, and digits, ten classes), features
standardised, a stratified 70/30 split, sigma = sqrt(d); with NYTRO_DATA set (or
--data-dir), also the paper's Adult, Ijcnn1 and CovertypeBinary as nytro.datasets
preprocesses them, with the paper's sigma, the training and test rows subsampled
(--n-train, --n-test; default 8000 each) to keep each dataset's run within a couple of
minutes on a shared 2-core machine. Every method gets the same m; BLAS and OpenMP are
capped at --threads (threadpoolctl). --quick: breast_cancer alone (a smoke run).

    PYTHONPATH=python python benchmarks/bench_logistic.py --out benchmarks/results/logistic
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import log_loss

import nytro
from nytro import NytroClassifier, NytroLogisticClassifier
from nytro.experiments import protocol as P

from _logistic_falkon import LogisticFalkonPeer

BUNDLED = {"breast_cancer": 200, "digits": 300}  # m per bundled set
# m per paper set: one m for all, below each set's own (Table 2's 1000 to 10000), so that
# LogisticRegressionCV's grid of fits stays within minutes
PAPER = {"adult": 500, "ijcnn1": 500, "covtype": 500}
LOGREG_CS = np.logspace(-2, 4, 7)
FALKON = "LogisticFalkon-style (NumPy)"


def bundled(name, seed):
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X, y = {"breast_cancer": load_breast_cancer, "digits": load_digits}[name](return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    return X_tr, y_tr, X_te, y_te, float(np.sqrt(X.shape[1])), name


def paper(name, data_dir, n_train, n_test, seed):
    from nytro.datasets import load_dataset
    data = load_dataset(name, data_dir, download=False)

    def cut(X, y, n, s):
        if n is None or n >= len(X):
            return X, y
        rows = np.sort(np.random.RandomState(s).permutation(len(X))[:n])
        return X[rows], y[rows]

    X_tr, y_tr = cut(data.X_train, data.y_train, n_train, seed)
    X_te, y_te = cut(data.X_test, data.y_test, n_test, seed + 1)
    return X_tr, y_tr, X_te, y_te, float(P.CONFIGS[name].sigma), P.CONFIGS[name].label


def run_dataset(data, m, seed, threads):
    X_tr, y_tr, X_te, y_te, sigma, label = data
    rows = []

    def record(method, seconds, proba, classes, selected):
        loss = float(log_loss(y_te, proba, labels=classes))
        error = float(np.mean(classes[np.argmax(proba, axis=1)] != y_te))
        rows.append({"method": method, "test_log_loss": loss, "test_error": error, "fit_seconds": seconds,
                     "selected": selected})
        print(f"  {method:40s} log loss {loss:.4f}  error {error:.4f}  {seconds:7.2f} s  ({selected})", flush=True)

    centers = None
    for method, extra in (("nesterov", {}), ("newton", dict(max_iter=60, n_iter_no_change=5))):
        est = NytroLogisticClassifier(n_centers=m, sigma=sigma, method=method, random_state=seed, n_threads=threads,
                                      **extra)
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        seconds = time.perf_counter() - t0
        centers = est.centers_ if centers is None else centers
        record(f"NytroLogisticClassifier {method}", seconds, est.predict_proba(X_te), est.classes_,
               f"t={est.n_iter_} of {len(est.train_loss_)} run")

    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    # Shuffled folds: the paper's sets keep their file's row order, far from random in
    # Covertype's, so unshuffled folds differ in distribution, a shift between folds that
    # the strongest penalty wins; NYTRO's and the Falkon-style hold-out rows are drawn at
    # random.
    folds = StratifiedKFold(3, shuffle=True, random_state=seed)
    peer = make_pipeline(Nystroem(gamma=0.5 / sigma ** 2, n_components=m, random_state=seed),
                         LogisticRegressionCV(Cs=LOGREG_CS, l1_ratios=(0.0,), cv=folds, scoring="neg_log_loss",
                                              max_iter=5000, use_legacy_attributes=False))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs's ConvergenceWarning at the largest C
        peer.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    C = np.ravel(peer[-1].C_)[0]
    record("Nystroem + LogisticRegressionCV", seconds, peer.predict_proba(X_te), peer.classes_, f"C={C:g}")

    # NYTRO's centres (the nesterov fit's), so that the two differ in the path alone
    peer = LogisticFalkonPeer(centers, sigma, random_state=seed)
    t0 = time.perf_counter()
    peer.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    ovr = ", one-vs-rest" if len(peer.classes_) > 2 else ""
    record(FALKON, seconds, peer.predict_proba(X_te), peer.classes_,
           f"lambda={peer.lambda_:.0e}, {peer.cg_iterations_} CG its{ovr}")

    est = NytroClassifier(n_centers=m, sigma=sigma, random_state=seed, n_threads=threads)
    t0 = time.perf_counter()
    est.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    record("NytroClassifier (squared) predict_proba", seconds, est.predict_proba(X_te), est.classes_,
           f"t={est.n_iter_}, scale={est.calibration_scale_:.3g}")
    return {"dataset": label, "n_train": int(len(X_tr)), "n_test": int(len(X_te)), "d": int(X_tr.shape[1]),
            "classes": int(len(np.unique(y_tr))), "m": int(m), "sigma": sigma, "rows": rows}


def markdown(result):
    info = result["machine"]
    lines = [f"Machine: {P.machine_line(info)}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}. Shared with other work while it "
             "ran: times are noisy.", ""]
    lines += summary(result["datasets"]) + [""]
    for ds in result["datasets"]:
        lines += [f"**{ds['dataset']}**: n_train = {ds['n_train']}, n_test = {ds['n_test']}, d = {ds['d']}, "
                  f"{ds['classes']} classes, m = {ds['m']}, sigma = {ds['sigma']:.4g}", "",
                  "| method | test log loss | test error | fit (s) | selected |", "|---|---|---|---|---|"]
        lines += [f"| {r['method']} | {r['test_log_loss']:.4f} | {r['test_error']:.4f} | {r['fit_seconds']:.2f} | "
                  f"{r['selected']} |" for r in ds["rows"]]
        lines.append("")
    return "\n".join(lines)


def summary(datasets):
    """One table of every dataset (rows) and method (columns): test log loss / error, and
    a last row of the fit seconds."""
    methods = list(dict.fromkeys(r["method"] for ds in datasets for r in ds["rows"]))

    def cells(ds, text):
        by_method = {r["method"]: r for r in ds["rows"]}
        return [text(by_method[k]) if k in by_method else "n/a" for k in methods]

    lines = ["| dataset | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for ds in datasets:
        lines.append(f"| {ds['dataset']} ({ds['n_train']} rows): log loss / error | " + " | ".join(
            cells(ds, lambda r: f"{r['test_log_loss']:.4f} / {r['test_error']:.4f}")) + " |")
    seconds = [cells(ds, lambda r: f"{r['fit_seconds']:.2g}") for ds in datasets]
    lines.append(f"| fit seconds ({', '.join(ds['dataset'] for ds in datasets)}) | " + " | ".join(
        ", ".join(column) for column in zip(*seconds)) + " |")
    return lines


def write(result, out: Path):
    """logistic.json (every number and the machine), logistic.md, command.txt and
    machine.txt (the layout of benchmarks/results/<claim>/)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "logistic.json").write_text(json.dumps(result, indent=1))
    (out / "logistic.md").write_text(markdown(result) + "\n")
    (out / "command.txt").write_text(result["command"] + "\n")
    (out / "machine.txt").write_text(P.machine_line(result["machine"]) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=None,
                        help="comma-separated; default: the bundled sets, and adult,ijcnn1,covtype where the data "
                             "are found")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--data-dir", default=os.environ.get("NYTRO_DATA"))
    parser.add_argument("--n-train", type=int, default=8000, help="training rows cap of the paper's sets")
    parser.add_argument("--n-test", type=int, default=8000, help="test rows cap of the paper's sets")
    parser.add_argument("--out", default=None, help="folder for logistic.json and logistic.md")
    parser.add_argument("--quick", action="store_true", help="breast_cancer alone, whatever --datasets (a smoke run)")
    args = parser.parse_args(argv)
    names = args.datasets.split(",") if args.datasets else list(BUNDLED) + (list(PAPER) if args.data_dir else [])
    if args.quick:
        names = ["breast_cancer"]
    threads = args.threads or nytro.default_n_threads()
    result = {"machine": P.machine_info(threads), "command": "python benchmarks/bench_logistic.py " +
              " ".join(argv if argv is not None else sys.argv[1:]), "datasets": []}
    from threadpoolctl import threadpool_limits
    for name in names:
        with threadpool_limits(threads):
            if name in BUNDLED:
                data, m = bundled(name, args.seed), BUNDLED[name]
            else:
                if not args.data_dir:
                    raise SystemExit(f"{name} needs the NYTRO data kit: set NYTRO_DATA or --data-dir")
                data, m = paper(name, args.data_dir, args.n_train, args.n_test, args.seed), PAPER[name]
            print(f"{name}: m = {m}, {len(data[0])} training and {len(data[2])} test rows", flush=True)
            result["datasets"].append(run_dataset(data, m, args.seed, threads))
    result["load_average_at_end"] = list(os.getloadavg())
    print(markdown(result))
    if args.out:
        write(result, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
