"""Builds of the core side by side on the paper's Table 2 protocol (NYTRO: gradient
descent, step 1/lambda_max, best of 500 iterations) on Insurance, Adult and Ijcnn: how far
the portable build's run-time dispatch is from a build compiled for the machine.

Each --config is LABEL=FOLDER[:ISA]: FOLDER holds a `nytro` package (sources and its
compiled _core), put first on PYTHONPATH; ISA, when given, is set as NYTRO_ISA (the
portable build's variant: baseline, avx2 or avx512). Every round runs each configuration
once, in a seeded random order, each in its own process (`python -m nytro table2
--methods nytro --no-peers --reps 1`), so that a drift of the machine's speed over
minutes falls on all of them alike. Reported per dataset: the median fit time of each
configuration over the rounds, its range, and the median over rounds of its time divided
by the first configuration's time in the same round.

    NYTRO_DATA=/path/to/data python benchmarks/bench_dispatch.py --rounds 7 \
        --config native=/tmp/native --config portable=/tmp/portable \
        --config portable-avx2=/tmp/portable:avx2 --out benchmarks/results/bench_dispatch
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def parse_config(text: str):
    label, _, rest = text.partition("=")
    if not label or not rest:
        raise argparse.ArgumentTypeError(f"--config: expected LABEL=FOLDER[:ISA], got {text!r}")
    folder, _, isa = rest.partition(":")
    if not os.path.isdir(os.path.join(folder, "nytro")):
        raise argparse.ArgumentTypeError(f"--config {label}: {folder} holds no nytro package")
    return label, os.path.abspath(folder), isa


def run_once(folder: str, isa: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=folder)
    env.pop("NYTRO_ISA", None)
    if isa:
        env["NYTRO_ISA"] = isa
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "nytro", "table2", "--datasets", args.datasets, "--methods", "nytro",
                   "--no-peers", "--reps", "1", "--out", out, "--no-progress"]
        if args.threads:
            command += ["--threads", str(args.threads)]
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "table2.json")) as f:
            result = json.load(f)
    config = subprocess.run([sys.executable, "-c", "import json, nytro; print(json.dumps(nytro._config.isa_info()))"],
                            env=env, check=True, capture_output=True, text=True).stdout
    times = {}
    for dataset in result["datasets"]:
        for record in dataset["records"]:
            if record["method"] == "nytro" and record["status"] == "ok":
                times[dataset["dataset"]] = {"time_s": record["time_s"], "test_rmse": record["test_rmse"],
                                             "param": record["param"]}
    return {"times": times, "isa": json.loads(config.strip().splitlines()[-1])["selected"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=parse_config, action="append", required=True,
                        help="LABEL=FOLDER[:ISA]; the first is the reference of the ratios")
    parser.add_argument("--datasets", default="insurance,adult,ijcnn1")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random order of each round")
    parser.add_argument("--out", default=None, help="folder for bench_dispatch.json")
    args = parser.parse_args(argv)
    order_rng = random.Random(args.seed)
    runs = {label: [] for label, _, _ in args.config}
    isas = {}
    for round_index in range(args.rounds):
        order = list(args.config)
        order_rng.shuffle(order)
        for label, folder, isa in order:
            started = time.perf_counter()
            run = run_once(folder, isa, args)
            runs[label].append(run["times"])
            isas[label] = run["isa"]
            print(f"round {round_index + 1} {label} [{run['isa']}]: "
                  + ", ".join(f"{k} {v['time_s']:.3f} s" for k, v in run["times"].items())
                  + f" ({time.perf_counter() - started:.0f} s with loading)", flush=True)
    reference = args.config[0][0]
    summary = {}
    print(f"\nmedian fit time over {args.rounds} rounds (range); ratio = median of per-round time / {reference}'s")
    for dataset in runs[reference][0]:
        summary[dataset] = {}
        for label, _, _ in args.config:
            times = [r[dataset]["time_s"] for r in runs[label]]
            ratios = [r[dataset]["time_s"] / ref[dataset]["time_s"] for r, ref in zip(runs[label], runs[reference])]
            summary[dataset][label] = {"median_s": statistics.median(times), "min_s": min(times),
                                       "max_s": max(times), "median_ratio": statistics.median(ratios),
                                       "ratios": ratios, "times": times,
                                       "test_rmse": [r[dataset]["test_rmse"] for r in runs[label]],
                                       "t": [r[dataset]["param"] for r in runs[label]]}
            s = summary[dataset][label]
            print(f"  {dataset:10s} {label:22s} [{isas[label]:8s}] {s['median_s']:7.3f} s "
                  f"({s['min_s']:.3f}-{s['max_s']:.3f})  ratio {s['median_ratio']:.3f} "
                  f"(per round {min(ratios):.2f}-{max(ratios):.2f})")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_dispatch.json"), "w") as f:
            json.dump({"argv": sys.argv, "configs": [list(c) for c in args.config], "isa": isas,
                       "rounds": args.rounds, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
