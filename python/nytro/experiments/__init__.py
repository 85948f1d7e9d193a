"""The paper's experiments, runnable from the installed package (`python -m nytro <name>`)
and from the scripts in benchmarks/. Each module exposes `add_arguments(parser)` and
`run(args) -> int`; COMMANDS maps a command name to its module."""
from __future__ import annotations

import importlib

COMMANDS = {
    "table2": ("nytro.experiments.table2", "Table 2: time and test RMSE of the five methods and peers"),
    "figure2": ("nytro.experiments.figure2", "Figure 2: training time against m on cpuSmall"),
    "figure1": ("nytro.experiments.figure1", "Figure 1: which method is fastest over (d~, SNR)"),
    "theorem1": ("nytro.experiments.theorem1", "Theorem 1: E R(NYTRO_t) <= c_t E R(NKRLS_1/(gamma t))"),
}


def load(command: str):
    """The module implementing `command`."""
    return importlib.import_module(COMMANDS[command][0])
