"""benchmarks/bench_centers_paper.py on a small synthetic stand-in for a dataset file (the
paper's files are not needed): where the centres are drawn from, what the report holds,
and the summary's medians, ranges and m_to_reach against a direct computation."""
import json

import numpy as np
import pytest

from conftest import load_benchmark
from nytro.experiments import protocol as P


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_centers_paper")


def two_blobs(n, seed):
    """+-1 labels of two overlapping Gaussian blobs in 3-d."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return rng.standard_normal((n, 3)) + 0.8 * y[:, None], y


def test_run_draws_centres_from_the_estimators_training_rows(bench, monkeypatch, tmp_path):
    X_file, y_file = two_blobs(500, 0)
    X_test, y_test = two_blobs(200, 1)
    monkeypatch.setattr(bench, "load", lambda name, data_dir, max_train: (X_file, y_file, X_test, y_test, 1.5,
                                                                          "two blobs"))
    seen = []
    select = bench.select

    def recording_select(selection, X, m, sigma, seed, threads):
        seen.append((selection, X.copy(), m))
        return select(selection, X, m, sigma, seed, threads)

    monkeypatch.setattr(bench, "select", recording_select)
    assert bench.main(["--datasets", "insurance", "--m", "10", "20", "--seeds", "2", "--out", str(tmp_path)]) == 0

    # Per seed: the iid 20% of the file is set aside, then the estimator's own hold-out
    # (protocol.holdout_split, as NytroRegressor(random_state=seed) draws it); both
    # selections see exactly the remaining training rows.
    assert len(seen) == 2 * 2 * 2
    for seed in range(2):
        order = np.random.default_rng(seed).permutation(500)
        pool = np.sort(order[100:])
        expected = X_file[pool][P.holdout_split(pool.size, None, seed).train]
        for selection, X, m in seen[4 * seed: 4 * seed + 4]:
            assert np.array_equal(X, expected)

    record = json.loads((tmp_path / "centers_paper.json").read_text())
    rows = record["results"]["insurance"]["rows"]
    assert len(rows) == 8 and {r["selection"] for r in rows} == {"uniform", "leverage"}
    for r in rows:
        assert 0 < r["rmse_official"] < 2 and 0 <= r["error_official"] <= 1 and r["rank"] <= r["m"]
        assert r["select_seconds"] >= 0 and r["fit_seconds"] > 0
    assert "| 20 |" in (tmp_path / "centers_paper.md").read_text()
    assert (tmp_path / "centers_paper.png").stat().st_size > 0
    assert "--seeds 2" in (tmp_path / "command.txt").read_text()
    assert "load average" in (tmp_path / "machine.txt").read_text()

    # --render rebuilds the same table from the JSON, without fitting.
    table = (tmp_path / "centers_paper.md").read_text()
    (tmp_path / "centers_paper.md").unlink()
    assert bench.main(["--render", str(tmp_path)]) == 0
    assert (tmp_path / "centers_paper.md").read_text() == table


def test_summary_against_a_direct_computation(bench):
    rng = np.random.default_rng(3)
    grid = [10, 20, 40]
    keys = ("rmse_official", "rmse_iid", "error_official", "error_iid")
    rows = [{"m": m, "selection": s, "seed": seed, **{k: float(rng.random()) for k in keys},
             "rank": m, "select_seconds": 0.1, "fit_seconds": 1.0}
            for m in grid for s in ("uniform", "leverage") for seed in range(5)]
    summary, reach = bench.summarise({"m": grid, "rows": rows})
    for s in ("uniform", "leverage"):
        for key in keys:
            values = np.array([[r[key] for r in rows if r["m"] == m and r["selection"] == s] for m in grid])
            got = summary[s]
            assert [got[m][key]["median"] for m in grid] == pytest.approx(np.median(values, axis=1))
            assert [got[m][key]["min"] for m in grid] == pytest.approx(values.min(axis=1))
            assert [got[m][key]["max"] for m in grid] == pytest.approx(values.max(axis=1))
    for key, _ in bench.ERRORS:
        medians = {s: np.array([summary[s][m][key]["median"] for m in grid]) for s in ("uniform", "leverage")}
        best = min(v.min() for v in medians.values())
        targets = {"uniform_at_largest_m": medians["uniform"][-1], f"{bench.TOLERANCE}_x_best": bench.TOLERANCE * best}
        for name, target in targets.items():
            assert reach[key][name]["target"] == pytest.approx(target)
            for s in ("uniform", "leverage"):
                hits = np.flatnonzero(medians[s] <= target)
                assert reach[key][name][s] == (grid[hits[0]] if hits.size else None)
