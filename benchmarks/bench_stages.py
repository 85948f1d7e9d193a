"""Where one large fit's time goes, stage by stage, beside the time each stage's work takes
at a limit of this machine measured in the same process (the performance targets in
benchmarks/results/table2/history.md ask to name what bounds a target that is not met, with the measured figure).

The fit is Table 2's `nytro-window` row (GD with the authors' window rule and threshold,
the split and centres of `--seed`, Table 2's storage and solver), run with a progress
callback. The core reports "factor" once the Nystrom factor is done, then one event per
product with A^T A ("step_size" while lambda_max's estimate rides along, then "lanczos")
and "iterate" while it validates. The stages cut at those events:

  factor       K_mm's kernel and its pivoted Cholesky factor: 2 m^2 d + m^3 / 3 flops,
               at dgemm's rate
  K_nm         from the factor to the first product, less that product (the median of
               the others): the kernel of the training rows, the first touch of the fresh
               memory it is written to, and one pass over it for K^T y. Split here into
                 kernel        its time measured on the same rows into memory already
                               written (--probe-rows of them and all m centres, in
                               float32 unless K_nm is float64, scaled to n rows and the
                               factor's k columns), against 2 n k d flops at the GEMM
                               rate of that precision
                 K^T y         one product's time
                 first touch   the rest: the fresh pages, which this VM's host maps at a
                               rate of its own (reported as GB/s of K_nm)
  products     the passes over K_nm, one per product: its bytes at the read bandwidth
  validation   everything after the last product (the hold-out kernel, streamed in
               blocks, its products with the basis, the selection): 2 n_val k d flops at
               the kernel's GEMM rate
K_nm is n x k, k the factor's rank (m unless the factor drops centres, as float16
storage's rank cut does).
The core calls back at most every 20 ms, so on small data the stages merge; on
Covertype each product takes most of a second.

The limits are measured right before each fit, with the fit's thread count: dgemm and
sgemm (4096^2, numpy) and the read bandwidth (the dot product of two 800 MB vectors, as in
docs/design.md, "The performance model"). Run it alone on a quiet machine.

    NYTRO_DATA=/path/to/data python benchmarks/bench_stages.py --dataset covtype --reps 3 \
        --out benchmarks/results/bench_stages
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import nytro
from bench_kernels import limits, median_seconds, write_report  # a sibling script: benchmarks/ is on sys.path
from nytro.experiments import protocol as P

PRODUCT_EVENTS = ("step_size", "lanczos")
STAGES = ("factor", "K_nm: kernel", "K_nm: K^T y", "K_nm: first touch", "products", "validation")


def machine_limits(threads: int, rows, centers, sigma: float, dtype, repeats: int, quick: bool) -> dict:
    """dgemm and sgemm GFLOP/s and the read GB/s (bench_kernels.limits), and the seconds of
    the kernel of `rows` (in `dtype`) written into an array already written; `threads`
    threads, medians."""
    length = 1_000_000 if quick else 100_000_000
    measured = limits(threads, repeats, (np.ones(length), np.ones(length)), square=256 if quick else 4096)
    existing = nytro.gaussian_kernel(rows, centers, sigma, n_threads=threads, dtype=dtype)
    kernel = median_seconds(
        lambda: nytro.gaussian_kernel(rows, centers, sigma, n_threads=threads, dtype=dtype, out=existing), repeats)
    return {"threads": threads, "dgemm_gflops": measured["gemm_gflops_float64"],
            "sgemm_gflops": measured["gemm_gflops_float32"], "read_GBps": measured["read_GBps"],
            "kernel_probe_rows": int(rows.shape[0]), "kernel_probe_s": kernel}


def stages_of(events: list, total: float, n: int, columns_share: float, limits: dict) -> dict:
    """Seconds per stage (STAGES) from the (seconds, stage) events of one fit of `n`
    training rows that lasted `total`; K_nm has `columns_share` of the centres' columns
    (the factor's rank over m: below 1 where it drops centres)."""
    factor_end = next((t for t, stage in events if stage == "factor"), 0.0)
    products = [t for t, stage in events if stage in PRODUCT_EVENTS]
    if not products:  # no product reported (a tiny fit between two callbacks)
        return {**dict.fromkeys(STAGES, 0.0), "factor": factor_end, "validation": total - factor_end}
    gaps = [later - earlier for earlier, later in zip(products, products[1:])]
    one_product = min(statistics.median(gaps), products[0] - factor_end) if gaps else 0.0
    knm = products[0] - one_product - factor_end
    kernel = min(knm, limits["kernel_probe_s"] * n / limits["kernel_probe_rows"] * columns_share)
    kty = min(one_product, knm - kernel)
    return {"factor": factor_end, "K_nm: kernel": kernel, "K_nm: K^T y": kty,
            "K_nm: first touch": knm - kernel - kty, "products": products[-1] - products[0] + one_product,
            "validation": total - products[-1]}


def stage_bounds(limits: dict, n: int, n_val: int, m: int, k: int, d: int, products: int, dtype) -> dict:
    """Seconds each stage's work takes at the measured limits (None: no limit of ours);
    K_nm is n x k (k: the factor's rank) stored in `dtype`, computed in float32 unless
    that is float64."""
    dgemm = limits["dgemm_gflops"] * 1e9
    kernel_rate = (limits["dgemm_gflops"] if dtype == np.float64 else limits["sgemm_gflops"]) * 1e9
    knm_bytes = float(n) * k * np.dtype(dtype).itemsize
    return {"factor": (2.0 * m * m * d + m**3 / 3.0) / dgemm, "K_nm: kernel": 2.0 * n * k * d / kernel_rate,
            "K_nm: K^T y": knm_bytes / (limits["read_GBps"] * 1e9), "K_nm: first touch": None,
            "products": products * knm_bytes / (limits["read_GBps"] * 1e9),
            "validation": 2.0 * n_val * k * d / kernel_rate}


def fit_once(config, parts, centers, test, threads: int, options: dict) -> dict:
    """One window-rule fit with its events cut into stages, and its test RMSE."""
    X, y, X_val, y_val = parts
    events = []
    start = time.perf_counter()
    result = nytro.nytro_path(X, y, centers, config.sigma, X_val=X_val, y_val=y_val, method="gd",
                              step_size="auto", stopping="window", tol=config.window_tol, window=P.WINDOW,
                              n_threads=threads,
                              progress=lambda stage, done, total: events.append((time.perf_counter() - start, stage)),
                              **options)
    total = time.perf_counter() - start
    prediction = nytro.kernel_predict(test[0], centers, result.coef, config.sigma, n_threads=threads)
    return {"seconds": total, "events": events, "products": result.products, "rank": result.rank,
            "t": result.n_iter, "test_rmse": P.rmse(prediction, test[1])}


def format_report(report: dict) -> str:
    fits = report["fits"]
    lines = [f"# Stages of NYTRO's window-rule fit: {report['dataset']} (m = {report['m']}, n = {report['n']}, "
             f"n_val = {report['n_val']}, d = {report['d']}, {report['threads']} threads, K_nm in "
             f"{report['storage']}, {report['knm_GB']:.1f} GB: {report['rank']} columns, the factor's rank)", "",
             report["machine"], ""]
    paper = report.get("paper_seconds")
    if paper:
        lines += [f"The paper's time: {paper} s (12 cores); 4x it: {paper / 4:.1f} s.", ""]
    lines += ["| rep | dgemm GFLOP/s | sgemm GFLOP/s | read GB/s | total s | first touch GB/s | t* | products "
              "| test RMSE |", "|---|---|---|---|---|---|---|---|---|"]
    for i, fit in enumerate(fits):
        lim = fit["limits"]
        lines.append(f"| {i + 1} | {lim['dgemm_gflops']:.1f} | {lim['sgemm_gflops']:.1f} | {lim['read_GBps']:.1f} "
                     f"| {fit['seconds']:.2f} | {fit['first_touch_GBps']:.2f} | {fit['t']} | {fit['products']} "
                     f"| {fit['test_rmse']:.6f} |")
    lines += ["", "Medians over the repetitions (each at the limits measured right before it):", "",
              "| stage | measured s | at the limits s | measured / limits |", "|---|---|---|---|"]
    for stage in STAGES:
        measured = statistics.median(f["stages"][stage] for f in fits)
        bounds = [f["bounds"][stage] for f in fits]
        if bounds[0] is None:
            lines.append(f"| {stage} | {measured:.2f} | (the host's) | |")
            continue
        bound = statistics.median(bounds)
        lines.append(f"| {stage} | {measured:.2f} | {bound:.2f} | {measured / bound:.2f} |")
    total = statistics.median(f["seconds"] for f in fits)
    ours = statistics.median(sum(v for v in f["bounds"].values() if v is not None) for f in fits)
    touch = statistics.median(f["stages"]["K_nm: first touch"] for f in fits)
    lines += [f"| total | {total:.2f} | {ours:.2f} + first touch {touch:.2f} = {ours + touch:.2f} | "
              f"{total / (ours + touch):.2f} |", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="covtype", help="a Table 2 dataset (default covtype)")
    parser.add_argument("--reps", type=int, default=3, help="fits, each after its own limits (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="default: all cores")
    parser.add_argument("--repeats", type=int, default=3, help="timings per limit (default 3)")
    parser.add_argument("--probe-rows", type=int, default=50_000,
                        help="training rows whose kernel times the kernel alone (default 50000)")
    parser.add_argument("--data", default=None, help="data folder (default: NYTRO_DATA)")
    parser.add_argument("--out", default="benchmarks/results/bench_stages")
    parser.add_argument("--storage", choices=("float32", "float16"), default=None,
                        help="K_nm's precision (default: Table 2's, float32 for the large datasets)")
    parser.add_argument("--quick", action="store_true",
                        help="the synthetic YearPrediction stand-in at 3000 rows, m = 300 (CI)")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be >= 1, got {args.reps}")
    threads = P.resolve_threads(args.threads)
    config = P.dataset_config("yearprediction-synthetic" if args.quick else args.dataset)
    if args.quick:
        config = P.DatasetConfig(config.name, config.label, 300, config.sigma, config.window_tol, config.paper_key,
                                 config.paper_n, synthetic=True, large=True)
        data = P.load(config, n_train=3000, n_test=500)
    else:
        data = P.load(config, args.data)
    options = config.nytro_options()
    if args.storage:
        options = {**options, "storage": args.storage, "solver": "direct"}
    storage = np.dtype(options.get("storage", "float64")).type
    kernel_dtype = np.float64 if storage == np.float64 else np.float32
    report = {"dataset": config.label, "m": config.m, "d": int(data.X_train.shape[1]), "threads": threads,
              "storage": np.dtype(storage).name, "machine": P.machine_line(P.machine_info(threads)),
              "command": "python benchmarks/bench_stages.py " + " ".join(argv or []),
              "paper_seconds": None if args.quick or "nytro" not in config.paper else config.paper["nytro"].time,
              "fits": []}
    split = P.holdout_split(data.X_train.shape[0], config.m, args.seed)
    parts = split.parts(data.X_train, data.y_train)
    centers = split.center_rows(data.X_train)
    report["n"], report["n_val"] = split.n_train, split.n_val
    probe = parts[0][:min(args.probe_rows, split.n_train)]
    for rep in range(args.reps):
        limits = machine_limits(threads, probe, centers, config.sigma, kernel_dtype, args.repeats, args.quick)
        fit = fit_once(config, parts, centers, (data.X_test, data.y_test), threads, options)
        fit["limits"] = limits
        report["rank"] = fit["rank"]
        report["knm_GB"] = split.n_train * fit["rank"] * np.dtype(storage).itemsize / 1e9
        fit["stages"] = stages_of(fit.pop("events"), fit["seconds"], split.n_train, fit["rank"] / config.m, limits)
        touch = fit["stages"]["K_nm: first touch"]
        fit["first_touch_GBps"] = report["knm_GB"] / touch if touch > 0 else float("inf")
        fit["bounds"] = stage_bounds(limits, split.n_train, split.n_val, config.m, fit["rank"], report["d"],
                                     fit["products"], storage)
        report["fits"].append(fit)
        print(f"rep {rep + 1}: {fit['seconds']:.2f} s, "
              + ", ".join(f"{k} {v:.2f}" for k, v in fit["stages"].items()), flush=True)
    write_report(args.out, "bench_stages", P.json_ready(report), format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
