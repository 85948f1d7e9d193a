"""benchmarks/bench_defaults_auto.py in its quick mode, on scikit-learn's bundled wine set."""
import json

import numpy as np
import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_defaults_auto")


def test_calibration_error_of_perfect_and_overconfident_predictions(bench):
    y = np.array([0, 1, 1, 0])
    assert bench.calibration_error(np.eye(2)[y], y) == 0.0
    # every row predicted with confidence 0.9, half of them right
    wrong = np.array([[0.9, 0.1], [0.1, 0.9], [0.9, 0.1], [0.1, 0.9]])
    assert bench.calibration_error(wrong, np.array([0, 1, 1, 0])) == pytest.approx(0.4)


def test_quick_run_reports_every_row(bench, tmp_path):
    assert bench.main(["--quick", "--datasets", "wine", "--threads", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "defaults_auto.json").read_text())
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "wine" and dataset["task"] == "classification"
    for row in bench.ROWS:
        (fit,) = dataset["fits"][row]
        assert fit["seconds"] > 0 and 0 <= fit["error"] <= 1 and fit["log_loss"] > 0 and 0 <= fit["ece"] <= 1
    defaults = dataset["fits"]["defaults"][0]
    assert len(defaults["sigma_candidates"]) == len(defaults["sigma_scores"]) >= 5
    assert dataset["fits"]["grid"][0]["best_sigma"] in bench.QUICK_GRID
    assert dataset["vs_grid"]["grid"]["time"] == pytest.approx(1.0)
    assert "| wine |" in (tmp_path / "defaults_auto.md").read_text()


def test_unknown_datasets_and_seeds_are_refused(bench, tmp_path):
    with pytest.raises(SystemExit):
        bench.main(["--datasets", "iris", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.main(["--seeds", "0", "--out", str(tmp_path)])
