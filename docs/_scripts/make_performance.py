"""Write docs/performance.md from the latest committed benchmark results.

Each claim's latest run lives in benchmarks/results/<claim>/ (see benchmarks/README.md);
this script copies its tables, its machine line and its command into one page, so the
page can never disagree with the files. Run by docs/conf.py at every build; also
usable alone: python docs/_scripts/make_performance.py benchmarks/results docs/performance.md
"""
from __future__ import annotations

import os
import re
import sys

# (claim folder, title, what the paper shows for it)
CLAIMS = [
    ("table2", "Table 2: NYTRO rows on Insurance, Adult and Ijcnn", "Table 2 of the paper (12-core times beside ours)"),
    ("table2_peers", "Table 2 with the peers in the same run: Insurance and Adult",
     "Table 2 (NKRLS and NYTRO rows); the peers are nytro.reference and scikit-learn"),
    ("table2_peers_ijcnn1", "Table 2 with the peers in the same run: Ijcnn", "Table 2, Ijcnn rows"),
    ("table2_covtype", "Table 2: Covertype, the authors' window rule", "Table 2, CovertypeBinary"),
    ("table2_large", "Table 2: the large datasets (Covertype, synthetic YearPrediction)", "Table 2, large rows"),
    ("figure2", "Figure 2: time against m on cpuSmall", "Figure 2 (time complexity comparison)"),
    ("figure1", "Figure 1: the regime map", "Figure 1"),
    ("theorem1", "Theorem 1: the excess-risk bound", "Theorem 1 / Proposition 2"),
    ("defaults", "Accuracy of the defaults", "(engineering; no figure in the paper)"),
    ("defaults_large", "Accuracy of the defaults on the large datasets", "(engineering)"),
    ("acceleration", "Acceleration: the nu-method and CG against GD", "(engineering)"),
    ("bench_kernels", "Kernel and fused pass against the machine's limits", "(engineering)"),
    ("bench_stages", "Covertype's stages against the machine's limits", "(engineering)"),
    ("bench_stages_float16", "Covertype's stages with float16 storage", "(engineering)"),
    ("bench_stages_ijcnn1", "Ijcnn's stages against the machine's limits", "(engineering)"),
    ("default_stages", "The default fit's stages at Ijcnn's shape, per solver, against GD-500 and the limits",
     "(engineering; issue 46)"),
    ("spectral", "The spectral solver's stages, with the BLAS pool as set and capped", "(engineering)"),
    ("bench_scaling", "OpenMP scaling on 2 cores", "(engineering)"),
    ("bench_scaling_16core", "OpenMP scaling on a lent 16-core machine", "(engineering)"),
    ("classifiers", "Classifiers on Adult, Ijcnn and Covertype, with scikit-learn's Nystroem peers",
     "(the paper reports RMSE; the authors' code also reports classification error)"),
    ("logistic", "The logistic loss, early stopped, against LogisticRegressionCV on Nystroem features",
     "(the paper has the squared loss only)"),
    ("auto", "solver='auto' against the fastest solver, native and with the AVX2 variant", "(engineering)"),
    ("centers", "Centres: uniform against leverage scores", "(the paper samples uniformly)"),
    ("dask", "Dask: overhead against in memory, out of core, and scale-out", "(engineering)"),
    ("gridsearch_jobs", "GridSearchCV's n_jobs over nytro on 2 cores", "(engineering)"),
    ("partial_fit", "partial_fit in batches against one call and SGD on random Fourier features", "(engineering)"),
    ("user_kernel", "A kernel of one's own against the built-in Gaussian and Nystroem", "(engineering)"),
    ("sparse", "Sparse X at a width where dense X does not fit", "(engineering)"),
]


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _demote(markdown: str, by: int = 1) -> str:
    """Shift a file's own headings below the page's section heading."""
    return re.sub(r"^(#{1,6}) ", lambda m: "#" * min(len(m.group(1)) + by, 6) + " ", markdown, flags=re.M)


def _section(results: str, claim: str, title: str, paper: str) -> list[str]:
    folder = os.path.join(results, claim)
    lines = [f"## {title}", "", f"Folder `benchmarks/results/{claim}/`; the paper: {paper}.", ""]
    machine = os.path.join(folder, "machine.txt")
    if os.path.exists(machine):
        lines += ["Machine: " + " ".join(_read(machine).split()), ""]
    commands = sorted(f for f in os.listdir(folder) if f.endswith("command.txt"))
    for name in commands:
        command = [ln for ln in _read(os.path.join(folder, name)).splitlines() if ln and not ln.startswith("#")]
        if command:
            lines += ["```bash", command[0], "```", ""]
    # With several tables at the top, each is headed by its file's name, as those in subfolders are.
    several = sum(f.endswith(".md") and f != "history.md" for f in os.listdir(folder)) > 1
    for root, _, files in sorted(os.walk(folder)):
        for name in sorted(files):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if name == "history.md":
                continue
            if name.endswith(".png"):
                lines += [f"![{claim}: {rel}](../benchmarks/results/{claim}/{rel})", ""]
            elif name.endswith(".md"):
                body = _read(path)
                body = re.sub(r"^# .*\n", "", body, count=1)  # the page has its own title
                if root != folder or several:
                    lines += [f"### `{rel}`", ""]
                lines += [_demote(body).strip(), ""]
    if os.path.exists(os.path.join(folder, "history.md")):
        lines += [f"Earlier runs: `benchmarks/results/{claim}/history.md`.", ""]
    return lines


def write(results: str, out: str) -> str:
    results = os.path.abspath(results)
    lines = ["# Performance", "",
             "This page is generated at every documentation build from the latest run of each claim",
             "committed under `benchmarks/results/` (by `docs/_scripts/make_performance.py`). Every table",
             "carries the machine that produced it; the paper's times come from 12 Xeon E5-2620 v2 cores",
             "and the authors' MATLAB code. How to rerun each claim: `benchmarks/README.md`; the history",
             "of these numbers: each claim's `history.md` ledger; the reasons behind the design and what",
             "was tried: [design](design.md).", ""]
    for claim, title, paper in CLAIMS:
        if os.path.isdir(os.path.join(results, claim)):
            lines += _section(results, claim, title, paper)
    text = "\n".join(lines).rstrip() + "\n"
    # Write only on change, so Sphinx does not rebuild the page needlessly.
    if not os.path.exists(out) or _read(out) != text:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return out


if __name__ == "__main__":
    write(*(sys.argv[1:3] if len(sys.argv) >= 3 else ("benchmarks/results", "docs/performance.md")))
