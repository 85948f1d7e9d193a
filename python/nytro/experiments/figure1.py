"""Figure 1: which of KRLS, Early Stopping, NKRLS and NYTRO reaches the accuracy of KRLS at
lambda* = 1/(n SNR) fastest, over the problem space (SNR, d~) (log axes).

Each method's time is the Discussion's complexity with constants 1 (nytro.theory.
complexity_times): KRLS n^3, Early Stopping n^3 SNR, NKRLS n m^2, NYTRO n m t* with
m = d~ log(n^2 SNR) and t* = n SNR. Problems with d~ > min(n, 1/lambda*) = min(n, n SNR)
do not exist and are left blank. The default n = 1e6 is a large-scale setting (the size
of the paper's largest datasets, ~5e5 points, rounded up); --n takes several values for
one panel each, e.g. --n 1e4 1e6 1e9 to see the NYTRO band widen and c1 flatten with n.

Writes figure1_regimes.png and figure1_regimes.json (grids, winners per cell, the area
share of each method, the boundary curves) to --out.

    python -m nytro figure1 --out results/            # or benchmarks/figure1_regimes.py
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from .. import theory

PNG = "figure1_regimes.png"
JSON = "figure1_regimes.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=".", help="folder for figure1_regimes.png/.json (default: .)")
    parser.add_argument("--quick", action="store_true", help="coarse grid (61 x 61 points)")
    parser.add_argument("--n", type=float, nargs="+", default=[1e6],
                        help="training set size(s), one panel each (default 1e6)")
    parser.add_argument("--snr-min", type=float, default=None, help="smallest SNR (default 0.1 / n)")
    parser.add_argument("--snr-max", type=float, default=1e3, help="largest SNR (default 1e3)")
    parser.add_argument("--d-min", type=float, default=1.0, help="smallest d~ (default 1; the largest is n)")
    parser.add_argument("--points", type=int, default=None,
                        help="grid points per axis (default 241, 61 with --quick)")


# The largest --n: the axes span d~ up to n and SNR down to 0.1 / n, and matplotlib's log
# ticks overflow between 1e250 and 1e280.
MOST_N = 1e200


def regime_panel(n, snr_min, snr_max, d_min, points):
    """The map for one n: dict with the grids, the winners and per-method area shares."""
    if not n >= 2:
        raise ValueError(f"n must be >= 2, got {n}")
    snr_min = 0.1 / n if snr_min is None else snr_min
    if not 0 < snr_min < snr_max:
        raise ValueError(f"need 0 < snr_min < snr_max, got {snr_min}, {snr_max}")
    if not 0 < d_min < n:
        raise ValueError(f"need 0 < d_min < n, got d_min={d_min}, n={n}")
    snr = np.logspace(np.log10(snr_min), np.log10(snr_max), points)
    d_tilde = np.logspace(np.log10(d_min), np.log10(n), points)
    winners = theory.regime_map(n, d_tilde, snr)
    feasible = ~np.isnan(winners)
    share = {name: float(np.mean(winners[feasible] == i)) for i, name in enumerate(theory.METHODS)}
    return {"n": n, "snr": snr, "d_tilde": d_tilde, "winners": winners, "share": share}


def _plot(panels, path):
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    cmap = ListedColormap([theory.METHOD_COLORS[name] for name in theory.METHODS])
    from ..plots import new_figure

    fig = new_figure(figsize=(6.4 * len(panels), 5.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        n, snr, d = panel["n"], panel["snr"], panel["d_tilde"]
        ax.set_facecolor("#eeeeee")
        ax.pcolormesh(snr, d, np.ma.masked_invalid(panel["winners"]), cmap=cmap, vmin=-0.5, vmax=3.5,
                      shading="nearest", rasterized=True)
        fine = np.logspace(np.log10(snr[0]), np.log10(snr[-1]), 400)
        curves = theory.regime_boundaries(n, fine)
        below_one = fine <= 1
        ax.plot(fine, curves["feasible"], color="k", lw=1.2, label="d~ = min(n, 1/lambda*)")
        c1 = np.minimum(curves["c1"], curves["feasible"])
        ax.plot(fine, c1, color="k", ls="--", lw=1, label="c1: m = n (d~ = n / log(n/lambda*))")
        c2 = np.where(below_one, np.minimum(curves["c2"], curves["c1"]), np.nan)
        ax.plot(fine, c2, color="k", ls=":", lw=1.2, label="c2: t* = m (d~ = 1/(lambda* log(n/lambda*)))")
        if snr[0] < 1 < snr[-1]:
            ax.plot([1, 1], [n / np.log(n * n), n], color="k", ls="-.", lw=1, label="SNR = 1: t* = n")
        ax.set(xscale="log", yscale="log", xlim=(snr[0], snr[-1]), ylim=(d[0], d[-1]),
               xlabel="SNR = ||f_opt||^2 / sigma^2", ylabel="d~ = d~(lambda*)", title=f"n = {n:.3g}")
        handles = [Patch(color=theory.METHOD_COLORS[name], label=f"{name} fastest") for name in theory.METHODS]
        handles.append(Patch(facecolor="#eeeeee", edgecolor="0.6", label="no problem: d~ > min(n, n SNR)"))
        line_handles, _ = ax.get_legend_handles_labels()
        ax.legend(handles=handles + line_handles, loc="lower right", fontsize=7, framealpha=0.9)
    fig.suptitle("Figure 1: the fastest method reaching KRLS's accuracy at lambda* = 1/(n SNR)\n"
                 "(the Discussion's times, constants 1)", fontsize=10)
    fig.savefig(path, dpi=130)
    return path


def _json_panel(panel):
    winners = ["".join("." if np.isnan(w) else str(int(w)) for w in row) for row in panel["winners"]]
    curves = theory.regime_boundaries(panel["n"], panel["snr"])
    return {"n": panel["n"], "snr": panel["snr"].tolist(), "d_tilde": panel["d_tilde"].tolist(),
            "winners": winners, "share_of_feasible_cells": panel["share"],
            "curves": {key: np.asarray(value).tolist() for key, value in curves.items()}}


def run(args) -> int:
    start = time.perf_counter()
    points = args.points if args.points is not None else (61 if args.quick else 241)
    if points < 2:
        raise ValueError(f"--points must be >= 2, got {points}")
    for n in args.n:
        # inf would be reported as a bad --snr-min (its default 0.1 / n is 0), and n of
        # 1e280 makes the plot's log ticks overflow (an OverflowError from matplotlib).
        if not 2 <= n <= MOST_N:
            raise ValueError(f"--n must be between 2 and {MOST_N:g}, got {n}")
    panels = [regime_panel(float(n), args.snr_min, args.snr_max, args.d_min, points) for n in args.n]
    os.makedirs(args.out, exist_ok=True)
    png = _plot(panels, os.path.join(args.out, PNG))
    record = {
        "what": "Figure 1 regime map: argmin over the Discussion's times (nytro.theory.complexity_times)",
        "methods": list(theory.METHODS),
        "colors": theory.METHOD_COLORS,
        "winners_encoding": "winners[i][j] (row i a string): the digit k of methods[k] for d_tilde[i], "
                            "snr[j]; '.' = infeasible (d~ > min(n, n SNR))",
        "times": {"KRLS": "n^3", "Early Stopping": "n^2 t* = n^3 SNR", "NKRLS": "n m^2",
                  "NYTRO": "n m t*", "m": "d~ log(n/lambda*) = d~ log(n^2 SNR)", "t*": "1/lambda* = n SNR"},
        "panels": [_json_panel(panel) for panel in panels],
    }
    json_path = os.path.join(args.out, JSON)
    with open(json_path, "w") as handle:
        json.dump(record, handle)
    for panel in panels:
        shares = ", ".join(f"{name} {share:.1%}" for name, share in panel["share"].items())
        print(f"n = {panel['n']:.3g}: share of feasible (log) grid cells: {shares}")
    print(f"wrote {png} and {json_path} in {time.perf_counter() - start:.1f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="figure1_regimes", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
