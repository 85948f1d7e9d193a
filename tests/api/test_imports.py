"""Importing nytro leaves other libraries' global state alone: no matplotlib backend is
selected and no pyplot figure is opened, even by the modules that draw plots."""
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")


def run_python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_nytro_loads_no_matplotlib():
    code = ("import sys, nytro, nytro.demo, nytro.plots, nytro.experiments.figure1, nytro.experiments.figure2, "
            "nytro.experiments.theorem1\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    assert run_python(code) == "[]"


def test_plots_keep_the_callers_backend_and_figures(tmp_path):
    # The caller picked the svg backend and has one pyplot figure open; drawing nytro's
    # plots must change neither (the old plots.py switched to Agg on import).
    code = f"""
import matplotlib
matplotlib.use("svg")
import matplotlib.pyplot as plt
plt.figure()
import numpy as np
import nytro.plots
class Path: pass
a, b = Path(), Path()
a.validation_rmse_, a.n_iter_ = np.linspace(1, 0.5, 10), 7
b.lambdas_, b.validation_rmse_, b.lambda_ = np.logspace(-6, 0, 5), np.linspace(0.6, 0.9, 5), 1e-6
nytro.plots.plot_validation_paths(a, b, {str(tmp_path / "paths.png")!r}, title="t")
print(matplotlib.get_backend(), len(plt.get_fignums()))
"""
    assert run_python(code).lower() == "svg 1"
    assert (tmp_path / "paths.png").stat().st_size > 0
