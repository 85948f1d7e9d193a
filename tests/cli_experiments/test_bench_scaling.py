"""benchmarks/bench_scaling.py: its quick mode end to end, the speedups and rates it
derives, and the factor's timing hook."""
import json

import numpy as np
import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_scaling")


def test_rows_are_speedups_over_the_fewest_threads_and_rates_against_limits(bench):
    limits = {"gemm_gflops_float32": 100.0, "gemm_gflops_float64": 50.0, "read_GBps": 10.0}
    seconds_1 = {stage: 2.0 for stage in bench.STAGES}
    seconds_2 = {stage: 1.0 for stage in bench.STAGES}
    measured = {1: {"seconds": seconds_1, "limits": limits},
                2: {"seconds": seconds_2, "limits": {k: 2 * v for k, v in limits.items()}}}
    work = {stage: 40e9 for stage in bench.STAGES}
    rows = {(r["stage"], r["threads"]): r for r in bench.scaling_rows(measured, work)}
    assert len(rows) == 2 * len(bench.STAGES)
    assert rows[("factor", 1)]["speedup"] == 1.0 and rows[("factor", 2)]["speedup"] == 2.0
    assert rows[("pass f64", 2)]["rate"] == pytest.approx(40.0) and rows[("pass f64", 2)]["unit"] == "GB/s"
    assert rows[("pass f64", 2)]["of_limit"] == pytest.approx(2.0)       # 40 GB/s against 20
    assert rows[("kernel f32", 1)]["of_limit"] == pytest.approx(0.2)     # 20 GFLOP/s against sgemm's 100
    assert rows[("factor", 1)]["of_limit"] == pytest.approx(0.4)         # against dgemm's 50


def test_quick_run_reports_every_stage_at_every_thread_count(bench, tmp_path):
    assert bench.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_scaling.json").read_text())
    assert sorted(int(t) for t in report["limits"]) == [1, 2]
    assert {(r["stage"], r["threads"]) for r in report["rows"]} == {
        (s, t) for s in bench.STAGES for t in (1, 2)}
    assert all(r["seconds"] > 0 and np.isfinite(r["rate"]) for r in report["rows"])
    assert "| factor | 2 |" in (tmp_path / "bench_scaling.md").read_text()


def test_a_subset_of_stages(bench, tmp_path):
    assert bench.main(["--quick", "--stages", "factor,update", "--threads", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_scaling.json").read_text())
    assert [(r["stage"], r["threads"]) for r in report["rows"]] == [("factor", 1), ("update", 1)]


@pytest.mark.parametrize("option", [["--threads", "0,2"], ["--stages", "factor,gemm"], ["--rounds", "0"]])
def test_bad_options_are_refused(bench, tmp_path, option):
    with pytest.raises(SystemExit):
        bench.main([*option, "--out", str(tmp_path)])  # refused before any array is made


def test_factor_hooks_time_a_factor_and_an_update_and_reject_a_non_square_matrix():
    from nytro import _core
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((60, 3))
    K = np.exp(-0.5 * ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    assert _core._factor_seconds_float64(K, 1, 2) > 0
    assert _core._rank_update_seconds_float64(K[:8].copy(), 2, 2) > 0
    with pytest.raises(ValueError, match="square"):
        _core._factor_seconds_float64(K[:, :50], 1, 1)
