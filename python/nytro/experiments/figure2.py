"""Figure 2 of the paper: training + model-selection time against the number of centres m
on cpuSmall (shipped with the package), NYTRO against NKRLS.

    python -m nytro figure2 --out DIR [--quick] [--reps N] [--m-max M] [--threads N]

The paper: m from 100 to 4000 in steps of 100, 5 repetitions, 100 lambdas for NKRLS,
at most 500 iterations for NYTRO; "the time complexity grows linearly with m for NYTRO
and quadratically for NKRLS" (O(nmt + m^3) against O(nm^2 + m^3) per lambda). Curves:

  NYTRO            gradient descent, step 1/lambda_max, 500 iterations, best of the path,
                   nytro's default solver="auto" (on cpuSmall it forms A^T A once: O(nm^2 + tm^2))
  NYTRO (direct)   the same with solver="direct": K_nm stored and read at every iteration,
                   the paper's O(nmt + m^3) form
  NKRLS (paper)    solver="cholesky": one Cholesky solve of an m x m system per lambda,
                   the form the paper times
  NKRLS (eigh)     nytro's solver: one eigendecomposition serves all 100 lambdas

Each repetition draws a fresh 20% hold-out and fresh centres (the same for the three
curves at a given m and repetition). The growth exponent of each curve is the slope of a
least-squares line through (log m, log mean time) over the upper half of the m range
(m >= (m_min + m_max) / 2; the top two values of m when fewer), where fixed costs no
longer dominate; the slope over all m is also reported.

sigma: the paper does not give one for cpuSmall. Unless --sigma is given, it is chosen
before anything is timed as the value of SIGMA_GRID with the smallest NKRLS validation
RMSE at m = 1000 (m = the largest m with --quick) on the first repetition's hold-out
split; on the shipped cpuSmall this is 0.75.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from ..datasets import load_cpusmall
from ..estimators import NystromKRLSRegressor, NytroRegressor
from . import protocol as P

SIGMA_GRID = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
SIGMA_SELECTION_M = 1000
QUICK_M = (100, 200, 400)

CURVES = {
    "nytro": ("NYTRO, nytro's auto solver (gd, 500 it., best)", "tab:purple"),
    "nytro-direct": ("NYTRO, paper's O(nmt) form (solver=direct)", "tab:red"),
    "nkrls-chol": ("NKRLS, paper's form (Cholesky per λ, 100 λ)", "tab:orange"),
    "nkrls-eigh": ("NKRLS, nytro's eigh solver (100 λ)", "tab:green"),
}
PAPER_EXPONENT = {"nytro": 1.0, "nytro-direct": 1.0, "nkrls-chol": 2.0, "nkrls-eigh": 2.0}


def build(curve: str, m: int, sigma: float, max_iter: int, seed: int, threads: int):
    # The paper's model: its sigma and no intercept (not the estimators' defaults).
    common = dict(n_centers=m, sigma=sigma, random_state=seed, n_threads=threads, fit_intercept=False)
    if curve in ("nytro", "nytro-direct"):
        return NytroRegressor(method="gd", step_size="auto", max_iter=max_iter, stopping="best",
                              solver="direct" if curve == "nytro-direct" else "auto", **common)
    if curve == "nkrls-chol":
        return NystromKRLSRegressor(solver="cholesky", **common)
    if curve == "nkrls-eigh":
        return NystromKRLSRegressor(solver="eigh", **common)
    raise ValueError(curve)  # pragma: no cover


def choose_sigma(data, m: int, seed: int, threads: int, grid=SIGMA_GRID):
    """The sigma of `grid` with the smallest NKRLS hold-out RMSE at m centres, on the
    split of `seed`; returns (sigma, {sigma: validation RMSE})."""
    scores = {}
    for sigma in grid:
        model = NystromKRLSRegressor(m, sigma, random_state=seed, n_threads=threads, fit_intercept=False).fit(
            data.X_train, data.y_train)
        scores[float(sigma)] = float(np.min(model.validation_rmse_))
    return min(scores, key=scores.get), scores


def growth_exponent(ms, times):
    """Least-squares slope of log(time) on log(m) over the upper half of the m range
    (m >= (min + max) / 2, at least the top two points); returns (slope, m_from, m_to)."""
    ms, times = np.asarray(ms, dtype=float), np.asarray(times, dtype=float)
    ok = np.isfinite(times) & (times > 0)
    ms, times = ms[ok], times[ok]
    if ms.size < 2:
        return None, None, None
    upper = ms >= (ms.min() + ms.max()) / 2
    if upper.sum() < 2:
        upper = ms >= np.sort(ms)[-2]
    slope = np.polyfit(np.log(ms[upper]), np.log(times[upper]), 1)[0]
    return float(slope), float(ms[upper].min()), float(ms[upper].max())


def full_range_exponent(ms, times):
    ms, times = np.asarray(ms, dtype=float), np.asarray(times, dtype=float)
    ok = np.isfinite(times) & (times > 0)
    if ok.sum() < 2:
        return None
    return float(np.polyfit(np.log(ms[ok]), np.log(times[ok]), 1)[0])


def plot(result: dict, path: str) -> str:
    from ..plots import new_figure

    ms = np.asarray(result["m"], dtype=float)
    fig = new_figure(figsize=(12, 4.6), layout="constrained")
    lin, log = fig.subplots(1, 2)
    for curve, data in result["curves"].items():
        label, color = CURVES[curve]
        mean, std = np.asarray(data["time_mean"], float), np.asarray(data["time_std"], float)
        for ax in (lin, log):
            ax.plot(ms, mean, color=color, marker="o", ms=2.5, label=label)
            ax.fill_between(ms, mean - std, mean + std, color=color, alpha=0.25, lw=0)
        fit = data["exponent"]
        if fit["upper_half"] is not None:
            sel = (ms >= fit["m_from"]) & (ms <= fit["m_to"])
            coef = np.polyfit(np.log(ms[sel]), np.log(mean[sel]), 1)
            grid = np.linspace(fit["m_from"], fit["m_to"], 20)
            log.plot(grid, np.exp(np.polyval(coef, np.log(grid))), color=color, ls="--", lw=1,
                     label=f"slope {fit['upper_half']:.2f} over m ∈ [{fit['m_from']:.0f}, {fit['m_to']:.0f}]"
                           + ("" if fit.get("all_m") is None else f"; {fit['all_m']:.2f} over all m"))
    lin.set(xlabel="m (Nyström centres)", ylabel="training + model selection time (s)",
            title="cpuSmall: time vs m (mean ± std)")
    log.set(xscale="log", yscale="log", xlabel="m", ylabel="time (s)",
            title="log-log, fitted growth exponents")
    lin.legend(fontsize=8)
    log.legend(fontsize=7)
    info = result["machine"]
    fig.suptitle(f"σ = {result['sigma']:g}, n = {result['n_fit']} (+{result['n_val']} hold-out), "
                 f"{result['reps']} rep(s); {info['cpu_model']}, {info['threads_used']} threads", fontsize=9)
    fig.savefig(path, dpi=130)
    return path


def _command(args, ms) -> str:
    options = ["--reps", str(args.reps), "--m-min", str(ms[0]), "--m-max", str(args.m_max),
               "--m-step", str(args.m_step), "--max-iter", str(args.max_iter), "--threads", str(args.threads),
               "--seed", str(args.seed), "--curves", args.curves]
    if args.sigma is not None:
        options += ["--sigma", f"{args.sigma:g}"]
    if args.quick:
        options.append("--quick")
    options += ["--out", args.out]
    return P.command_line("figure2", options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="figure2_results", help="output folder (default: figure2_results)")
    parser.add_argument("--quick", action="store_true",
                        help=f"CI smoke run: m in {set(QUICK_M)}, 1 repetition")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 5; 1 with --quick)")
    parser.add_argument("--m-min", type=int, default=100, help="smallest m (default 100)")
    parser.add_argument("--m-max", type=int, default=4000, help="largest m (default 4000)")
    parser.add_argument("--m-step", type=int, default=100, help="step of m (default 100)")
    parser.add_argument("--max-iter", type=int, default=P.MAX_ITER, help="NYTRO iterations (default 500)")
    parser.add_argument("--sigma", type=float, default=None,
                        help="kernel bandwidth (default: chosen on the hold-out, see the module doc)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all available cores)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first repetition (default 0)")
    parser.add_argument("--curves", default=",".join(CURVES), help=f"comma-separated (default: {','.join(CURVES)})")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="tqdm progress bar on stderr (default: when stderr is a terminal)")


def run(args) -> int:
    args.threads = P.resolve_threads(args.threads)
    if args.reps is None:
        args.reps = 1 if args.quick else 5
    if args.reps < 1:
        raise ValueError(f"--reps must be >= 1, got {args.reps}")
    if args.quick:
        ms = list(QUICK_M)
        args.m_max = ms[-1]
    else:
        if args.m_min < 1 or args.m_step < 1 or args.m_max < args.m_min:
            raise ValueError("need 1 <= --m-min <= --m-max and --m-step >= 1")
        ms = list(range(args.m_min, args.m_max + 1, args.m_step))
    data = load_cpusmall()
    n_all = data.X_train.shape[0]
    n_val = int(round(P.VALIDATION_FRACTION * n_all))
    if ms[-1] > n_all - n_val:
        raise ValueError(f"--m-max {ms[-1]} exceeds the {n_all - n_val} training rows left after the hold-out")
    seeds = P.repetition_seeds(args.seed, args.reps)
    curves = [c.strip() for c in args.curves.split(",") if c.strip()]
    unknown = [c for c in curves if c not in CURVES]
    if unknown or not curves:
        raise ValueError(f"unknown curves {unknown}; known: {', '.join(CURVES)}")
    os.makedirs(args.out, exist_ok=True)
    command = _command(args, ms)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    started = time.perf_counter()
    with P.blas_threads(args.threads):
        info = P.machine_info(args.threads)
        print(f"Figure 2 on cpuSmall: m = {ms[0]}..{ms[-1]} ({len(ms)} values), {args.reps} repetition(s); "
              f"{P.machine_line(info)}", file=sys.stderr, flush=True)
        sigma_scores = None
        if args.sigma is None:
            m_select = min(SIGMA_SELECTION_M, ms[-1])
            sigma, sigma_scores = choose_sigma(data, m_select, seeds[0], args.threads)
            print(f"sigma = {sigma:g}: smallest NKRLS validation RMSE at m = {m_select} over {SIGMA_GRID} "
                  f"({', '.join(f'{s:g}: {v:.4f}' for s, v in sigma_scores.items())})", file=sys.stderr)
        else:
            sigma, m_select = float(args.sigma), None
        times = {c: np.full((len(ms), len(seeds)), np.nan) for c in curves}
        rmses = {c: np.full((len(ms), len(seeds)), np.nan) for c in curves}
        params = {c: np.full((len(ms), len(seeds)), np.nan) for c in curves}
        solvers = {c: [""] * len(ms) for c in curves}
        from tqdm.auto import tqdm
        with tqdm(total=len(ms) * len(seeds) * len(curves), desc="figure2", unit="fit", file=sys.stderr,
                  disable=not progress, dynamic_ncols=True) as bar:
            for i, m in enumerate(ms):
                for r, seed in enumerate(seeds):
                    for curve in curves:
                        bar.set_postfix_str(f"m={m} rep {r + 1} {curve}")
                        model = build(curve, m, sigma, args.max_iter, seed, args.threads)
                        with P.path_cut_expected(), P.Timer() as timer:
                            model.fit(data.X_train, data.y_train)
                        times[curve][i, r] = timer.seconds
                        rmses[curve][i, r] = P.rmse(model.predict(data.X_test), data.y_test)
                        nytro_curve = curve.startswith("nytro")
                        params[curve][i, r] = model.n_iter_ if nytro_curve else model.lambda_
                        solvers[curve][i] = model.solver_ if nytro_curve else model.solver
                        bar.update(1)
                line = "  ".join(f"{c} {np.mean(times[c][i]):.3f} s" for c in curves)
                if progress:
                    bar.write(f"m = {m}: {line}", file=sys.stderr)
                else:
                    print(f"m = {m}: {line}", file=sys.stderr, flush=True)
    result = {"experiment": "figure2", "quick": bool(args.quick), "command": command, "argv": sys.argv,
              "machine": info, "dataset": data.description, "n_train": int(n_all), "n_fit": int(n_all - n_val),
              "n_val": n_val, "n_test": int(data.X_test.shape[0]), "sigma": sigma,
              "sigma_selection": None if sigma_scores is None else {
                  "m": m_select, "seed": seeds[0], "grid": list(SIGMA_GRID),
                  "validation_rmse": {f"{k:g}": v for k, v in sigma_scores.items()},
                  "rule": "smallest NKRLS (eigh) hold-out RMSE"},
              "m": ms, "reps": args.reps, "seeds": seeds, "max_iter": args.max_iter, "n_lambdas": P.N_LAMBDAS,
              "wall_seconds": time.perf_counter() - started, "curves": {}}
    for curve in curves:
        label = CURVES[curve][0]
        mean = times[curve].mean(axis=1)
        slope, m_from, m_to = growth_exponent(ms, mean)
        result["curves"][curve] = {
            "label": label, "time_mean": mean, "time_std": times[curve].std(axis=1), "times": times[curve],
            "test_rmse_mean": rmses[curve].mean(axis=1), "param_mean": params[curve].mean(axis=1),
            "param_name": "t" if curve.startswith("nytro") else "lambda", "solver": solvers[curve],
            "exponent": {"upper_half": slope, "m_from": m_from, "m_to": m_to,
                         "all_m": full_range_exponent(ms, mean), "paper": PAPER_EXPONENT[curve],
                         "method": "least squares of log(mean time) on log(m)"}}
    figure = plot(result, os.path.join(args.out, "figure2_time_vs_m.png"))
    with open(os.path.join(args.out, "figure2.json"), "w") as f:
        json.dump(P.json_ready(result), f, indent=1, allow_nan=False)
    P.write_command(args.out, "figure2_command.txt", command)
    print(summary(result))
    print(f"\nwritten: {figure}, figure2.json, figure2_command.txt in {args.out} "
          f"({result['wall_seconds']:.1f} s)", file=sys.stderr)
    return 0


def summary(result: dict) -> str:
    ms = result["m"]
    shown = sorted({0, len(ms) // 4, len(ms) // 2, 3 * len(ms) // 4, len(ms) - 1})
    lines = [f"Figure 2 (cpuSmall, σ = {result['sigma']:g}, {result['reps']} rep(s), "
             f"{result['machine']['threads_used']} threads, {result['machine']['cpu_model']})", "",
             "| curve | " + " | ".join(f"m={ms[i]}" for i in shown)
             + " | exponent (upper half) | exponent (all m) | paper |",
             "|---|" + "---|" * len(shown) + "---|---|---|"]
    for curve, data in result["curves"].items():
        cells = [P.format_mean_std(data["time_mean"][i], data["time_std"][i], "time") for i in shown]
        e = data["exponent"]
        upper = "-" if e["upper_half"] is None else f"{e['upper_half']:.2f} (m {e['m_from']:.0f}..{e['m_to']:.0f})"
        full = "-" if e["all_m"] is None else f"{e['all_m']:.2f}"
        lines.append(f"| {data['label']} | " + " | ".join(cells) + f" | {upper} | {full} | {e['paper']:.0f} |")
    lines.append("")
    lines.append("Times in seconds (training + model selection), mean ± std over repetitions.")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nytro figure2", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, MemoryError, OSError) as error:
        print(f"figure2: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
