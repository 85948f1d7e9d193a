"""Write python/nytro/data/cpusmall.npz, the copy of cpuSmall shipped with the package.

Reads the LIBSVM `cpusmall` file (or the data kit's cpusmall/cpusmall.xz) through
nytro.datasets.load_dataset, so the arrays are preprocessed exactly as the loader does
(features per column to [0, 1], raw target, first 6554 rows train, last 1638 test).

    python benchmarks/make_cpusmall_npz.py /path/to/data
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from nytro.datasets import load_dataset

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "python" / "nytro" / "data" / "cpusmall.npz"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", help="directory holding cpusmall (or the data kit)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    parser.add_argument("--download", action="store_true",
                        help="fetch cpusmall from LIBSVM if missing (checksum-verified)")
    args = parser.parse_args(argv)
    ds = load_dataset("cpusmall", args.data_dir, download=args.download)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, X_train=ds.X_train, y_train=ds.y_train, X_test=ds.X_test,
                        y_test=ds.y_test)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes): X_train {ds.X_train.shape}, "
          f"X_test {ds.X_test.shape}")


if __name__ == "__main__":
    main()
