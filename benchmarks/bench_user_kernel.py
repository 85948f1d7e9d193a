"""A kernel of one's own (issue 45): kernel=<a callable k(X, Z)> for the estimators,
against the built-in kernel of the same formula and against scikit-learn's Nystroem
with the same kernel.

Two claims, on scikit-learn's digits (raw pixel counts 0..16, 1347 training and 450
test rows):
  1. A callable Gaussian (NumPy, written as a user would) fits the model of
     kernel="gaussian" with the same sigma (the largest relative difference of the test
     decision values), at what cost (the time ratio: the callable is evaluated by
     blocks in NumPy, not by the core's fused kernel passes).
  2. A kernel nytro does not build in, scikit-learn's chi2_kernel (histogram data),
     in NytroClassifier against Nystroem(kernel="chi2") + RidgeClassifierCV at equal
     m: test error and time in one run, and the built-in Gaussian (sigma="auto") beside.

    PYTHONPATH=python python benchmarks/bench_user_kernel.py --out benchmarks/results/user_kernel
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from functools import partial

import numpy as np
from sklearn.datasets import load_digits
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import RidgeClassifierCV
from sklearn.metrics.pairwise import chi2_kernel
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

import nytro
from nytro.experiments import protocol as P

SIGMA = 20.0  # digits' pixel distances are tens: a bandwidth of that order


def gaussian(X, Z, sigma=SIGMA):
    squared = (X * X).sum(1)[:, None] + (Z * Z).sum(1)[None, :] - 2.0 * X @ Z.T
    return np.exp(-np.maximum(squared, 0.0) / (2.0 * sigma * sigma))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(m, repeats, gamma):
    X, y = load_digits(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    chi2 = partial(chi2_kernel, gamma=gamma)
    fits = {
        "builtin gaussian": lambda: nytro.NytroClassifier(sigma=SIGMA, n_centers=m, random_state=0),
        "callable gaussian": lambda: nytro.NytroClassifier(kernel=gaussian, n_centers=m, random_state=0),
        "callable chi2": lambda: nytro.NytroClassifier(kernel=chi2, n_centers=m, random_state=0),
        "gaussian, sigma=auto": lambda: nytro.NytroClassifier(n_centers=m, random_state=0),
        "Nystroem(chi2) + RidgeClassifierCV": lambda: make_pipeline(
            Nystroem(kernel="chi2", kernel_params={"gamma": gamma}, n_components=m, random_state=0),
            RidgeClassifierCV(alphas=np.logspace(-6, 2, 9))),
    }
    times = {name: [] for name in fits}
    models = {}
    for _ in range(repeats):  # interleaved
        for name, make in fits.items():
            seconds, models[name] = timed(lambda: make().fit(X, y))
            times[name].append(seconds)
    medians = {name: statistics.median(v) for name, v in times.items()}
    builtin, own = (models[k].decision_function(Xt) for k in ("builtin gaussian", "callable gaussian"))
    return {"n_train": int(len(X)), "n_test": int(len(Xt)), "m": m, "sigma": SIGMA, "chi2_gamma": gamma,
            "repeats": repeats, "seconds": times, "median_seconds": medians,
            "error": {name: float(np.mean(model.predict(Xt) != yt)) for name, model in models.items()},
            "callable_vs_builtin": float(np.abs(own - builtin).max() / np.abs(builtin).max()),
            "same_t": bool(models["callable gaussian"].n_iter_ == models["builtin gaussian"].n_iter_)}


def markdown(result):
    r = result["run"]
    s, e = r["median_seconds"], r["error"]
    lines = [f"Machine: {P.machine_line(result['machine'])}; load average at end "
             f"{', '.join(f'{x:.2f}' for x in result['load_average_at_end'])}.", "",
             f"digits, {r['n_train']} training and {r['n_test']} test rows, m = {r['m']}:", "",
             "| fit | test error | time (s) | time / built-in Gaussian |", "|---|---|---|---|"]
    for name in s:
        lines.append(f"| {name} | {e[name]:.4f} | {s[name]:.3f} | {s[name] / s['builtin gaussian']:.2f} |")
    lines += ["", f"The callable Gaussian against kernel=\"gaussian\" (sigma = {r['sigma']:g}): largest relative "
              f"difference of the test decision values {r['callable_vs_builtin']:.1e}, same selected t: "
              f"{r['same_t']}. chi2_kernel with gamma = {r['chi2_gamma']:g}. Medians of {r['repeats']} interleaved "
              "repeats."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--centers", type=int, default=400, help="m, nytro's centres and Nystroem's (default 400)")
    parser.add_argument("--gamma", type=float, default=0.02, help="chi2_kernel's gamma (default 0.02)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--quick", action="store_true", help="m = 100, 1 repeat (CI)")
    parser.add_argument("--out", default=None, help="folder for user_kernel.json and user_kernel.md")
    args = parser.parse_args(argv)
    m, repeats = (100, 1) if args.quick else (args.centers, args.repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = {"machine": P.machine_info(nytro.default_n_threads()),
                  "command": "python benchmarks/bench_user_kernel.py " + " ".join(argv if argv is not None else
                                                                                   sys.argv[1:]),
                  "run": run(m, repeats, args.gamma)}
    result["load_average_at_end"] = list(os.getloadavg())
    if args.out:
        P.write_claim(args.out, "user_kernel", result, markdown(result) + "\n")
    else:
        print(markdown(result))
    return result


if __name__ == "__main__":
    main()
