"""Roofline report of nytro's two inner loops (issue: performance at the machine's limits).

1. Gaussian kernel K(X, Z): GFLOP/s counted as the distance GEMM (2 n m d), against the
   machine's dgemm/sgemm on the same shape (numpy X @ Z.T) and on a square 4096 GEMM, and
   against scikit-learn's rbf_kernel on the same inputs; d = 12, 22, 54, 90, 123. Both
   into a fresh array and into an existing one (out=), which is how the solvers use it.
   Then one row per kernel (Gaussian, Gaussian with a bandwidth per feature, Laplacian,
   Matern 3/2 and 5/2, linear) at d = 90 into an existing array, in the same rounds as the
   same-shape GEMM: what each kernel's function costs on top of the distance GEMM.
2. The direct solver's fused pass K^T (K a - y), with one column in a and with two (the Lanczos
   path's block products): bytes of K read per second against the
   read bandwidth (dot product of two 800 MB vectors, see docs/design.md, "The performance model").
3. The Gram solver's iteration H b over the lower triangle of H (k x k): bytes of the
   triangle read per second. At k = 2000 (Insurance) the triangle is 8-16 MB and is read
   from L3, so it can pass the memory read bandwidth; at 5000 (Ijcnn) it is 50-100 MB.
Both for float64 and float32 (and float32 storage with float64 compute), with 1 and 2
threads. Each figure is the median of `--repeats` runs, A and B interleaved. The ratios the
targets name (kernel against the square GEMM for d >= 64, the pass against the read
bandwidth) are also given as medians of per-round ratios, the anchor timed in the same
rounds: this VM's speed drifts by 10-30% over minutes, which moved the ratios to the
anchors measured once at the start by 10-15 points between runs. Run it alone on a
quiet machine: another process on the cores makes every number meaningless.

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


def interleaved_times(fns: dict, repeats: int, idle: float = 0.0) -> dict:
    """Seconds of each call of each function, running them in turn `repeats` times, in a
    new (seeded) random order each round, each call after `idle` seconds of sleep. On
    this VM a fresh result's pages cost less when the call just before has freed memory
    (the host takes freed pages back about 2 s later), so a fixed or rotated order, which
    keeps the same neighbours, favoured whoever followed the big allocators (X @ Z.T came
    after rbf_kernel's temporaries)."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up
    order = np.random.default_rng(0)
    names = list(fns)  # any hashable keys (tuples too)
    for _ in range(repeats):
        for name in (names[i] for i in order.permutation(len(names))):
            time.sleep(idle)
            start = time.perf_counter()
            fns[name]()
            times[name].append(time.perf_counter() - start)
    return times


def interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds of each function, running them in turn `repeats` times (A B A B...)."""
    return {name: statistics.median(t) for name, t in interleaved_times(fns, repeats).items()}


def median_ratio(numerators, denominators) -> float:
    """Median of the per-round ratios: on a VM whose speed drifts over minutes, a rate and
    the rate it is compared with are best taken back to back, round by round."""
    return statistics.median(a / b for a, b in zip(numerators, denominators))


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


def read_seconds(threads: int, a: np.ndarray, b: np.ndarray, repeats: int = 3) -> float:
    """Median seconds of `repeats` dot products of a and b: the read bandwidth's probe."""
    with threadpool_limits(threads, user_api="blas"):
        return median_seconds(lambda: np.dot(a, b), repeats)


def limits(threads: int, repeats: int, probe: tuple, square: int = 4096) -> dict:
    """dgemm/sgemm GFLOP/s (square x square) and read bandwidth (`probe`: two vectors for
    read_seconds), with `threads` BLAS threads."""
    rng = np.random.default_rng(0)
    out = {}
    with threadpool_limits(threads, user_api="blas"):
        for dt in (np.float64, np.float32):
            A = rng.standard_normal((square, square)).astype(dt)
            out[f"gemm_gflops_{np.dtype(dt).name}"] = 2 * square**3 / median_seconds(lambda: A @ A, repeats) / 1e9
    probe_bytes = probe[0].nbytes + probe[1].nbytes
    out["read_GBps"] = probe_bytes / read_seconds(threads, *probe, repeats=repeats) / 1e9
    return out


def kernel_rows(threads: int, repeats: int, n: int, m: int, square: int) -> list:
    """The kernel against the GEMMs and rbf_kernel; for d >= 64 (the target's range) the
    square GEMM runs in the same rounds, so its ratio is also taken round by round."""
    from sklearn.metrics.pairwise import rbf_kernel
    rng = np.random.default_rng(1)
    rows = []
    for dt in (np.float64, np.float32):
        S = rng.standard_normal((square, square)).astype(dt)
        for d in SHAPES_D:
            X = rng.uniform(-1, 1, (n, d)).astype(dt)
            Z = rng.uniform(-1, 1, (m, d)).astype(dt)
            sigma = np.sqrt(d) / 2
            K_out = np.ones((n, m), dtype=dt)  # touched once: no page faults in the timed calls
            G_out = np.ones((n, m), dtype=dt)
            fns = {
                "nytro": lambda: nytro.gaussian_kernel(X, Z, sigma, n_threads=threads),
                "nytro_out": lambda: nytro.gaussian_kernel(X, Z, sigma, n_threads=threads, out=K_out),
                "sklearn": lambda: rbf_kernel(X, Z, gamma=1 / (2 * sigma**2)),
                "gemm": lambda: X @ Z.T,
                "gemm_out": lambda: np.matmul(X, Z.T, out=G_out),
            }
            if d >= 64:
                fns["gemm_square"] = lambda: S @ S
            with threadpool_limits(threads, user_api="blas"):
                times = interleaved_times(fns, repeats)
            t = {name: statistics.median(v) for name, v in times.items()}
            flops = 2.0 * n * m * d
            row = {"dtype": np.dtype(dt).name, "threads": threads, "n": n, "m": m, "d": d,
                   "nytro_s": t["nytro"], "nytro_out_s": t["nytro_out"], "sklearn_s": t["sklearn"],
                   "gemm_s": t["gemm"], "gemm_out_s": t["gemm_out"],
                   "nytro_gflops": flops / t["nytro"] / 1e9, "nytro_out_gflops": flops / t["nytro_out"] / 1e9,
                   "gemm_gflops": flops / t["gemm"] / 1e9, "gemm_out_gflops": flops / t["gemm_out"] / 1e9,
                   "speedup_vs_sklearn": t["sklearn"] / t["nytro"],
                   "out_speedup_vs_sklearn": t["sklearn"] / t["nytro_out"]}
            if "gemm_square" in times:
                # rate ratio = (flops / t_out) / (square flops / t_square), round by round
                square_flops = 2.0 * square**3
                row["square"] = square
                row["gemm_square_gflops"] = square_flops / t["gemm_square"] / 1e9
                row["out_vs_square_interleaved"] = median_ratio(
                    [flops * ts for ts in times["gemm_square"]], [square_flops * to for to in times["nytro_out"]])
            rows.append(row)
    return rows


# (label, kernel_matrix arguments): one row each in the per-kernel table.
KERNEL_TYPES = (("gaussian", {"kernel": "gaussian"}), ("gaussian ARD", {"kernel": "gaussian", "ard": True}),
                ("laplacian", {"kernel": "laplacian"}), ("matern 3/2", {"kernel": "matern", "matern_nu": 1.5}),
                ("matern 5/2", {"kernel": "matern", "matern_nu": 2.5}), ("linear", {"kernel": "linear"}))


def kernel_type_rows(threads: int, repeats: int, n: int, m: int, d: int = 90) -> list:
    """Every kernel into an existing array, with the same-shape GEMM (out=) in the same
    rounds: GFLOP/s counted as the distance GEMM (2 n m d), and the time against the
    Gaussian's, round by round."""
    rng = np.random.default_rng(2)
    rows = []
    for dt in (np.float64, np.float32):
        X = rng.uniform(-1, 1, (n, d)).astype(dt)
        Z = rng.uniform(-1, 1, (m, d)).astype(dt)
        sigma = np.sqrt(d) / 2
        bandwidths = np.linspace(0.5, 1.5, d) * sigma
        K_out, G_out = np.ones((n, m), dtype=dt), np.ones((n, m), dtype=dt)

        def call(spec):
            spec = dict(spec)
            return lambda: nytro.kernel_matrix(X, Z, sigma=bandwidths if spec.pop("ard", False) else sigma,
                                               **spec, n_threads=threads, out=K_out)
        fns = {label: call(spec) for label, spec in KERNEL_TYPES}
        fns["gemm_out"] = lambda: np.matmul(X, Z.T, out=G_out)
        with threadpool_limits(threads, user_api="blas"):
            times = interleaved_times(fns, repeats)
        flops = 2.0 * n * m * d
        for label, _ in KERNEL_TYPES:
            t = statistics.median(times[label])
            rows.append({"dtype": np.dtype(dt).name, "threads": threads, "n": n, "m": m, "d": d, "kernel": label,
                         "seconds": t, "gflops": flops / t / 1e9,
                         "vs_gaussian": median_ratio(times[label], times["gaussian"]),
                         "vs_gemm_out": median_ratio(times["gemm_out"], times[label])})
    return rows


def cold_fresh_row(threads: int, rounds: int, n: int, m: int, d: int, idle: float) -> dict:
    """The fresh-array kernel after the VM has taken freed memory back: each call (nytro,
    the bare GEMM X @ Z.T, rbf_kernel; float64) follows `idle` seconds of
    sleep, past the guest's free-page reporting delay (2 s), so its result's pages are
    backed by the host anew, as for a first call in a process. The GEMM writes the same
    n x m result with none of the kernel's work, so sklearn / GEMM bounds what any kernel
    into a fresh array can reach against rbf_kernel here."""
    from sklearn.metrics.pairwise import rbf_kernel
    rng = np.random.default_rng(4)
    X, Z = rng.uniform(-1, 1, (n, d)), rng.uniform(-1, 1, (m, d))
    sigma = np.sqrt(d) / 2
    fns = {"nytro": lambda: nytro.gaussian_kernel(X, Z, sigma, n_threads=threads),
           "gemm": lambda: X @ Z.T,
           "sklearn": lambda: rbf_kernel(X, Z, gamma=1 / (2 * sigma**2))}
    with threadpool_limits(threads, user_api="blas"):
        t = {name: statistics.median(v) for name, v in interleaved_times(fns, rounds, idle).items()}
    return {"threads": threads, "n": n, "m": m, "d": d, "idle_s": idle, "rounds": rounds,
            "nytro_s": t["nytro"], "gemm_s": t["gemm"], "sklearn_s": t["sklearn"],
            "speedup_vs_sklearn": t["sklearn"] / t["nytro"], "gemm_speedup_vs_sklearn": t["sklearn"] / t["gemm"]}


def thread_scaling_rows(thread_counts: list, repeats: int, n: int, m: int, square: int) -> list:
    """The kernel (out=, d = 90 and 123) and the square GEMM of its dtype at every thread
    count, all in the same random-order rounds: the speedup over the first count is the
    median of the per-round ratios. Timed in separate phases, as the rows above are, the
    1- and 2-thread figures can sit minutes apart on a VM whose speed drifts (1.60x at
    d = 90 in the run at 0257734). The GEMM's own speedup is what the cores give."""
    rng = np.random.default_rng(5)
    rows = []
    for dt in (np.float64, np.float32):
        S = rng.standard_normal((square, square)).astype(dt)

        def gemm(t):
            with threadpool_limits(t, user_api="blas"):
                S @ S

        fns = {("gemm_square", None, t): (lambda t=t: gemm(t)) for t in thread_counts}
        for d in (90, 123):
            X = rng.uniform(-1, 1, (n, d)).astype(dt)
            Z = rng.uniform(-1, 1, (m, d)).astype(dt)
            K_out = np.ones((n, m), dtype=dt)
            for t in thread_counts:
                fns[("kernel_out", d, t)] = (lambda X=X, Z=Z, K_out=K_out, t=t, d=d:
                                            nytro.gaussian_kernel(X, Z, np.sqrt(d) / 2, n_threads=t, out=K_out))
        times = interleaved_times(fns, repeats)
        for (case, d, t), seconds in times.items():
            base = times[(case, d, thread_counts[0])]
            rows.append({"dtype": np.dtype(dt).name, "case": case, "d": d, "threads": t, "square": square,
                         "seconds": statistics.median(seconds), "speedup": median_ratio(base, seconds)})
    return rows


def pass_rows(threads: int, repeats: int, n: int, k: int, probe: tuple) -> list:
    """The fused pass for one right-hand column (CG, nu, stepwise GD) and two (the
    Lanczos path's block products, basis vector and step-size estimate together). Each of
    `repeats` rounds times 3 passes (their median, in C++) and then the read bandwidth
    (`probe`: two vectors for read_seconds), so the ratio is also taken round by round."""
    rng = np.random.default_rng(2)
    rows = []
    K64 = rng.uniform(0, 1, (n, k))
    K32 = K64.astype(np.float32)
    probe_bytes = probe[0].nbytes + probe[1].nbytes
    for q in (1, 2):
        a = rng.standard_normal((k, q))
        y = rng.standard_normal((n, q))
        cases = {
            "float64": (lambda: _core._fused_pass_seconds_float64(K64, a, y, threads, 3), K64.nbytes),
            "float32": (lambda: _core._fused_pass_seconds_float32(K32, a.astype(np.float32),
                                                                 y.astype(np.float32), threads, 3), K32.nbytes),
            "float32 storage, float64 compute": (
                lambda: _core._fused_pass_seconds_float64_from_float32(K32, a, y, threads, 3), K32.nbytes),
        }
        for name, (run, nbytes) in cases.items():
            passes, reads = [], []
            for _ in range(repeats):
                passes.append(run())
                reads.append(read_seconds(threads, *probe))
            seconds = statistics.median(passes)
            rows.append({"case": name, "threads": threads, "n": n, "k": k, "q": q, "seconds": seconds,
                         "GBps": nbytes / seconds / 1e9,
                         "read_GBps_interleaved": probe_bytes / statistics.median(reads) / 1e9,
                         "vs_read_interleaved": median_ratio([nbytes * r for r in reads],
                                                             [probe_bytes * p for p in passes])})
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
    parser.add_argument("--cold-idle", type=float, default=3.0,
                        help="seconds of sleep before each call of the cold fresh-array rows (default 3)")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 2 repeats (CI)")
    parser.add_argument("--kernel-types-only", action="store_true",
                        help="only the per-kernel table (a quick check of one kernel's speed)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.kernel_shape, args.pass_shape, args.gram_k = 2, "2000,300", "4000,500", "300"
        args.cold_idle = 0.0
    threads = [int(t) for t in args.threads.split(",")]
    n, m = (int(v) for v in args.kernel_shape.split(","))
    pn, pk = (int(v) for v in args.pass_shape.split(","))
    report = {"machine": machine(), "command": "python benchmarks/bench_kernels.py " + " ".join(argv or []),
              "limits": {}, "kernel": [], "cold_fresh": [], "thread_scaling": [], "fused_pass": [],
              "gram_pass": [], "kernel_types": []}
    square = 4096 if not args.quick else 256
    probe_length = 100_000_000 if not args.quick else 1_000_000  # 800 MB, as limits.py
    probe = (np.ones(probe_length), np.ones(probe_length))
    for t in threads:
        report["limits"][t] = limits(t, 3 if not args.quick else 1, probe)
        report["kernel_types"] += kernel_type_rows(t, args.repeats, n, m, 90 if not args.quick else 12)
        if args.kernel_types_only:
            continue
        report["kernel"] += kernel_rows(t, args.repeats, n, m, square)
        report["cold_fresh"].append(cold_fresh_row(t, args.repeats, n, m, 90 if not args.quick else 12,
                                                   args.cold_idle))
        report["fused_pass"] += pass_rows(t, args.repeats, pn, pk, probe)
        for k in (int(v) for v in args.gram_k.split(",")):
            report["gram_pass"] += gram_rows(t, args.repeats, k)
    if len(threads) > 1 and not args.kernel_types_only:
        report["thread_scaling"] = thread_scaling_rows(threads, args.repeats, n, m, square)
    write_report(args.out, "bench_kernels", report, format_report(report))
    return 0


def write_report(out_dir: str, stem: str, report: dict, text: str) -> None:
    """<stem>.json (the report) and <stem>.md (its text) in out_dir, and the text printed."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out_dir, f"{stem}.md"), "w") as f:
        f.write(text)
    print(text)


def format_report(report: dict) -> str:
    mach = report["machine"]
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores; BLAS {mach['blas']}", ""]
    for t, lim in report["limits"].items():
        lines.append(f"{t} thread(s): dgemm {lim['gemm_gflops_float64']:.0f} GFLOP/s, "
                     f"sgemm {lim['gemm_gflops_float32']:.0f} GFLOP/s, read {lim['read_GBps']:.1f} GB/s")
    lines += ["", "Kernel: a fresh n x m result (as rbf_kernel and X @ Z.T return), and written into an "
              "existing array (out=; numpy's matmul out= for the GEMM). The gap between the two is the "
              "operating system's first-touch page faults on the fresh result.", "",
              "For d >= 64 the square GEMM of the kernel's dtype (dgemm or sgemm) also runs in the "
              "kernel's rounds: 'same rounds' is the median of the per-round ratios, the figure that "
              "does not move with the machine's drift between the start and the row.", "",
              "| dtype | threads | d | nytro GFLOP/s fresh | out= | out= vs square GEMM: at start / same rounds | "
              "vs same-shape GEMM (fresh / out=) | vs sklearn rbf_kernel (fresh / out=) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report["kernel"]:
        peak = report["limits"][r["threads"]][f"gemm_gflops_{r['dtype']}"]
        same_rounds = f"{r['out_vs_square_interleaved']:.0%}" if "out_vs_square_interleaved" in r else "-"
        lines.append(f"| {r['dtype']} | {r['threads']} | {r['d']} | {r['nytro_gflops']:.1f} | "
                     f"{r['nytro_out_gflops']:.1f} | {r['nytro_out_gflops'] / peak:.0%} / {same_rounds} | "
                     f"{r['nytro_gflops'] / r['gemm_gflops']:.0%} / "
                     f"{r['nytro_out_gflops'] / r['gemm_out_gflops']:.0%} | "
                     f"{r['speedup_vs_sklearn']:.1f}x / {r['out_speedup_vs_sklearn']:.1f}x |")
    if report.get("kernel_types"):
        lines += ["", "Each kernel into an existing array (d as given), in the same rounds as the same-shape "
                  "GEMM into an existing array; ratios are medians of per-round ratios.", "",
                  "| dtype | threads | n x m | d | kernel | ms | GFLOP/s | time vs Gaussian | rate vs GEMM out= |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in report["kernel_types"]:
            lines.append(f"| {r['dtype']} | {r['threads']} | {r['n']} x {r['m']} | {r['d']} | {r['kernel']} | "
                         f"{r['seconds'] * 1e3:.1f} | {r['gflops']:.1f} | {r['vs_gaussian']:.2f}x | "
                         f"{r['vs_gemm_out']:.0%} |")
    if report.get("cold_fresh"):
        lines += ["", "Cold fresh arrays (float64): each call follows a sleep past the VM's free-page reporting "
                  "delay, so the result's pages are backed anew, as for a first call. X @ Z.T writes the "
                  "same result with none of the kernel's work: rbf_kernel / GEMM bounds any kernel's ratio here.",
                  "", "| threads | n x m | d | idle s | nytro ms | X @ Z.T ms | rbf_kernel ms | "
                  "sklearn / nytro | sklearn / X @ Z.T (the bound) |", "|---|---|---|---|---|---|---|---|---|"]
        for r in report["cold_fresh"]:
            lines.append(f"| {r['threads']} | {r['n']} x {r['m']} | {r['d']} | {r['idle_s']:.0f} | "
                         f"{r['nytro_s'] * 1e3:.0f} | {r['gemm_s'] * 1e3:.0f} | {r['sklearn_s'] * 1e3:.0f} | "
                         f"{r['speedup_vs_sklearn']:.2f}x | {r['gemm_speedup_vs_sklearn']:.2f}x |")
    if report.get("thread_scaling"):
        counts = sorted({r["threads"] for r in report["thread_scaling"]})
        lines += ["", f"Thread scaling: every thread count in the same random-order rounds; speedup over "
                  f"{counts[0]} thread(s) as the median of per-round ratios. The square GEMM's speedup is "
                  "what the cores give.", "", "| dtype | case | d | threads | ms | speedup |",
                  "|---|---|---|---|---|---|"]
        for r in report["thread_scaling"]:
            case = "kernel out=" if r["case"] == "kernel_out" else f"square GEMM {r['square']}^2"
            lines.append(f"| {r['dtype']} | {case} | {r['d'] if r['d'] else '-'} | {r['threads']} | "
                         f"{r['seconds'] * 1e3:.1f} | {r['speedup']:.2f}x |")
    lines += ["", "Fused pass: each round times 3 passes, then the read bandwidth; 'same rounds' is the "
              "median of the per-round ratios.", "",
              "| fused pass K^T(K a - y) | threads | n x k | columns of a | ms | GB/s of K | "
              "vs read bandwidth: at start / same rounds |", "|---|---|---|---|---|---|---|"]
    for r in report["fused_pass"]:
        bw = report["limits"][r["threads"]]["read_GBps"]
        same_rounds = f"{r['vs_read_interleaved']:.0%}" if "vs_read_interleaved" in r else "-"
        lines.append(f"| {r['case']} | {r['threads']} | {r['n']} x {r['k']} | {r.get('q', 1)} | "
                     f"{r['seconds'] * 1e3:.2f} | {r['GBps']:.1f} | {r['GBps'] / bw:.0%} / {same_rounds} |")
    lines += ["", "| Gram iteration H b (lower triangle) | threads | k | ms | GB/s of the triangle | "
              "vs read bandwidth |", "|---|---|---|---|---|---|"]
    for r in report.get("gram_pass", []):
        bw = report["limits"][r["threads"]]["read_GBps"]
        lines.append(f"| {r['case']} | {r['threads']} | {r['k']} | {r['seconds'] * 1e3:.3f} | "
                     f"{r['GBps']:.1f} | {r['GBps'] / bw:.0%} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
