"""benchmarks/bench_stages.py: its quick mode end to end, and the cutting of a fit's
progress events into stages."""
import json

import numpy as np
import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_stages")


def test_events_cut_into_stages(bench):
    # factor at 2 s; products end at 10, 11, 12, 13 s (one product: 1 s); total 15 s.
    events = [(2.0, "factor"), (10.0, "step_size"), (11.0, "step_size"), (12.0, "lanczos"), (13.0, "lanczos"),
              (14.0, "iterate")]
    limits = {"kernel_probe_s": 0.5, "kernel_probe_rows": 100}
    stages = bench.stages_of(events, 15.0, 1000, 1.0, limits)
    assert stages["factor"] == 2.0
    assert stages["K_nm: kernel"] == pytest.approx(5.0)  # 0.5 s per 100 rows, 1000 rows
    assert stages["K_nm: K^T y"] == pytest.approx(1.0)
    assert stages["K_nm: first touch"] == pytest.approx(10.0 - 1.0 - 2.0 - 5.0 - 1.0)
    assert stages["products"] == pytest.approx(4.0)
    assert stages["validation"] == pytest.approx(2.0)
    assert sum(stages.values()) == pytest.approx(15.0)
    # No product reported: everything after the factor is validation.
    quiet = bench.stages_of([(2.0, "factor")], 3.0, 1000, 1.0, limits)
    assert quiet["validation"] == pytest.approx(1.0) and sum(quiet.values()) == pytest.approx(3.0)
    # A factor that keeps half the centres: K_nm's kernel has half the columns to compute.
    halved = bench.stages_of(events, 15.0, 1000, 0.5, limits)
    assert halved["K_nm: kernel"] == pytest.approx(2.5)
    assert sum(halved.values()) == pytest.approx(15.0)


def test_quick_run_reports_every_stage(bench, tmp_path):
    assert bench.main(["--quick", "--reps", "2", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_stages.json").read_text())
    assert report["m"] == 300 and report["n"] + report["n_val"] == 3000
    assert len(report["fits"]) == 2
    for fit in report["fits"]:
        assert set(fit["stages"]) == set(bench.STAGES)
        assert sum(fit["stages"].values()) == pytest.approx(fit["seconds"])
        assert fit["products"] > 0 and np.isfinite(fit["test_rmse"])
        for key in ("dgemm_gflops", "sgemm_gflops", "read_GBps", "kernel_probe_s"):
            assert fit["limits"][key] > 0
        assert fit["bounds"]["K_nm: first touch"] is None
        assert all(v > 0 for k, v in fit["bounds"].items() if k != "K_nm: first touch")
    assert "| products |" in (tmp_path / "bench_stages.md").read_text()


def test_quick_run_in_float16_storage(bench, tmp_path):
    assert bench.main(["--quick", "--reps", "1", "--storage", "float16", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_stages.json").read_text())
    assert report["storage"] == "float16" and 0 < report["rank"] <= report["m"]
    assert report["knm_GB"] == pytest.approx(report["n"] * report["rank"] * 2 / 1e9)
    assert np.isfinite(report["fits"][0]["test_rmse"])


def test_reps_must_be_positive(bench, tmp_path):
    with pytest.raises(SystemExit):
        bench.main(["--reps", "0", "--out", str(tmp_path)])
