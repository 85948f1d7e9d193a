"""OpenMP scaling of the core's stages, from one thread to all cores: each stage's speedup
over one thread, and its rate against the machine's limit measured at the same thread count.

The performance targets (benchmarks/results/table2/history.md, "Performance targets: where
they stand") ask for 2 threads at
>= 1.8x one thread on the kernel and the fused pass (bench_kernels.py measures that). This script follows
the same stages further, to as many cores as the machine has (the paper's own times are
on 12 cores):

  kernel f32 / f64   the Gaussian kernel of n rows against m centres (d columns) written
                     into an existing array (no page faults), GFLOP/s of its distance GEMM
                     (2 n m d) against sgemm / dgemm
  pass f64 / f32     the direct solver's fused pass K^T (K a - y), one column, over an
                     n x k K: GB/s of K against the read bandwidth
  factor             the pivoted Cholesky Nystrom factor of an m_f x m_f K_mm as a fit
                     makes it (U, not inverted: m_f^3 / 3 flops), GFLOP/s against dgemm
  update             one of the factor's updates of its trailing triangle, G -= B^T B with
                     B 128 x m_f (128 m_f^2 flops), against dgemm: what is left of the
                     factor beyond it is the panels' row-by-row work
The limits (dgemm and sgemm 4096^2 through numpy's BLAS, the read bandwidth as in
docs/design.md, "The performance model": the dot product of two 800 MB vectors) are measured at each
thread count in the same rounds. Every round runs every thread count in turn, so drift
over the run moves all of them alike; figures are medians over the rounds.

    python benchmarks/bench_scaling.py --threads 1,2,4,8,16 --out benchmarks/results/bench_scaling
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import nytro
from bench_kernels import limits, machine, write_report  # a sibling script: benchmarks/ is on sys.path
from nytro import _core

STAGES = ("kernel f32", "kernel f64", "pass f64", "pass f32", "factor", "update")
# The limit each stage's rate is set against, a key of bench_kernels.limits' result.
LIMIT_OF = {"kernel f32": "gemm_gflops_float32", "kernel f64": "gemm_gflops_float64",
            "pass f64": "read_GBps", "pass f32": "read_GBps", "factor": "gemm_gflops_float64",
            "update": "gemm_gflops_float64"}


class Problem:
    """The arrays every stage works on, allocated and written once."""

    def __init__(self, n: int, m: int, d: int, pass_n: int, pass_k: int, factor_m: int):
        rng = np.random.default_rng(0)
        self.X = rng.uniform(-1, 1, (n, d))
        self.Z = rng.uniform(-1, 1, (m, d))
        self.X32, self.Z32 = self.X.astype(np.float32), self.Z.astype(np.float32)
        self.sigma = np.sqrt(d) / 2
        self.K64 = np.ones((n, m))
        self.K32 = np.ones((n, m), dtype=np.float32)
        self.P64 = rng.uniform(0, 1, (pass_n, pass_k))
        self.P32 = self.P64.astype(np.float32)
        self.a = rng.standard_normal((pass_k, 1))
        self.y = rng.standard_normal((pass_n, 1))
        self.a32, self.y32 = self.a.astype(np.float32), self.y.astype(np.float32)
        centres = rng.uniform(-1, 1, (factor_m, d))
        self.K_mm = nytro.gaussian_kernel(centres, centres, self.sigma)
        self.B = self.K_mm[:128].copy()
        self.work = {  # units of work per stage: flops, or bytes read for the passes
            "kernel f32": 2.0 * n * m * d, "kernel f64": 2.0 * n * m * d,
            "pass f64": self.P64.nbytes, "pass f32": self.P32.nbytes, "factor": factor_m**3 / 3,
            "update": 128.0 * factor_m**2}

    def seconds(self, stage: str, threads: int) -> float:
        """One timing of `stage` on `threads` threads (the passes: the median of 3, in C++)."""
        if stage == "pass f64":
            return _core._fused_pass_seconds_float64(self.P64, self.a, self.y, threads, 3)
        if stage == "pass f32":
            return _core._fused_pass_seconds_float32(self.P32, self.a32, self.y32, threads, 3)
        if stage == "factor":
            return _core._factor_seconds_float64(self.K_mm, threads, 1)
        if stage == "update":
            return _core._rank_update_seconds_float64(self.B, threads, 1)
        start = time.perf_counter()
        if stage == "kernel f32":
            nytro.gaussian_kernel(self.X32, self.Z32, self.sigma, n_threads=threads, out=self.K32)
        else:
            nytro.gaussian_kernel(self.X, self.Z, self.sigma, n_threads=threads, out=self.K64)
        return time.perf_counter() - start


def measure(problem: Problem, stages: list, threads: list, rounds: int, square: int, probe: tuple) -> dict:
    """Per thread count: the median seconds of each of `stages` and each limit over
    `rounds` rounds, each round running every thread count in turn."""
    times = {t: {s: [] for s in stages} for t in threads}
    limit_runs = {t: [] for t in threads}
    for t in threads:  # warm-up: code paths, thread pools
        for stage in stages:
            problem.seconds(stage, t)
    for _ in range(rounds):
        for t in threads:
            limit_runs[t].append(limits(t, 1, probe, square=square))
            for stage in stages:
                times[t][stage].append(problem.seconds(stage, t))
    return {t: {"seconds": {s: statistics.median(v) for s, v in times[t].items()},
                "limits": {k: statistics.median(run[k] for run in limit_runs[t]) for k in limit_runs[t][0]}}
            for t in threads}


def scaling_rows(measured: dict, work: dict) -> list:
    """One row per stage and thread count: seconds, speedup over the fewest threads, rate
    (GFLOP/s or GB/s), and that rate against the stage's limit at the same thread count."""
    base = min(measured)
    rows = []
    for stage in measured[base]["seconds"]:
        for t, at in measured.items():
            seconds = at["seconds"][stage]
            rate = work[stage] / seconds / 1e9
            limit = at["limits"][LIMIT_OF[stage]]
            rows.append({"stage": stage, "threads": t, "seconds": seconds,
                         "speedup": measured[base]["seconds"][stage] / seconds, "rate": rate,
                         "limit": limit, "of_limit": rate / limit,
                         "unit": "GB/s" if LIMIT_OF[stage] == "read_GBps" else "GFLOP/s"})
    return rows


def format_report(report: dict) -> str:
    mach = report["machine"]
    base = min(int(t) for t in report["limits"])
    lines = [f"Machine: {mach['cpu']}, {mach['cores']} cores; BLAS {mach['blas']}",
             f"Command: {report['command']}", f"Shapes: {report['shapes']}", "",
             "| threads | dgemm GFLOP/s | sgemm GFLOP/s | read GB/s |", "|---|---|---|---|"]
    for t, lim in report["limits"].items():
        lines.append(f"| {t} | {lim['gemm_gflops_float64']:.0f} | {lim['gemm_gflops_float32']:.0f} | "
                     f"{lim['read_GBps']:.1f} |")
    lines += ["", f"Speedup is over {base} thread(s); 'of limit' is the rate against the limit at the same "
              "thread count (sgemm/dgemm for the kernels and the factor, read bandwidth for the passes).", "",
              "| stage | threads | s | speedup | rate | of limit |", "|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(f"| {r['stage']} | {r['threads']} | {r['seconds']:.3f} | {r['speedup']:.2f}x | "
                     f"{r['rate']:.1f} {r['unit']} | {r['of_limit']:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    cores = nytro._checks.available_cores()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts (default: 1, 2, 4, ... up to the cores, and the cores)")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, from {', '.join(STAGES)}")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each over every thread count (default 3)")
    parser.add_argument("--kernel-shape", default="40000,10000,54", help="n,m,d of the kernels (Covertype's d)")
    parser.add_argument("--pass-shape", default="40000,5000", help="n,k of the fused passes (Ijcnn's)")
    parser.add_argument("--factor-m", type=int, default=5000, help="m of the factor (default 5000)")
    parser.add_argument("--out", default="benchmarks/results/bench_scaling")
    parser.add_argument("--quick", action="store_true", help="tiny shapes, 1 round, 1 and 2 threads (CI)")
    args = parser.parse_args(argv)
    if args.quick:
        args.threads = args.threads or "1,2"
        args.rounds, args.kernel_shape, args.pass_shape, args.factor_m = 1, "2000,300,54", "4000,500", 300
    if args.threads is None:
        threads = sorted({*(2**i for i in range(cores.bit_length()) if 2**i <= cores), cores})
    else:
        threads = [int(t) for t in args.threads.split(",")]
    if args.rounds < 1 or not threads or min(threads) < 1:
        parser.error("--rounds and every --threads count must be >= 1")
    stages = args.stages.split(",")
    if unknown := sorted(set(stages) - set(STAGES)):
        parser.error(f"unknown --stages {unknown}: choose from {', '.join(STAGES)}")
    n, m, d = (int(v) for v in args.kernel_shape.split(","))
    pass_n, pass_k = (int(v) for v in args.pass_shape.split(","))
    problem = Problem(n, m, d, pass_n, pass_k, args.factor_m)
    square = 256 if args.quick else 4096
    probe_length = 1_000_000 if args.quick else 100_000_000  # 800 MB each, as limits.py
    measured = measure(problem, stages, threads, args.rounds, square, (np.ones(probe_length), np.ones(probe_length)))
    report = {"machine": machine(), "command": "python benchmarks/bench_scaling.py " + " ".join(argv or []),
              "shapes": {"kernel": [n, m, d], "pass": [pass_n, pass_k], "factor_m": args.factor_m},
              "rounds": args.rounds, "limits": {t: at["limits"] for t, at in measured.items()},
              "rows": scaling_rows(measured, problem.work)}
    write_report(args.out, "bench_scaling", report, format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
