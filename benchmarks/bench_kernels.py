"""Roofline report of nytro's two inner loops (issue: performance at the machine's limits).

1. Gaussian kernel K(X, Z): GFLOP/s counted as the distance GEMM (2 n m d), against the
   machine's dgemm/sgemm on the same shape (numpy X @ Z.T) and on a square 4096 GEMM, and
   against scikit-learn's rbf_kernel on the same inputs; d = 12, 22, 54, 90, 123. Both
   into a fresh array and into an existing one (out=), which is how the solvers use it.
2. The direct solver's fused pass K^T (K a - y), with one column in a and with two (the Lanczos
   path's block products): bytes of K read per second against the
   read bandwidth (dot product of two 800 MB vectors, as ../shared/tools/limits.py).
3. The Gram solver's iteration H b over the lower triangle of H (k x k): bytes of the
   triangle read per second. At k = 2000 (Insurance) the triangle is 8-16 MB and is read
   from L3, so it can pass the memory read bandwidth; at 5000 (Ijcnn) it is 50-100 MB.
Both for float64 and float32 (and float32 storage with float64 compute), with 1 and 2
threads. Each figure is the median of `--repeats` runs, A and B interleaved. Run it alone
on a quiet machine: another process on the cores makes every number meaningless.

    python benchmarks/bench_kernels.py --out benchmarks/results/bench_kernels
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import nytro
from nytro import _core

SHAPES_D = (12, 22, 54, 90, 123)


def median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds of each function, running them in turn `repeats` times (A B A B...)."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def machine() -> dict:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "cores": nytro._checks.available_cores(), "platform": platform.platform(),
            "blas": [(i["internal_api"], i.get("architecture"), i["num_threads"]) for i in threadpool_info()],
            "nytro": nytro.__version__}


def limits(threads: int, repeats: int) -> dict:
    """dgemm/sgemm GFLOP/s (4096^2) and read bandwidth, with `threads` BLAS threads."""
    rng = np.random.default_rng(0)
    out = {}
    with threadpool_limits(threads, user_api="blas"):
        for dt in (np.float64, np.float32):
            A = rng.standard_normal((4096, 4096)).astype(dt)
            out[f"gemm_gflops_{np.dtype(dt).name}"] = 2 * 4096**3 / median_seconds(lambda: A @ A, repeats) / 1e9
        a = np.ones(100_000_000)
        b = np.ones_like(a)
        out["read_GBps"] = 2 * a.nbytes / median_seconds(lambda: np.dot(a, b), repeats) / 1e9
    return out


def kernel_rows(threads: int, repeats: int, n: int, m: int) -> list:
    from sklearn.metrics.pairwise import rbf_kernel
    rng = np.random.default_rng(1)
    rows = []
    for dt in (np.float64, np.float32):
        for d in SHAPES_D:
            X = rng.uniform(-1, 1, (n, d)).astype(dt)
            Z = rng.uniform(-1, 1, (m, d)).astype(dt)
            sigma = np.sqrt(d) / 2
            K_out = np.ones((n, m), dtype=dt)  # touched once: no page faults in the timed calls
            G_out = np.ones((n, m), dtype=dt)
            with threadpool_limits(threads, user_api="blas"):
                t = interleaved({
                    "nytro": lambda: nytro.gaussian_kernel(X, Z, sigma, n_threads=threads),
                    "nytro_out": lambda: nytro.gaussian_kernel(X, Z, sigma, n_threads=threads, out=K_out),
                    "sklearn": lambda: rbf_kernel(X, Z, gamma=1 / (2 * sigma**2)),
                    "gemm": lambda: X @ Z.T,
                    "gemm_out": lambda: np.matmul(X, Z.T, out=G_out),
                }, repeats)
            flops = 2.0 * n * m * d
            rows.append({"dtype": np.dtype(dt).name, "threads": threads, "n": n, "m": m, "d": d,
                         "nytro_s": t["nytro"], "nytro_out_s": t["nytro_out"], "sklearn_s": t["sklearn"],
                         "gemm_s": t["gemm"], "gemm_out_s": t["gemm_out"],
                         "nytro_gflops": flops / t["nytro"] / 1e9, "nytro_out_gflops": flops / t["nytro_out"] / 1e9,
                         "gemm_gflops": flops / t["gemm"] / 1e9, "gemm_out_gflops": flops / t["gemm_out"] / 1e9,
                         "speedup_vs_sklearn": t["sklearn"] / t["nytro"],
                         "out_speedup_vs_sklearn": t["sklearn"] / t["nytro_out"]})
    return rows


def pass_rows(threads: int, repeats: int, n: int, k: int) -> list:
    """The fused pass for one right-hand column (CG, nu, stepwise GD) and two (the
    Lanczos path's block products, basis vector and step-size estimate together)."""
    rng = np.random.default_rng(2)
    rows = []
    K64 = rng.uniform(0, 1, (n, k))
    K32 = K64.astype(np.float32)
    for q in (1, 2):
        a = rng.standard_normal((k, q))
        y = rng.standard_normal((n, q))
        cases = {
            "float64": (lambda: _core._fused_pass_seconds_float64(K64, a, y, threads, repeats), K64.nbytes),
            "float32": (lambda: _core._fused_pass_seconds_float32(K32, a.astype(np.float32),
                                                                 y.astype(np.float32), threads, repeats), K32.nbytes),
            "float32 storage, float64 compute": (
                lambda: _core._fused_pass_seconds_float64_from_float32(K32, a, y, threads, repeats), K32.nbytes),
        }
        for name, (run, nbytes) in cases.items():
            seconds = run()
            rows.append({"case": name, "threads": threads, "n": n, "k": k, "q": q, "seconds": seconds,
                         "GBps": nbytes / seconds / 1e9})
    return rows


def gram_rows(threads: int, repeats: int, k: int) -> list:
    rng = np.random.default_rng(3)
    H64 = rng.uniform(0, 1, (k, k))
    H32 = H64.astype(np.float32)
    b = rng.standard_normal((k, 1))
    triangle = k * (k + 1) / 2
    cases = {
        "float64": (lambda: _core._symmetric_pass_seconds_float64(H64, b, threads, repeats), 8),
        "float32": (lambda: _core._symmetric_pass_seconds_float32(H32, b.astype(np.float32), threads, repeats), 4),
        "float32 storage, float64 compute": (
            lambda: _core._symmetric_pass_seconds_float64_from_float32(H32, b, threads, repeats), 4),
    }
    rows = []
    for name, (run, itemsize) in cases.items():
        seconds = run()
        rows.append({"case": name, "threads": threads, "k": k, "seconds": seconds,
                     "GBps": triangle * itemsize / seconds / 1e9})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results/bench_kernels")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", default="1,2", help="thread counts to compare (default 1,2)")
    parser.add_argument("--kernel-shape", default="20000,2000", help="n,m of the kernel benchmark")
    parser.add_argument("--pass-shape", default="40000,5000", help="n,k of the fused pass (Ijcnn's)")
    parser.add_argument("--gram-k", default="2000,5000", help="k of the Gram iteration H b (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 repeats (CI)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.kernel_shape, args.pass_shape, args.gram_k = 2, "2000,300", "4000,500", "300"
    threads = [int(t) for t in args.threads.split(",")]
    n, m = (int(v) for v in args.kernel_shape.split(","))
    pn, pk = (int(v) for v in args.pass_shape.split(","))
    report = {"machine": machine(), "command": "python benchmarks/bench_kernels.py " + " ".join(argv or []),
              "limits": {}, "kernel": [], "fused_pass": [], "gram_pass": []}
    for t in threads:
        report["limits"][t] = limits(t, 3 if not args.quick else 1)
        report["kernel"] += kernel_rows(t, args.repeats, n, m)
        report["fused_pass"] += pass_rows(t, args.repeats, pn, pk)
        for k in (int(v) for v in args.gram_k.split(",")):
            report["gram_pass"] += gram_rows(t, args.repeats, k)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_kernels.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = format_report(report)
    with open(os.path.join(args.out, "bench_kernels.md"), "w") as f:
        f.write(text)
    print(text)
    return 0


def format_report(report: dict) -> str:
    mach = report["machine"]
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores; BLAS {mach['blas']}", ""]
    for t, lim in report["limits"].items():
        lines.append(f"{t} thread(s): dgemm {lim['gemm_gflops_float64']:.0f} GFLOP/s, "
                     f"sgemm {lim['gemm_gflops_float32']:.0f} GFLOP/s, read {lim['read_GBps']:.1f} GB/s")
    lines += ["", "Kernel: a fresh n x m result (as rbf_kernel and X @ Z.T return), and written into an "
              "existing array (out=; numpy's matmul out= for the GEMM). The gap between the two is the "
              "operating system's first-touch page faults on the fresh result.", "",
              "| dtype | threads | d | nytro GFLOP/s fresh | out= | out= vs dgemm(4096) | vs same-shape GEMM "
              "(fresh / out=) | vs sklearn rbf_kernel (fresh / out=) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report["kernel"]:
        peak = report["limits"][r["threads"]][f"gemm_gflops_{r['dtype']}"]
        lines.append(f"| {r['dtype']} | {r['threads']} | {r['d']} | {r['nytro_gflops']:.1f} | "
                     f"{r['nytro_out_gflops']:.1f} | {r['nytro_out_gflops'] / peak:.0%} | "
                     f"{r['nytro_gflops'] / r['gemm_gflops']:.0%} / {r['nytro_out_gflops'] / r['gemm_out_gflops']:.0%} | "
                     f"{r['speedup_vs_sklearn']:.1f}x / {r['out_speedup_vs_sklearn']:.1f}x |")
    lines += ["", "| fused pass K^T(K a - y) | threads | n x k | columns of a | ms | GB/s of K | vs read bandwidth |",
              "|---|---|---|---|---|---|---|"]
    for r in report["fused_pass"]:
        bw = report["limits"][r["threads"]]["read_GBps"]
        lines.append(f"| {r['case']} | {r['threads']} | {r['n']} x {r['k']} | {r.get('q', 1)} | "
                     f"{r['seconds'] * 1e3:.2f} | {r['GBps']:.1f} | {r['GBps'] / bw:.0%} |")
    lines += ["", "| Gram iteration H b (lower triangle) | threads | k | ms | GB/s of the triangle | "
              "vs read bandwidth |", "|---|---|---|---|---|---|"]
    for r in report.get("gram_pass", []):
        bw = report["limits"][r["threads"]]["read_GBps"]
        lines.append(f"| {r['case']} | {r['threads']} | {r['k']} | {r['seconds'] * 1e3:.3f} | "
                     f"{r['GBps']:.1f} | {r['GBps'] / bw:.0%} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
