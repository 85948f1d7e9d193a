"""Sparse X (issue 45): a NytroClassifier fitted on a CSR matrix too wide to densify, its
fit time, peak memory and test accuracy, against the same fit dense on a narrower copy.

The data are n-gram-like: each row counts `--nnz` column draws from a Zipf-like law over
`--width` columns (popular columns shared by many rows, a long tail of rare ones), scaled
to unit norm; the label is a nonlinear function of the rows' weights on the popular
columns, with 5% of the labels flipped. The wide problem's dense X would take
n * width * 8 bytes (168 GB at the defaults); the narrow copy folds the columns modulo
`--narrow` (the hashing trick), small enough to fit dense, and is fitted both ways: the
sparse and dense fits there give the same model (the largest difference of their decision
values is reported), and the wide fit's accuracy is set beside theirs.

A peer runs at both widths on the same CSR matrix: scikit-learn's Nystroem (the same
Gaussian kernel and bandwidth, gamma = 1 / (2 sigma^2), n_components = nytro's m, its
own uniform draw of as many centres from the training rows) and RidgeClassifierCV, whose
alpha is chosen by leave-one-out over a grid (PEER_LAMBDAS times the training rows, the
paper's lambda scaled as nytro scales it) on the same training rows; its fit time covers
the features' map and the selection.

Each case runs in a process of its own, so that its peak resident memory (VmHWM) is its
own: the table gives it with the resident memory before the fit (the data) and the peak
of the allocations tracemalloc sees during the fit (NumPy's and SciPy's; the C++ core's
own buffers are not traced). The centres are kept dense (m rows of X), O(m width).

    PYTHONPATH=python python benchmarks/bench_sparse.py --out benchmarks/results/sparse
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.sparse as sp

CASES = ("wide-sparse", "narrow-sparse", "narrow-dense", "wide-sparse-peer", "narrow-sparse-peer")
PEER = "Nystroem + RidgeClassifierCV"
# The peer's lambda grid (alpha = lambda n_train): the paper's range, a decade a step
# (leave-one-out costs one SVD of the features for the whole grid).
PEER_LAMBDAS = np.logspace(-15, 0, 16)


def make_data(n, width, nnz, seed=0):
    """(X CSR (n, width), y in {0, 1}): see the module's docstring."""
    rng = np.random.default_rng(seed)
    law = 1.0 / (np.arange(width) + 10.0) ** 1.05
    cumulative = np.cumsum(law)
    cumulative /= cumulative[-1]
    columns = np.minimum(np.searchsorted(cumulative, rng.random(n * nnz)), width - 1)
    rows = np.repeat(np.arange(n), nnz)
    X = sp.csr_matrix((np.ones(n * nnz), (rows, columns)), shape=(n, width))
    X.sum_duplicates()
    X = sp.diags(1.0 / np.sqrt(X.multiply(X).sum(axis=1)).A1) @ X
    popular = 256
    W = rng.standard_normal((popular, 2)) * 3.0
    u = X[:, :popular] @ W
    y = (np.sin(2.0 * u[:, 0]) + u[:, 1] > 0).astype(int)
    flip = rng.random(n) < 0.05
    return X.tocsr(), np.where(flip, 1 - y, y)


def folded(X, narrow):
    """X with column j moved to j mod narrow (colliding entries summed)."""
    coo = X.tocoo()
    out = sp.csr_matrix((coo.data, (coo.row, coo.col % narrow)), shape=(X.shape[0], narrow))
    out.sum_duplicates()
    return out


def peak_rss_mb() -> float:
    """The process's peak resident memory (VmHWM), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def estimator(case, args, n_train):
    """The case's estimator: NytroClassifier, or the peer (see the module's docstring)."""
    if not case.endswith("-peer"):
        import nytro
        return nytro.NytroClassifier(n_centers=args.centers, sigma=args.sigma, random_state=0, n_threads=args.threads)
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeClassifierCV
    from sklearn.pipeline import make_pipeline
    return make_pipeline(Nystroem(kernel="rbf", gamma=0.5 / args.sigma ** 2, n_components=args.centers,
                                  random_state=0),
                         RidgeClassifierCV(alphas=PEER_LAMBDAS * n_train))


def run_case(case, args) -> dict:
    X, y = make_data(args.rows, args.width, args.nnz)
    if case.startswith("narrow"):
        X = folded(X, args.narrow)
    if case.endswith("dense"):
        X = X.toarray()
    n_train = int(0.8 * X.shape[0])
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    before = peak_rss_mb()
    est = estimator(case, args, n_train)
    tracemalloc.start()
    t0 = time.perf_counter()
    est.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    t0 = time.perf_counter()
    decision = est.decision_function(X_test)
    predict_s = time.perf_counter() - t0
    peer = case.endswith("-peer")
    selected = f"alpha = {est[-1].alpha_ / n_train:.0e} n" if peer else f"t = {est.n_iter_}"
    return {"case": case, "fit": PEER if peer else "NytroClassifier", "rows": int(X.shape[0]),
            "width": int(X.shape[1]), "stored": int(X.nnz) if sp.issparse(X) else int(X.size),
            "dense_gib": X.shape[0] * X.shape[1] * 8 / 2**30, "fit_s": fit_s, "predict_s": predict_s,
            "accuracy": float(np.mean(est.classes_[(decision > 0).astype(int)] == y_test)),
            "n_iter": None if peer else int(est.n_iter_), "alpha": float(est[-1].alpha_) if peer else None,
            "selected": selected, "rss_before_fit_mb": before, "peak_rss_mb": peak_rss_mb(),
            "traced_fit_peak_mb": traced, "decision": decision.tolist()}


def machine() -> str:
    import nytro.experiments.protocol as P
    import nytro
    return P.machine_line(P.machine_info(nytro.default_n_threads()))


def markdown(result) -> str:
    lines = [f"Machine: {result['machine']}. Shared machine: times are noisy.", "",
             "| case | fit | rows | width | stored entries | dense X (GiB) | fit (s) | predict (s) | test accuracy "
             "| selected | RSS before fit (MiB) | peak RSS (MiB) | traced peak in fit (MiB) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["cases"]:
        lines.append(f"| {r['case']} | {r['fit']} | {r['rows']} | {r['width']} | {r['stored']} | "
                     f"{r['dense_gib']:.2f} | {r['fit_s']:.2f} | {r['predict_s']:.2f} | {r['accuracy']:.4f} | "
                     f"{r['selected']} | {r['rss_before_fit_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
                     f"{r['traced_fit_peak_mb']:.0f} |")
    a = result["args"]
    lines += ["", f"Largest |difference| of the narrow copy's decision values, sparse against dense: "
              f"{result['narrow_max_difference']:.3g} (largest |value| {result['narrow_max_value']:.3g}).",
              f"NytroClassifier(n_centers={a['centers']}, sigma={a['sigma']}); the peer "
              f"Nystroem(kernel='rbf', gamma={0.5 / a['sigma'] ** 2:g}, n_components={a['centers']}) + "
              f"RidgeClassifierCV (leave-one-out over alpha = lambda n, lambda in 1e-15 ... 1 a decade a step) on "
              f"the same CSR matrix; {a['nnz']} draws per row, 80% of the rows for training, the rest for the "
              "test."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--width", type=int, default=2**20, help="columns of the wide problem (default 2^20)")
    parser.add_argument("--narrow", type=int, default=4096, help="columns of the narrow copy (default 4096)")
    parser.add_argument("--nnz", type=int, default=50, help="column draws per row (default 50)")
    parser.add_argument("--centers", type=int, default=200)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="2000 rows, width 2^16 (a smoke run)")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # one case, in this process
    parser.add_argument("--out", default=None, help="folder for sparse.json and sparse.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.width, args.narrow, args.centers = 2000, 2**16, 1024, 100
    if args.case:
        print(json.dumps(run_case(args.case, args)))
        return None
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    cases = []
    for case in CASES:
        done = subprocess.run([sys.executable, __file__, *passed, "--case", case], check=True, capture_output=True,
                              text=True, env=os.environ)
        cases.append(json.loads(done.stdout.strip().splitlines()[-1]))
    decisions = {c["case"]: np.asarray(c.pop("decision")) for c in cases}
    sparse_, dense_ = decisions["narrow-sparse"], decisions["narrow-dense"]
    result = {"machine": machine(), "args": vars(args), "cases": cases,
              "command": "python benchmarks/bench_sparse.py " + " ".join(passed),
              "narrow_max_difference": float(np.max(np.abs(sparse_ - dense_))),
              "narrow_max_value": float(np.max(np.abs(dense_))), "load_average_at_end": list(os.getloadavg())}
    text = markdown(result)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sparse.json").write_text(json.dumps(result, indent=1) + "\n")
        (out / "sparse.md").write_text(text + "\n")
        (out / "command.txt").write_text(result["command"] + "\n")
        (out / "machine.txt").write_text(result["machine"] + "\n")
    return result


if __name__ == "__main__":
    main()
