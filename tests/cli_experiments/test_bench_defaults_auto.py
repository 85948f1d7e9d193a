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
    # The error ratio is of the means over the seeds: defined wherever the grid errs at all.
    made = {row: np.mean([fit["error"] for fit in dataset["fits"][row]]) for row in ("defaults", "grid")}
    if made["grid"] > 0:
        assert dataset["vs_grid"]["defaults"]["error"] == pytest.approx(made["defaults"] / made["grid"])
    else:
        assert dataset["vs_grid"]["defaults"]["error"] is None  # NaN, written as null
    assert "| wine |" in (tmp_path / "defaults_auto.md").read_text()


def test_unknown_datasets_and_seeds_are_refused(bench, tmp_path):
    with pytest.raises(SystemExit):
        bench.main(["--datasets", "iris", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench.main(["--seeds", "0", "--out", str(tmp_path)])


def test_test_from_train_draws_the_test_rows_from_the_official_training_rows(bench):
    """--test-from-train: train and test are disjoint parts of the official training rows,
    stratified, and the official test rows are not read."""
    from types import SimpleNamespace
    rng = np.random.default_rng(0)
    X_tr, X_te = rng.normal(size=(400, 3)), np.full((50, 3), np.nan)
    y_tr = np.where(np.arange(400) < 40, 1.0, -1.0)  # 10% positives, sorted as files often are
    kit = SimpleNamespace(load_ijcnn1=lambda: (X_tr, y_tr, X_te, np.ones(50)))
    A, ya, B, yb = bench.paper_split(kit, "ijcnn1", 1000, 1000, test_from_train=0.25)
    assert len(B) == 100 and len(A) == 300 and np.isfinite(B).all()
    rows = {tuple(r) for r in X_tr}
    assert all(tuple(r) in rows for r in B) and not {tuple(r) for r in A} & {tuple(r) for r in B}
    assert np.mean(yb == 1) == pytest.approx(0.1) and np.mean(ya == 1) == pytest.approx(0.1)
    _, _, official, _ = bench.paper_split(kit, "ijcnn1", 1000, 1000)
    assert np.isnan(official).all()


def test_test_from_train_is_a_fraction(bench, tmp_path):
    for bad in ("0", "1", "1.5"):
        with pytest.raises(SystemExit):
            bench.main(["--quick", "--test-from-train", bad, "--out", str(tmp_path)])
