"""Command line: `python -m nytro <command>` (also installed as `nytro`)."""
from __future__ import annotations

import argparse
import math
import os
import sys

from . import __version__
from ._checks import available_cores
from .experiments import COMMANDS, load


def _demo(args) -> int:
    from .demo import format_table, run_demo
    print(f"nytro {__version__}: NYTRO vs Nystrom KRLS on cpuSmall (6554 train / 1638 test, 20% hold-out), "
          f"{args.threads or available_cores()} threads")
    rows, figure = run_demo(n_centers=args.n_centers, sigma=args.sigma, max_iter=args.max_iter, seed=args.seed,
                            n_threads=args.threads, out=args.out, verbose=args.verbose)
    print(format_table(rows))
    print(f"validation paths written to {figure}")
    return 0


def _at_least(low: int):
    """An argparse type: an integer >= low, checked before any data set is read and
    reported under the flag's name."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value
    return parse


def _seed(text: str) -> int:
    value = _at_least(0)(text)
    if value >= 2**32:
        raise argparse.ArgumentTypeError(f"must be below 2**32, got {value}")
    return value


def _bandwidth(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


class _PrintAndExit(argparse.Action):
    """An option that prints something and exits, like --version (no command needed)."""

    def __init__(self, option_strings, dest, what, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.what = what

    def __call__(self, parser, namespace, values, option_string=None):
        from ._config import get_cmake_dir, get_include, show_config
        try:
            if self.what == "cmake_dir":
                print(get_cmake_dir())
            elif self.what == "includes":
                print(f"-I{get_include()}")
            else:
                show_config()
        except FileNotFoundError as error:
            parser.exit(2, f"nytro: error: {error}\n")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nytro", description="NYTRO: Nystrom subsampling meets early stopping.")
    parser.add_argument("--version", action="version", version=f"nytro {__version__}")
    parser.add_argument("--cmake-dir", action=_PrintAndExit, what="cmake_dir",
                        help="print the folder of nytroConfig.cmake (for -Dnytro_DIR) and exit")
    parser.add_argument("--includes", action=_PrintAndExit, what="includes",
                        help="print -I flags for nytro's headers and exit")
    parser.add_argument("--show-config", action=_PrintAndExit, what="config",
                        help="print which instruction-set variant of the core runs, and why, and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="fit NYTRO and NKRLS on cpuSmall and plot their validation paths")
    demo.add_argument("--n-centers", type=_at_least(1), default=1000, help="Nystrom centres m (default 1000)")
    demo.add_argument("--sigma", type=_bandwidth, default=1.0, help="Gaussian kernel bandwidth (default 1.0)")
    demo.add_argument("--max-iter", type=_at_least(1), default=500, help="NYTRO iterations at most (default 500)")
    demo.add_argument("--seed", type=_seed, default=0, help="hold-out split and centres (default 0)")
    demo.add_argument("--threads", type=_at_least(1), default=None,
                      help="threads (default: nytro.default_n_threads())")
    demo.add_argument("--out", default=".", help="folder for nytro_demo_paths.png (default: .)")
    demo.add_argument("--verbose", "-v", action="count", default=0, help="print progress")
    demo.set_defaults(run=_demo)
    for name, (module, help_text) in COMMANDS.items():
        try:
            experiment = load(name)
        except ModuleNotFoundError as missing:  # only an experiment module not written yet
            if missing.name != module:
                raise
            continue
        sub = commands.add_parser(name, help=help_text, description=help_text)
        experiment.add_arguments(sub)
        sub.set_defaults(run=experiment.run)
    return parser


def main(argv=None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader left (`python -m nytro --show-config | head -1`): no traceback for it,
        # and none again when the interpreter flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    # Every command writes into --out once its computation is done: a file there is
    # refused now, not after the whole run (the demo's fits, an experiment's grid).
    out = getattr(args, "out", None)
    if out is not None and os.path.exists(out) and not os.path.isdir(out):
        print(f"nytro {args.command}: error: argument --out: {out!r} exists and is not a folder", file=sys.stderr)
        return 2
    try:
        return args.run(args)
    except (ValueError, MemoryError, OSError) as error:  # OSError: --out or --data-dir unusable
        print(f"nytro {args.command}: error: {error}", file=sys.stderr)
        return 2
