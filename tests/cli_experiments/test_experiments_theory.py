"""The theory experiments (Figure 1's regime map, the main theorem's bound) run in quick mode
and write their PNG and JSON; the bound holds and is not trivially loose."""
from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from nytro import cli, theory
from nytro.experiments import figure1, theorem1

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == PNG_SIGNATURE


def test_figure1_quick(tmp_path):
    assert cli.main(["figure1", "--out", str(tmp_path), "--quick"]) == 0
    assert_png(tmp_path / figure1.PNG)
    record = json.loads((tmp_path / figure1.JSON).read_text())
    assert record["methods"] == list(theory.METHODS)
    (panel,) = record["panels"]
    assert panel["n"] == 1e6
    winners = np.array([[np.nan if w == "." else int(w) for w in row] for row in panel["winners"]])
    assert winners.shape == (len(panel["d_tilde"]), len(panel["snr"])) == (61, 61)
    assert set(np.unique(winners[~np.isnan(winners)])) == {0, 1, 2, 3}  # all four regions
    assert np.isnan(winners).any()
    assert sum(panel["share_of_feasible_cells"].values()) == pytest.approx(1)


def test_figure1_several_n(tmp_path, capsys):
    assert figure1.main(["--out", str(tmp_path), "--points", "21", "--n", "1e4", "1e8"]) == 0
    record = json.loads((tmp_path / figure1.JSON).read_text())
    assert [p["n"] for p in record["panels"]] == [1e4, 1e8]
    assert "n = 1e+08" in capsys.readouterr().out


def test_figure1_rejects_bad_range(tmp_path):
    assert cli.main(["figure1", "--out", str(tmp_path), "--snr-min", "10", "--snr-max", "1"]) == 2


@pytest.mark.parametrize("n", ["1e280", "inf", "1"])
def test_figure1_rejects_n_beyond_its_axes_by_name(tmp_path, capsys, n):
    # 1e280: an OverflowError traceback from matplotlib's log ticks; inf: a bad --snr-min.
    assert cli.main(["figure1", "--out", str(tmp_path), "--quick", "--n", n]) == 2
    assert "--n must be" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["demo"], ["figure1", "--quick"], ["figure2", "--quick"], ["table2", "--quick"],
                                     ["theorem1", "--quick"]])
def test_out_that_is_a_file_is_refused_before_running(tmp_path, capsys, command):
    # Each command made --out after its computation: a FileExistsError traceback at the end.
    existing = tmp_path / "a_file"
    existing.write_text("not a folder")
    assert cli.main([*command, "--out", str(existing)]) == 2
    assert "argument --out" in capsys.readouterr().err


@pytest.mark.parametrize("argv, flag", [
    (["--n-centers", "0"], "--n-centers"), (["--max-iter", "-1"], "--max-iter"), (["--threads", "0"], "--threads"),
    (["--sigma", "nan"], "--sigma"), (["--sigma", "-1"], "--sigma"), (["--seed", "-1"], "--seed"),
])
def test_demo_flags_are_refused_by_name_before_reading_data(argv, flag, capsys):
    # They were checked by the estimators once cpuSmall was read, and named by their
    # parameters (n_centers, n_threads, random_state).
    with pytest.raises(SystemExit) as exit_:
        cli.main(["demo", *argv])
    assert exit_.value.code == 2
    assert f"argument {flag}:" in capsys.readouterr().err


def test_theorem1_rejects_a_negative_seed_by_name(tmp_path, capsys):
    assert cli.main(["theorem1", "--quick", "--seed", "-1", "--out", str(tmp_path)]) == 2
    assert "--seed" in capsys.readouterr().err


def test_theorem1_quick(tmp_path):
    assert cli.main(["theorem1", "--out", str(tmp_path), "--quick"]) == 0
    assert_png(tmp_path / theorem1.PNG)
    record = json.loads((tmp_path / theorem1.JSON).read_text())
    assert record["parameters"]["n"] == 300
    for key in ("nystrom", "full"):
        summary = record[key]
        assert summary["holds"]
        assert 0.05 < summary["max_ratio_over_c_t"] <= 1
        assert summary["max_ratio_over_c_t_proof"] <= 1
    assert record["theorem2"]["holds"]
    assert record["norm_Z_over_n"] <= 1
    curves = record["curves"]["nystrom"]
    assert curves["t"][0] == 2 and curves["t"][-1] == pytest.approx(1e4)


def test_theorem1_bound_holds_and_can_fail():
    """On a small instance: ratio <= c_t everywhere, ratio / c_t > 0.05 somewhere, and the
    ratio exceeds 1 somewhere (NYTRO is not uniformly better: the constant is needed)."""
    X, mu, norm2, A = theorem1.make_problem(n=200, m=30, dim=2, sigma=0.3, bumps=5, seed=3)
    design = theory.SpectralDesign.from_factor(A, mu)
    t = theorem1.t_grid(1e4, 120)
    for noise_var in (0.01, 0.25, 4.0):
        result = theorem1.compare(design, t, noise_var)
        summary = theorem1.summarize(result)
        assert summary["holds"]
        assert summary["max_ratio_over_c_t"] > 0.05
        assert summary["max_ratio"] > 1
    assert norm2 > 0 and X.shape == (200, 2)


@pytest.mark.parametrize("script, out_file, argv", [
    ("figure1_regimes.py", figure1.PNG, ["--quick"]),
    ("theorem1.py", theorem1.PNG, ["--quick", "--no-full", "--t-points", "50"]),
])
def test_benchmark_scripts(tmp_path, monkeypatch, script, out_file, argv):
    monkeypatch.setattr(sys, "argv", [script, "--out", str(tmp_path), *argv])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert done.value.code == 0
    assert_png(tmp_path / out_file)
