"""Uniform against leverage-score centres on the paper's datasets (issue 29.3): test RMSE
and classification error against m, the m each selection needs to reach the same error,
and the selection's time against the fit's, in the same run.

The sibling of bench_centers.py (the uneven mixture, where leverage scores pay). Here the
data are the paper's (Insurance, Adult, Ijcnn, and Covertype subsampled to 50000 rows),
preprocessed and with the paper's sigma as in docs/protocol.md (nytro.datasets.load_dataset,
files from --data-dir or $NYTRO_DATA).

Per dataset and seed: a seeded 20% of the training file is set aside as an iid test set
(Ijcnn's official test file is not drawn from its training distribution, as
bench_defaults.py shows; Covertype's is the last rows of the file), and NytroRegressor's defaults (method
"hybrid", hold-out selection, random_state=seed) fit the other 80%. The centres are drawn
from the rows the estimator trains on (its own hold-out split, protocol.holdout_split,
excluded), timed alone, and passed with centers=, so the fit's time excludes the
selection; uniform and leverage centres see the same split. Reported per m and selection:
median, min and max over the seeds of the test RMSE (official test file and iid rows),
the classification error of sign(prediction) (labels are +-1), rank_, and the seconds.

m_to_reach: the smallest m of the grid at which each selection's median error is at or
below a target: uniform's at the largest m, and 1.01 x the best median of either.

    NYTRO_DATA=/path/to/data python benchmarks/bench_centers_paper.py --threads 1 \
        --out benchmarks/results/centers/paper      # about 20 minutes

--render DIR rewrites the tables and the figure from DIR/centers_paper.json (no fits).
Timings on a shared machine are indicative only: machine.txt records the load average.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import nytro
from nytro.experiments import protocol as P

from bench_centers import select  # a sibling script: benchmarks/ is on sys.path

SELECTIONS = ("uniform", "leverage")
GRIDS = {"insurance": [50, 100, 200, 400, 800, 1600],
         "adult": [50, 100, 200, 400, 800, 1600],
         "ijcnn1": [100, 200, 400, 800, 1600, 3200],
         "covtype": [100, 200, 400, 800, 1600]}
IID_TEST_FRACTION = 0.2
# (key in a row, label): the errors summarised, tabled and plotted.
ERRORS = (("rmse_official", "test RMSE (official test file)"),
          ("rmse_iid", "test RMSE (iid 20% of the training file)"),
          ("error_official", "classification error (official test file)"),
          ("error_iid", "classification error (iid 20%)"))
TOLERANCE = 1.01


def load(name, data_dir, max_train):
    """(X, y, X_test, y_test, sigma, description); a seeded subsample of max_train rows of
    a larger training file (None: all)."""
    config = P.dataset_config(name)
    data = P.load(config, data_dir)
    X, y, description = data.X_train, data.y_train, data.description
    if max_train is not None and max_train < X.shape[0]:
        rows = np.sort(np.random.default_rng(0).choice(X.shape[0], size=max_train, replace=False))
        X, y = X[rows], y[rows]
        description += f" [a seeded subsample of {max_train} training rows]"
    return X, y, data.X_test, data.y_test, config.sigma, description


def errors(prediction, y):
    return (float(np.sqrt(np.mean((prediction - y) ** 2))),
            float(np.mean(np.where(prediction >= 0, 1.0, -1.0) != y)))


def run_dataset(name, args):
    X_file, y_file, X_official, y_official, sigma, description = load(name, args.data_dir, args.max_train)
    print(f"{name}: {description}; sigma {sigma}", flush=True)
    grid = args.m or GRIDS[name]
    rows = []
    for seed in range(args.seeds):
        order = np.random.default_rng(seed).permutation(X_file.shape[0])
        n_iid = int(round(IID_TEST_FRACTION * X_file.shape[0]))
        pool, iid = np.sort(order[n_iid:]), np.sort(order[:n_iid])
        X, y = X_file[pool], y_file[pool]
        # The rows NytroRegressor(random_state=seed) trains on (it holds out the rest).
        X_train = X[P.holdout_split(X.shape[0], None, seed).train]
        for m in grid:
            for selection in SELECTIONS:
                idx, select_s = select(selection, X_train, m, sigma, 1000 + seed, args.threads)
                est = nytro.NytroRegressor(sigma=sigma, centers=X_train[idx], random_state=seed,
                                           n_threads=args.threads)
                start = time.perf_counter()
                est.fit(X, y)
                fit_s = time.perf_counter() - start
                rmse_official, error_official = errors(est.predict(X_official), y_official)
                rmse_iid, error_iid = errors(est.predict(X_file[iid]), y_file[iid])
                rows.append({"m": m, "selection": selection, "seed": seed, "rmse_official": rmse_official,
                             "rmse_iid": rmse_iid, "error_official": error_official, "error_iid": error_iid,
                             "select_seconds": select_s, "fit_seconds": fit_s, "n_iter": int(est.n_iter_),
                             "rank": int(est.rank_)})
                print(f"{name} m={m:5d} {selection:8s} seed={seed} rmse={rmse_official:.4f} iid={rmse_iid:.4f} "
                      f"err={error_official:.4f} select={select_s:.2f}s fit={fit_s:.2f}s rank={est.rank_}",
                      flush=True)
    return {"description": description, "sigma": sigma, "m": grid, "n_file": int(X_file.shape[0]),
            "n_fit": int(X_file.shape[0] - round(IID_TEST_FRACTION * X_file.shape[0])),
            "n_official_test": int(X_official.shape[0]), "rows": rows}


def summarise(result):
    """Per selection and m: median, min and max over seeds of each error and the medians
    of rank and seconds; and m_to_reach per error and target."""
    grid = result["m"]
    summary = {}
    for selection in SELECTIONS:
        summary[selection] = {}
        for m in grid:
            part = [r for r in result["rows"] if r["m"] == m and r["selection"] == selection]
            entry = {}
            for key in ("rmse_official", "rmse_iid", "error_official", "error_iid"):
                values = [r[key] for r in part]
                entry[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
            for key in ("rank", "select_seconds", "fit_seconds"):
                entry[key] = statistics.median(r[key] for r in part)
            summary[selection][m] = entry

    def median(selection, m, key):
        return summary[selection][m][key]["median"]

    def m_to_reach(selection, key, target):
        return next((m for m in grid if median(selection, m, key) <= target), None)

    reach = {}
    for key, _ in ERRORS:
        best = min(median(s, m, key) for s in SELECTIONS for m in grid)
        targets = {"uniform_at_largest_m": median("uniform", grid[-1], key),
                   f"{TOLERANCE}_x_best": TOLERANCE * best}
        reach[key] = {name: {"target": t, **{s: m_to_reach(s, key, t) for s in SELECTIONS}}
                      for name, t in targets.items()}
    return summary, reach


def markdown(name, result, summary, reach):
    grid = result["m"]
    lines = [f"### {name}: {result['description']}", "",
             f"sigma {result['sigma']}, {result['n_fit']} rows fitted (80% of the training file; the estimator "
             f"holds out 20% of them), {result['n_official_test']} official test rows; medians over "
             f"{len({r['seed'] for r in result['rows']})} seeds [min, max].", "",
             "| m | RMSE uniform | RMSE leverage | iid RMSE uniform | iid RMSE leverage | error uniform | "
             "error leverage | iid error uniform | iid error leverage | rank_ u / l | selection s | fit s u / l | "
             "selection / fit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(selection, m, key):
        e = summary[selection][m][key]
        return f"{e['median']:.4f} [{e['min']:.4f}, {e['max']:.4f}]"

    for m in grid:
        u, lv = summary["uniform"][m], summary["leverage"][m]
        lines.append(f"| {m} | {cell('uniform', m, 'rmse_official')} | {cell('leverage', m, 'rmse_official')} | "
                     f"{cell('uniform', m, 'rmse_iid')} | {cell('leverage', m, 'rmse_iid')} | "
                     f"{cell('uniform', m, 'error_official')} | {cell('leverage', m, 'error_official')} | "
                     f"{cell('uniform', m, 'error_iid')} | {cell('leverage', m, 'error_iid')} | "
                     f"{u['rank']:.0f} / {lv['rank']:.0f} | {lv['select_seconds']:.2f} | "
                     f"{u['fit_seconds']:.2f} / {lv['fit_seconds']:.2f} | "
                     f"{lv['select_seconds'] / lv['fit_seconds']:.2f} |")
    lines.append("")
    for key, label in ERRORS:
        for target_name, r in reach[key].items():
            lines.append(f"- {label}, target {target_name} = {r['target']:.4f}: uniform needs m = {r['uniform']}, "
                         f"leverage m = {r['leverage']} (None: not within the grid)")
    return "\n".join(lines) + "\n"


def plot(results, summaries, path):
    """One column per dataset; rows: the ERRORS, then seconds (median) against m. Lines:
    medians over seeds; bands: min to max."""
    import matplotlib
    matplotlib.use("Agg")  # a script: no display; nytro itself never touches matplotlib's state
    import matplotlib.pyplot as plt
    names = list(results)
    fig, axes = plt.subplots(len(ERRORS) + 1, len(names), figsize=(4.2 * len(names), 3.0 * (len(ERRORS) + 1)),
                             squeeze=False)
    for col, name in enumerate(names):
        grid, summary = results[name]["m"], summaries[name]
        for row, (key, label) in enumerate(ERRORS):
            ax = axes[row, col]
            for selection, marker in (("uniform", "o"), ("leverage", "s")):
                med = [summary[selection][m][key]["median"] for m in grid]
                low = [summary[selection][m][key]["min"] for m in grid]
                high = [summary[selection][m][key]["max"] for m in grid]
                line, = ax.plot(grid, med, marker=marker, label=selection)
                ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
            ax.set_ylabel(label, fontsize=8)
            if row == 0:
                ax.set_title(name)
        ax = axes[len(ERRORS), col]
        for selection, key, style in (("uniform", "fit_seconds", "o-"), ("leverage", "fit_seconds", "s-"),
                                      ("leverage", "select_seconds", "^--")):
            what = "fit" if key == "fit_seconds" else "selection"
            ax.plot(grid, [summary[selection][m][key] for m in grid], style, label=f"{selection} {what}")
        ax.set_yscale("log")
        ax.set_ylabel("seconds (median, 1 thread, loaded)", fontsize=8)
        for ax in axes[:, col]:
            ax.set_xscale("log")
            ax.set_xticks(grid, [str(m) for m in grid])
            ax.minorticks_off()
            ax.legend(fontsize=7)
        axes[-1, col].set_xlabel("centres m")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    from PIL import Image  # matplotlib's own dependency
    # 16 panels of flat colours: a 256-colour palette loses nothing visible and a third of the bytes.
    Image.open(buffer).convert("RGB").quantize(256).save(path, optimize=True)


def report(results, out):
    summaries, reaches, text = {}, {}, []
    for name, result in results.items():
        summaries[name], reaches[name] = summarise(result)
        text.append(markdown(name, result, summaries[name], reaches[name]))
    table = "\n".join(text)
    print(table)
    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "centers_paper.md").write_text(table)
    record = json.loads((out / "centers_paper.json").read_text()) if (out / "centers_paper.json").exists() else {}
    record["results"] = results
    record["summary"] = {n: {s: {str(m): v for m, v in per.items()} for s, per in summ.items()}
                         for n, summ in summaries.items()}
    record["m_to_reach"] = reaches
    (out / "centers_paper.json").write_text(json.dumps(record, indent=1))
    plot(results, summaries, out / "centers_paper.png")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="insurance,adult,ijcnn1,covtype")
    parser.add_argument("--data-dir", default=None, help="the data files (default: $NYTRO_DATA)")
    parser.add_argument("--m", type=int, nargs="+", default=None, help="one grid for every dataset "
                        "(default: a grid per dataset up to about the paper's m)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-train", type=int, default=50000, help="subsample a larger training file to this "
                        "many rows (seeded; of the paper's, only Covertype's is larger)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--render", type=Path, default=None, help="redraw DIR/centers_paper.json's tables and "
                        "figure (no fits)")
    args = parser.parse_args(argv)
    if args.render is not None:
        report(json.loads((args.render / "centers_paper.json").read_text())["results"], args.render)
        return 0
    names = [P.dataset_config(n).name for n in args.datasets.split(",")]
    results, loads = {}, {}
    with P.blas_threads(args.threads):  # the selection's Cholesky runs in NumPy's BLAS
        info = P.machine_info(args.threads)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "command.txt").write_text(
                (f"NYTRO_DATA={shlex.quote(os.environ['NYTRO_DATA'])} " if "NYTRO_DATA" in os.environ else "")
                + shlex.join(["python", "benchmarks/bench_centers_paper.py",
                               *(sys.argv[1:] if argv is None else argv)]) + "\n")
            (args.out / "centers_paper.json").write_text(json.dumps(
                {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                 "machine": info}, indent=1))
        for name in names:
            before = os.getloadavg()
            start = time.perf_counter()
            results[name] = run_dataset(name, args)
            results[name]["seconds"] = time.perf_counter() - start
            results[name]["load_average_before_after"] = [list(before), list(os.getloadavg())]
            loads[name] = (before, os.getloadavg())
            report(results, args.out)  # after each dataset: a partial run keeps what it finished
    if args.out is not None:
        lines = [P.machine_line(info) + "; shared machine, timings indicative only"]
        for name, (before, after) in loads.items():
            lines.append(f"{name}: {results[name]['seconds']:.0f} s, load average (1, 5, 15 min) before "
                         f"{' '.join(f'{x:.2f}' for x in before)}, after {' '.join(f'{x:.2f}' for x in after)}")
        (args.out / "machine.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
