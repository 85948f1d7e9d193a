"""benchmarks/bench_spectral.py: the cutting of a fit's progress events into stages, and its
quick mode end to end."""
import json

import pytest

from conftest import load_benchmark


bench = load_benchmark("bench_spectral")


def test_events_cut_into_stages():
    events = [(0.5, "factor"), (1.0, "gram"), (3.0, "gram"), (7.0, "eigendecomposition"), (7.5, "step_size"),
              (8.0, "iterate")]
    stages = bench.stages_of(events, 9.0)
    assert stages == pytest.approx({"factor": 0.5, "normal equations": 2.5, "eigendecomposition": 4.0,
                                    "set-up": 0.5, "path": 1.5})
    # The Gram solver reports no eigendecomposition: that stage takes 0 s, the others keep theirs.
    gram = bench.stages_of([(0.5, "factor"), (3.0, "gram"), (3.2, "step_size")], 4.0)
    assert gram == pytest.approx({"factor": 0.5, "normal equations": 2.5, "eigendecomposition": 0.0,
                                  "set-up": 0.2, "path": 0.8})
    assert sum(gram.values()) == pytest.approx(4.0)


def test_quick_run_reports_every_variant(tmp_path):
    assert bench.main(["--quick", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "bench_spectral.json").read_text())
    (cell,) = report["cells"]
    assert cell["m"] == 200 and cell["n"] == 3000
    assert set(cell["median"]) == {f"{s}, {p}" for s, p in bench.VARIANTS}
    for name, med in cell["median"].items():
        assert set(med["stages"]) == set(bench.STAGES)
        assert sum(med["stages"].values()) == pytest.approx(med["seconds"])
        assert (med["stages"]["eigendecomposition"] > 0) == name.startswith("spectral")
    # The variants compute the same path: only the threads differ.
    assert max(cell["max_coef_difference"].values()) < 1e-8
    assert all(v > 0 for v in cell["reference_median"].values())
    assert "| reference |" in (tmp_path / "bench_spectral.md").read_text()
