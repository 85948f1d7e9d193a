"""benchmarks/bench_default_stages.py: the cutting of a default fit's progress events into
stages, for the direct and the Gram solver, and its quick mode end to end."""
import json

import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_default_stages")


def test_direct_events_cut_into_stages(bench):
    # K_mm and its factor to 1 s, the kernels to 3 s, then products of 0.5 s each, a
    # stretch's hold-out work (1 s) after the second, and a tail of 0.25 s.
    events = [(0.5, "kernel", 5, 5), (1.0, "factor", 1, 1), (2.0, "kernel", 10, 10), (3.0, "kernel", 40, 40),
              (3.5, "lanczos", 1, 9), (4.0, "lanczos", 2, 9), (4.8, "iterate", 2, 9), (5.5, "lanczos", 3, 9),
              (6.0, "lanczos", 4, 9)]
    stages = bench.stages_of(events, 6.25)
    assert stages["factor"] == 1.0
    assert stages["kernels"] == pytest.approx(2.0)
    assert stages["gram"] == 0.0
    assert stages["products"] == pytest.approx(2.0)  # four products of 0.5 s
    assert stages["hold-out"] == pytest.approx(1.0 + 0.25)
    assert sum(stages.values()) == pytest.approx(6.25)


def test_gram_events_cut_into_stages(bench):
    # The hold-out kernel to 2 s, the Gram pass's blocks to 7 s, the path's start (0.1 s),
    # then products of 0.05 s.
    events = [(1.0, "factor", 1, 1), (2.0, "kernel", 10, 10), (4.0, "gram", 50, 100), (7.0, "gram", 100, 100),
              (7.15, "lanczos", 1, 9), (7.2, "lanczos", 2, 9), (7.25, "lanczos", 3, 9)]
    stages = bench.stages_of(events, 7.5)
    assert stages["kernels"] == pytest.approx(1.0)
    assert stages["gram"] == pytest.approx(5.0)
    assert stages["products"] == pytest.approx(0.15 + 0.1)  # three products and the start
    assert stages["hold-out"] == pytest.approx(0.25)
    assert sum(stages.values()) == pytest.approx(7.5)


def test_no_product_leaves_the_rest_to_the_hold_out(bench):
    stages = bench.stages_of([(1.0, "factor", 1, 1)], 3.0)
    assert stages["factor"] == 1.0 and stages["hold-out"] == pytest.approx(2.0)


def test_quick_mode_writes_its_report(bench, tmp_path):
    assert bench.main(["--quick", "--repeats", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "default_stages.json").read_text())
    rep = report["reps"][0]
    assert set(rep["fits"]) == {"gd500", "direct", "gram"}
    for solver in ("direct", "gram"):
        assert rep["fits"][solver]["solver"] == solver
        assert sum(rep["fits"][solver]["stages"].values()) == pytest.approx(rep["fits"][solver]["seconds"],
                                                                            rel=1e-9)
    assert (tmp_path / "default_stages.md").read_text().startswith("# Stages of the default fit")
