"""Where the default fit's time goes at the paper's large shapes, stage by stage, beside the
time each stage's work takes at this machine's limits measured in the same process, and
beside the paper protocol's GD-500 fit on the same split and centres.

The default fit is NytroRegressor's path (method="hybrid", n_iter_no_change=50, the
rest as nytro_path) at an explicit sigma and m (the paper's, `--sigma`/`--m`), run once
per solver (`--solvers`, default "direct,gram"; "auto" too if asked) with a progress
callback. The core reports "kernel" (K_mm, the hold-out rows, then the training rows
for the direct solver), "factor", "gram" (the Gram solver's row blocks of A^T A),
"lanczos" after each product with A^T A and "iterate" as it validates a stretch of the
path. The Python bindings pass an event on only 20 ms after the last one, or when a
stage completes; the stages are cut at the events that pass:

  factor      K_mm's kernel and its pivoted Cholesky factor: m^3 / 3 flops at dgemm's rate
              (2 m^2 d for the kernel beside it)
  kernels     the hold-out kernel, and the training rows' kernel where the direct solver
              stores it: 2 (n_val + n) m d flops at dgemm's rate (their exponentials and
              first writes are not in the limit)
  gram        the Gram solver's pass: A = K R on each row block (a triangular product,
              n m^2 flops) and A^T A (a rank update, n m^2 flops), at the same-shape
              dgemm and dsyrk rates of numpy's BLAS
  products    the products with A^T A: for the direct solver one read of K_nm each (its
              bytes at the read bandwidth), for the Gram solver 2 m^2 flops each
              (counted, not bounded: a few milliseconds)
  hold-out    what lies between two stretches of products: the new basis vectors'
              coefficients, their hold-out images (K_val R V, one product of the stored
              hold-out kernel with a stretch), the images' Gram-Schmidt and the Tikhonov
              grid (100 lambdas) at every new size; with the tail after the last product
              (the last stretch's evaluation and the coefficients)

The limits are measured right before each fit, with the fit's thread count: dgemm
(4096^2 and the Gram pass's block shape), dsyrk of that block and the read bandwidth
(bench_kernels.limits). Run it alone on a quiet machine, after deleting the machine-rates
cache.

    NYTRO_DATA=/path/to/data python benchmarks/bench_default_stages.py --dataset ijcnn1 \
        --out benchmarks/results/default_stages
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

import nytro
from bench_kernels import limits, median_seconds, write_report  # a sibling script: benchmarks/ is on sys.path
from nytro.experiments import protocol as P

STAGES = ("factor", "kernels", "gram", "products", "hold-out")


def machine_limits(threads: int, m: int, block: int, repeats: int, quick: bool) -> dict:
    """dgemm GFLOP/s (square, and block x m by m x m), dsyrk GFLOP/s (m x m from a block x
    m panel) and the read GB/s, with `threads` BLAS threads; medians."""
    from scipy.linalg.blas import dsyrk
    length = 1_000_000 if quick else 100_000_000
    measured = limits(threads, repeats, (np.ones(length), np.ones(length)), square=256 if quick else 4096)
    rng = np.random.default_rng(0)
    panel, square = rng.standard_normal((block, m)), rng.standard_normal((m, m))
    with threadpool_limits(threads, user_api="blas"):
        gemm = median_seconds(lambda: panel @ square, repeats)
        syrk = median_seconds(lambda: dsyrk(1.0, panel, trans=1, lower=1), repeats)
    return {"threads": threads, "dgemm_gflops": measured["gemm_gflops_float64"], "read_GBps": measured["read_GBps"],
            "block": block, "block_dgemm_gflops": 2.0 * block * m * m / gemm / 1e9,
            "block_dsyrk_gflops": float(block) * m * m / syrk / 1e9}


def gram_block_rows(n: int, m: int) -> int:
    """The Gram pass's row block (passes/gram.cpp, block_rows): about 2^22 kernel entries,
    equal blocks."""
    most = min(max(256, (1 << 22) // m), n)
    blocks = -(-n // most)
    return -(-n // blocks)


def stages_of(events: list, total: float) -> dict:
    """Seconds per stage (STAGES) from the (seconds, stage, done, total) events of one fit
    that lasted `total`."""
    factor_end = max((t for t, stage, *_ in events if stage == "factor"), default=0.0)
    gram_end = max((t for t, stage, *_ in events if stage == "gram"), default=None)
    products = [i for i, (_, stage, *_) in enumerate(events) if stage == "lanczos"]
    out = dict.fromkeys(STAGES, 0.0)
    out["factor"] = factor_end
    if not products:
        out["hold-out"] = total - factor_end
        return out
    first = events[products[0]][0]
    # Intervals between two products with nothing else reported between them are
    # products; one that an "iterate" interrupts holds a product and the hold-out work.
    plain, mixed = [], []
    for a, b in zip(products, products[1:]):
        gap = events[b][0] - events[a][0]
        (plain if b == a + 1 else mixed).append(gap)
    one = statistics.median(plain) if plain else 0.0
    out["products"] = sum(plain) + one * (len(mixed) + 1)
    out["hold-out"] = sum(mixed) - one * len(mixed) + (total - events[products[-1]][0])
    before = first - one - factor_end  # the kernels (and the Gram pass) before the first product
    if gram_end is not None:
        kernels_end = max((t for t, stage, done, n in events if stage == "kernel" and t <= gram_end and done == n),
                          default=factor_end)
        gram_start = max(kernels_end, factor_end)
        out["gram"] = gram_end - gram_start
        out["kernels"] = gram_start - factor_end
        out["products"] += first - one - gram_end  # the path's start after the pass
    else:
        out["kernels"] = before
    return out


def stage_bounds(lim: dict, solver: str, n: int, n_val: int, m: int, d: int, products: int) -> dict:
    """Seconds each stage's work takes at the limits (None: no limit of ours)."""
    dgemm = lim["dgemm_gflops"] * 1e9
    kernel_rows = n_val + (n if solver == "direct" else 0)
    knm_bytes = 8.0 * n * m
    gram = (float(n) * m * m / (lim["block_dgemm_gflops"] * 1e9)
            + float(n) * m * m / (lim["block_dsyrk_gflops"] * 1e9)) if solver == "gram" else None
    return {"factor": (2.0 * m * m * d + m**3 / 3.0) / dgemm, "kernels": 2.0 * kernel_rows * m * d / dgemm,
            "gram": gram,
            "products": products * knm_bytes / (lim["read_GBps"] * 1e9) if solver == "direct" else None,
            "hold-out": None}


def fit_once(parts, centers, sigma: float, test, threads: int, **options) -> dict:
    """One path with its events, and its test RMSE."""
    X, y, X_val, y_val = parts
    events = []
    start = time.perf_counter()
    result = nytro.nytro_path(
        X, y, centers, sigma, X_val=X_val, y_val=y_val, n_threads=threads,
        progress=lambda stage, done, total: events.append((time.perf_counter() - start, stage, done, total)),
        **options)
    seconds = time.perf_counter() - start
    prediction = nytro.kernel_predict(test[0], centers, result.coef, sigma, n_threads=threads)
    return {"seconds": seconds, "events": events, "products": int(result.products), "t": int(result.n_iter),
            "lambda": float(result.lambda_) if getattr(result, "lambda_", None) is not None else None,
            "solver": str(result.solver), "test_rmse": P.rmse(prediction, test[1])}


def format_report(report: dict) -> str:
    lines = [f"# Stages of the default fit (method=\"hybrid\", n_iter_no_change=50): {report['dataset']} "
             f"(m = {report['m']}, sigma = {report['sigma']}, n = {report['n']}, n_val = {report['n_val']}, "
             f"d = {report['d']}, {report['threads']} threads)", "", report["machine"], "",
             "| rep | fit | s | t* | lambda | products | test RMSE | x GD-500's time |",
             "|---|---|---|---|---|---|---|---|"]
    for i, rep in enumerate(report["reps"]):
        gd = rep["fits"]["gd500"]["seconds"]
        for name, fit in rep["fits"].items():
            lam = "" if fit["lambda"] is None else f"{fit['lambda']:.3g}"
            lines.append(f"| {i + 1} | {name} | {fit['seconds']:.2f} | {fit['t']} | {lam} | {fit['products']} "
                         f"| {fit['test_rmse']:.6f} | {fit['seconds'] / gd:.2f} |")
    lines += ["", "Limits measured before each repetition (numpy's BLAS, same threads):", "",
              "| rep | dgemm GFLOP/s (4096^2) | dgemm GFLOP/s (block) | dsyrk GFLOP/s (block) | read GB/s |",
              "|---|---|---|---|---|"]
    for i, rep in enumerate(report["reps"]):
        lim = rep["limits"]
        lines.append(f"| {i + 1} | {lim['dgemm_gflops']:.1f} | {lim['block_dgemm_gflops']:.1f} "
                     f"| {lim['block_dsyrk_gflops']:.1f} | {lim['read_GBps']:.1f} |")
    for name in report["reps"][0]["fits"]:
        if name == "gd500":
            continue
        lines += ["", f"Solver {name}: medians over the repetitions (block = {report['reps'][0]['limits']['block']} "
                      "rows)", "", "| stage | measured s | at the limits s | measured / limits |",
                  "|---|---|---|---|"]
        for stage in STAGES:
            measured = statistics.median(rep["fits"][name]["stages"][stage] for rep in report["reps"])
            bounds = [rep["fits"][name]["bounds"][stage] for rep in report["reps"]]
            if bounds[0] is None:
                lines.append(f"| {stage} | {measured:.2f} | | |")
            else:
                bound = statistics.median(bounds)
                lines.append(f"| {stage} | {measured:.2f} | {bound:.2f} | {measured / bound:.2f} |")
        total = statistics.median(rep["fits"][name]["seconds"] for rep in report["reps"])
        lines.append(f"| total | {total:.2f} | | |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ijcnn1", help="a Table 2 dataset (default ijcnn1)")
    parser.add_argument("--m", type=int, default=None, help="centres (default: the paper's for the dataset)")
    parser.add_argument("--sigma", type=float, default=None, help="bandwidth (default: the paper's)")
    parser.add_argument("--solvers", default="direct,gram", help="comma-separated (default direct,gram)")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument("--repeats", type=int, default=3, help="timings per limit (default 3)")
    parser.add_argument("--data", default=None, help="data folder (default: NYTRO_DATA)")
    parser.add_argument("--out", default="benchmarks/results/default_stages")
    parser.add_argument("--quick", action="store_true",
                        help="the synthetic YearPrediction stand-in at 3000 rows, m = 300 (CI)")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be >= 1, got {args.reps}")
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    unknown = sorted(set(solvers) - {"direct", "gram", "auto"})
    if unknown or not solvers:
        parser.error(f"--solvers takes direct, gram and auto, got {args.solvers!r}")
    threads = P.resolve_threads(args.threads)
    config = P.dataset_config("yearprediction-synthetic" if args.quick else args.dataset)
    data = P.load(config, n_train=3000, n_test=500) if args.quick else P.load(config, args.data)
    m = args.m or (300 if args.quick else config.m)
    sigma = args.sigma or config.sigma
    split = P.holdout_split(data.X_train.shape[0], m, args.seed)
    parts = split.parts(data.X_train, data.y_train)
    centers = split.center_rows(data.X_train)
    test = (data.X_test, data.y_test)
    report = {"dataset": config.label, "m": m, "sigma": sigma, "d": int(data.X_train.shape[1]), "threads": threads,
              "n": split.n_train, "n_val": split.n_val, "machine": P.machine_line(P.machine_info(threads)),
              "command": "python benchmarks/bench_default_stages.py " + " ".join(argv or []), "reps": []}
    block = gram_block_rows(split.n_train, m)
    for rep in range(args.reps):
        lim = machine_limits(threads, m, block, args.repeats, args.quick)
        fits = {}
        gd = fit_once(parts, centers, sigma, test, threads, method="gd", max_iter=500)
        for solver in solvers:
            fit = fit_once(parts, centers, sigma, test, threads, method="hybrid", n_iter_no_change=50, solver=solver)
            fit["stages"] = stages_of(fit.pop("events"), fit["seconds"])
            fit["bounds"] = stage_bounds(lim, fit["solver"], split.n_train, split.n_val, m, report["d"],
                                         fit["products"])
            fits[solver] = fit
            print(f"rep {rep + 1} {solver}: {fit['seconds']:.2f} s (GD-500 {gd['seconds']:.2f} s), "
                  + ", ".join(f"{k} {v:.2f}" for k, v in fit["stages"].items()), flush=True)
        gd.pop("events")
        report["reps"].append({"limits": lim, "fits": {"gd500": gd, **fits}})
    write_report(args.out, "default_stages", P.json_ready(report), format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
