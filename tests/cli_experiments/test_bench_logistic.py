"""benchmarks/bench_logistic.py on scikit-learn's bundled breast_cancer set (its --quick
run)."""
import json

import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_logistic")


def test_run_reports_every_method(bench, tmp_path):
    assert bench.main(["--quick", "--threads", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "logistic.json").read_text())
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "breast_cancer" and dataset["m"] == bench.BUNDLED["breast_cancer"]
    methods = [row["method"] for row in dataset["rows"]]
    assert methods == ["NytroLogisticClassifier nesterov", "NytroLogisticClassifier newton",
                       "Nystroem + LogisticRegressionCV", bench.FALKON, "NytroClassifier (squared) predict_proba"]
    for row in dataset["rows"]:
        assert 0 < row["test_log_loss"] < 0.5 and 0 <= row["test_error"] < 0.15 and row["fit_seconds"] > 0
    table = (tmp_path / "logistic.md").read_text()
    assert "| NytroLogisticClassifier nesterov |" in table and "Machine:" in table
    # the summary's column and the per-dataset row of the LogisticFalkon-style peer
    header = next(line for line in table.splitlines() if line.startswith("| dataset |"))
    assert f" {bench.FALKON} |" in header and f"| {bench.FALKON} |" in table
    (falkon,) = [row for row in dataset["rows"] if row["method"] == bench.FALKON]
    assert falkon["selected"].startswith("lambda=")
    assert (tmp_path / "command.txt").read_text().startswith("python benchmarks/bench_logistic.py")


def test_the_papers_sets_need_the_data_kit(bench, tmp_path, monkeypatch):
    monkeypatch.delenv("NYTRO_DATA", raising=False)
    with pytest.raises(SystemExit, match="NYTRO_DATA"):
        bench.main(["--datasets", "adult", "--data-dir", "", "--out", str(tmp_path)])


def test_the_papers_sets_have_the_protocols_sigma(bench):
    from nytro.experiments import protocol as P
    assert list(bench.PAPER) == ["adult", "ijcnn1", "covtype"] and set(bench.PAPER) <= set(P.CONFIGS)
