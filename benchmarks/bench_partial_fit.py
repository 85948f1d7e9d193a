"""partial_fit (issue 45): a NYTRO fit on data that arrives in batches, against the same
fit in one call and against scikit-learn's streaming peer, SGD on random Fourier
features (RBFSampler + SGDRegressor / SGDClassifier partial_fit) at equal m.

On scikit-learn's cpuSmall (bundled with nytro; regression) and digits (classification):
the rows in k batches, NytroRegressor / NytroClassifier.partial_fit (the first call
draws the centres from its rows and sets sigma), against one partial_fit call on all of
them with those centres and bandwidths given (the same split rule and sums: the
predictions agree to rounding), and against the peer fed the same batches, its scaler and bandwidth
set from the first batch as nytro's are (one pass over the data per epoch; `--epochs`
passes). Test error and time in one run; the time of every call summed.

    PYTHONPATH=python python benchmarks/bench_partial_fit.py --out benchmarks/results/partial_fit
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import SGDClassifier, SGDRegressor
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import nytro
from nytro.datasets import load_cpusmall
from nytro.estimators._bandwidth import distance_scale, feature_spreads
from nytro.experiments import protocol as P


def datasets():
    data = load_cpusmall()
    yield "cpuSmall", "regression", data.X_train, data.y_train, data.X_test, data.y_test
    X, y = load_digits(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    yield "digits", "classification", X, y, Xt, yt


def error(kind, predicted, y):
    return float(np.sqrt(np.mean((predicted - y) ** 2))) if kind == "regression" else float(np.mean(predicted != y))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def nytro_batches(kind, X, y, batches, m, classes, like=None):
    """partial_fit over `batches` batches; like: a fitted estimator whose centres and
    bandwidths are given (the first call fixes them: from its own rows otherwise)."""
    given = {} if like is None else {"centers": like.centers_, "sigma": like.sigma_}
    est = (nytro.NytroRegressor if kind == "regression" else nytro.NytroClassifier)(n_centers=m, random_state=0,
                                                                                    **given)
    extra = {} if kind == "regression" else {"classes": classes}
    for part in np.array_split(np.arange(len(X)), batches):
        est.partial_fit(X[part], y[part], **extra)
    return est


def peer(kind, X, y, batches, m, classes, epochs):
    """SGD on m random Fourier features: the scaler and the kernel's bandwidth from the
    first batch (the median heuristic, as nytro's first partial_fit call sets sigma)."""
    parts = np.array_split(np.arange(len(X)), batches)
    first = X[parts[0]]
    scaler = StandardScaler().fit(first)
    Z = scaler.transform(first)
    s0 = distance_scale(Z, feature_spreads(Z))
    features = RBFSampler(gamma=1.0 / (2.0 * s0 * s0), n_components=m, random_state=0).fit(Z)
    model = SGDRegressor(random_state=0) if kind == "regression" else SGDClassifier(loss="log_loss", random_state=0)
    for _ in range(epochs):
        for part in parts:
            F = features.transform(scaler.transform(X[part]))
            if kind == "regression":
                model.partial_fit(F, y[part])
            else:
                model.partial_fit(F, y[part], classes=classes)
    return lambda Xt: model.predict(features.transform(scaler.transform(Xt)))


def run(batches, m, repeats, epochs):
    rows = []
    for name, kind, X, y, Xt, yt in datasets():
        classes = np.unique(y) if kind == "classification" else None
        times = {"batches": [], "one call": [], "peer": []}
        for _ in range(repeats):  # interleaved
            t, in_batches = timed(lambda: nytro_batches(kind, X, y, batches, m, classes))
            times["batches"].append(t)
            t, whole = timed(lambda: nytro_batches(kind, X, y, 1, m, classes, like=in_batches))
            times["one call"].append(t)
            t, predict_peer = timed(lambda: peer(kind, X, y, batches, m, classes, epochs))
            times["peer"].append(t)
        scores = (in_batches.predict(Xt) if kind == "regression" else in_batches.decision_function(Xt))
        scores_whole = (whole.predict(Xt) if kind == "regression" else whole.decision_function(Xt))
        agreement = float(np.abs(scores - scores_whole).max() / max(np.abs(scores_whole).max(), 1e-300))
        medians = {k: statistics.median(v) for k, v in times.items()}
        rows.append({"data": name, "kind": kind, "n_train": int(len(X)), "n_test": int(len(Xt)), "m": m,
                     "batches": batches, "epochs": epochs, "seconds": times, "median_seconds": medians,
                     "error": {"batches": error(kind, in_batches.predict(Xt), yt),
                               "one call": error(kind, whole.predict(Xt), yt),
                               "peer": error(kind, predict_peer(Xt), yt)},
                     "relative_difference_batches_one_call": agreement, "n_iter": int(in_batches.n_iter_)})
    return rows


def markdown(result):
    info = result["machine"]
    lines = [f"Machine: {P.machine_line(info)}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}.", "",
             "| data | rows | m | batches | error: nytro batches | one call | SGD on RFF | "
             "time (s): batches | one call | SGD on RFF | batches / one call | batches vs one call (rel.) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        e, s = r["error"], r["median_seconds"]
        what = "RMSE" if r["kind"] == "regression" else "error rate"
        lines.append(f"| {r['data']} ({what}) | {r['n_train']} | {r['m']} | {r['batches']} | {e['batches']:.4g} | "
                     f"{e['one call']:.4g} | {e['peer']:.4g} | {s['batches']:.3f} | {s['one call']:.3f} | "
                     f"{s['peer']:.3f} | {s['batches'] / s['one call']:.2f} | "
                     f"{r['relative_difference_batches_one_call']:.1e} |")
    lines += ["", f"Medians of {result['runs'][0]['seconds']['batches'].__len__()} interleaved repeats; every "
              "partial_fit call's time summed. SGD on random Fourier features (RBFSampler + SGDRegressor / "
              f"SGDClassifier(loss='log_loss')), {result['runs'][0]['epochs']} pass(es) over the batches, "
              "scaler and bandwidth from the first batch."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=10, help="batches (default 10)")
    parser.add_argument("--centers", type=int, default=500, help="m, nytro's centres and the peer's features")
    parser.add_argument("--epochs", type=int, default=1, help="the peer's passes over the batches (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--quick", action="store_true", help="m = 100, 1 repeat (CI)")
    parser.add_argument("--out", default=None, help="folder for partial_fit.json and partial_fit.md")
    args = parser.parse_args(argv)
    m, repeats = (100, 1) if args.quick else (args.centers, args.repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = {"machine": P.machine_info(nytro.default_n_threads()),
                  "command": "python benchmarks/bench_partial_fit.py " + " ".join(argv if argv is not None else
                                                                                   sys.argv[1:]),
                  "runs": run(args.batches, m, repeats, args.epochs)}
    result["load_average_at_end"] = list(os.getloadavg())
    if args.out:
        P.write_claim(args.out, "partial_fit", result, markdown(result) + "\n")
    else:
        print(markdown(result))
    return result


if __name__ == "__main__":
    main()
