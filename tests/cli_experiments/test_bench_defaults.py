"""benchmarks/bench_defaults.py in its quick mode, on the shipped cpuSmall."""
import json

import numpy as np
import pytest

from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_defaults")


def test_iid_split_is_a_seeded_partition(bench):
    pool, test = bench.iid_split(101, 3)
    assert test.size == 20 and pool.size == 81
    assert np.array_equal(np.sort(np.concatenate([pool, test])), np.arange(101))
    again, _ = bench.iid_split(101, 3)
    other, _ = bench.iid_split(101, 4)
    assert np.array_equal(pool, again) and not np.array_equal(pool, other)


def test_quick_run_reports_every_row(bench, tmp_path):
    assert bench.main(["--quick", "--datasets", "cpusmall", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "defaults.json").read_text())
    (dataset,) = report["datasets"]
    assert dataset["dataset"] == "cpusmall" and dataset["m"] == 200
    for row in bench.ROWS:
        (fit,) = dataset["fits"][row]
        for key in ("seconds", "val_rmse", "iid_test_rmse", "official_test_rmse"):
            assert np.isfinite(fit[key]) and fit[key] > 0
    # The gap is the defaults' RMSE over NKRLS's, same seed.
    nkrls, defaults = dataset["fits"]["nkrls"][0], dataset["fits"]["defaults"][0]
    gap = dataset["vs_nkrls_percent"]["defaults"]["iid_test_rmse"]
    assert gap == pytest.approx(100 * (defaults["iid_test_rmse"] / nkrls["iid_test_rmse"] - 1))
    # Best of the path: GD to 500 on these 1600 rows fits worse than Tikhonov's best.
    assert dataset["fits"]["gd500"][0]["val_rmse"] > nkrls["val_rmse"]
    assert "| cpusmall |" in (tmp_path / "defaults.md").read_text()


def test_seeds_must_be_positive(bench, tmp_path):
    with pytest.raises(SystemExit):
        bench.main(["--seeds", "0", "--out", str(tmp_path)])
