"""The paper-reproduction experiments: protocol helpers, and quick-mode runs of Table 2
(on InsuranceCompany, when NYTRO_DATA holds it) and Figure 2 (cpuSmall, shipped)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from nytro import NystromKRLSRegressor, NytroRegressor
from nytro.experiments import figure2, protocol, table2


# ------------------------------------------------------------------ protocol helpers
@pytest.mark.parametrize("n", [10, 101, 5822])
def test_holdout_split_sizes_and_disjointness(n):
    split = protocol.holdout_split(n, m=min(7, n - round(0.2 * n)), seed=3)
    assert split.n_val == round(0.2 * n)
    assert split.n_train + split.n_val == n
    together = np.concatenate([split.train, split.val])
    assert np.array_equal(np.sort(together), np.arange(n))
    assert split.centers.size == min(7, n - round(0.2 * n))
    assert np.unique(split.centers).size == split.centers.size
    assert split.centers.max() < split.n_train


def test_holdout_split_fresh_per_repetition_and_seeded():
    a, b = protocol.holdout_split(1000, 50, 0), protocol.holdout_split(1000, 50, 1)
    assert not np.array_equal(a.val, b.val)
    assert not np.array_equal(a.centers, b.centers)
    again = protocol.holdout_split(1000, 50, 0)
    assert np.array_equal(a.val, again.val) and np.array_equal(a.centers, again.centers)
    assert protocol.repetition_seeds(4, 3) == [4, 5, 6]


def test_holdout_split_errors():
    with pytest.raises(ValueError, match="m=90"):
        protocol.holdout_split(100, 90, 0)
    with pytest.raises(ValueError, match="empty"):
        protocol.holdout_split(2, None, 0)


@pytest.mark.parametrize("estimator", [NytroRegressor, NystromKRLSRegressor])
def test_holdout_split_is_the_estimators_split(estimator):
    """Table 2's peers rely on it: a seeded estimator draws the split's rows and centres."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((120, 3)), rng.standard_normal(120)
    split = protocol.holdout_split(120, 15, seed=11)
    kwargs = {"max_iter": 3} if estimator is NytroRegressor else {}
    model = estimator(n_centers=15, sigma=1.0, random_state=11, n_threads=1, **kwargs).fit(X, y)
    assert np.array_equal(model.centers_, split.center_rows(X))


def test_exact_method_memory_rule():
    n = 10_000
    kols = protocol.exact_method_bytes("kols", n)
    assert kols == 5 * n * n * 8
    assert protocol.exact_method_bytes("landweber", n, 2000) < protocol.exact_method_bytes("krls", n, 2000)
    assert protocol.exact_method_bytes("krls", n, 0, solver="cholesky") < protocol.exact_method_bytes("krls", n, 0)
    fits = protocol.exact_method_fits("kols", n, budget_bytes=kols)
    assert fits.fits
    no = protocol.exact_method_fits("kols", n, budget_bytes=kols - 1)
    assert not no.fits
    assert no.na_text().startswith("NA (4.0 GB >")
    assert protocol.default_memory_budget() > 0
    with pytest.raises(ValueError):
        protocol.exact_method_bytes("nytro", n)


def test_summaries_timer_and_json():
    assert protocol.mean_std([1.0, 3.0, None, float("nan")]) == (2.0, 1.0)
    assert protocol.mean_std([]) == (None, None)
    assert protocol.format_mean_std(491.0, 3.0, "int") == "491 ± 3"
    with protocol.Timer() as timer:
        sum(range(1000))
    assert 0 <= timer.seconds < 5
    assert protocol.rmse([1.0, 3.0], [1.0, 1.0]) == pytest.approx(np.sqrt(2.0))
    data = protocol.json_ready({"a": np.float64("nan"), "b": np.arange(2), "c": (np.int64(3), True)})
    assert json.loads(json.dumps(data, allow_nan=False)) == {"a": None, "b": [0, 1], "c": [3, True]}


def test_configs_match_reproduction_md():
    ins = protocol.dataset_config("insurance")
    assert (ins.m, ins.sigma, ins.window_tol) == (2000, 3.0, 0.000051)
    assert protocol.dataset_config("ijcnn").name == "ijcnn1"
    syn = protocol.dataset_config("yearprediction-synthetic")
    assert syn.synthetic and "SYNTHETIC" in syn.label and syn.m == 10000
    assert protocol.PAPER_TABLE2["covtype"]["nytro"].time == 92.69
    with pytest.raises(ValueError, match="unknown dataset"):
        protocol.dataset_config("mnist")


def test_machine_info():
    with protocol.blas_threads(1):
        info = protocol.machine_info(1)
    assert info["threads_used"] == 1 and info["cpu_model"] and info["available_cores"] >= 1
    assert isinstance(info["threadpools"], list)
    assert "threads used" in protocol.machine_line(info)


# ------------------------------------------------------------------ quick runs
def _insurance_available() -> bool:
    folder = os.environ.get("NYTRO_DATA")
    return bool(folder) and os.path.isdir(os.path.join(folder, "insurance_coil2000"))


@pytest.mark.skipif(not _insurance_available(), reason="NYTRO_DATA does not hold insurance_coil2000")
def test_table2_quick_on_insurance(tmp_path, capsys):
    out = tmp_path / "t2"
    code = table2.main(["--datasets", "insurance", "--quick", "--threads", "1", "--out", str(out),
                        "--no-progress"])
    assert code == 0
    for name in ("table2.json", "table2.md", "table2_command.txt"):
        assert (out / name).is_file(), name
    result = json.loads((out / "table2.json").read_text())
    assert result["quick"] and result["machine"]["threads_used"] == 1 and result["machine"]["cpu_model"]
    (ds,) = result["datasets"]
    assert ds["dataset"] == "insurance" and ds["m"] == table2.QUICK["m"] and ds["n_train"] == table2.QUICK["n_train"]
    methods = {r["method"] for r in ds["records"]}
    assert set(table2.DEFAULT_METHODS) <= methods
    assert {"nytro:reference-nytro", "nkrls:reference-nkrls", "nkrls:sklearn-ridge",
            "nkrls:sklearn-ridgecv"} <= methods
    by_method = {r["method"]: r for r in ds["records"]}
    for record in ds["records"]:
        assert record["status"] == "ok", record
        assert record["time_s"] > 0 and 0 < record["test_rmse"] < 2
    # Same split, same centres: the reference follows nytro's iterates and lambda choice.
    assert by_method["nytro:reference-nytro"]["param"] == by_method["nytro"]["param"]
    assert by_method["nytro:reference-nytro"]["test_rmse"] == pytest.approx(by_method["nytro"]["test_rmse"], rel=1e-6)
    assert by_method["nkrls:reference-nkrls"]["param"] == by_method["nkrls"]["param"]
    assert by_method["nkrls:sklearn-ridge"]["test_rmse"] == pytest.approx(by_method["nkrls"]["test_rmse"], rel=1e-2)
    assert by_method["nkrls:sklearn-ridge"]["ratio_to_nytro"] > 0
    assert by_method["nytro-window"]["param"] <= table2.QUICK["max_iter"]
    summary = {row["method"]: row for row in ds["summary"]}
    assert summary["nytro"]["reps_ok"] == 1 and summary["nytro"]["time_s"] > 0
    assert summary["nkrls:sklearn-ridge"]["ratio_of_means"] > 0
    table = (out / "table2.md").read_text()
    assert "| method |" in table and "paper time (s)" in table and "5.49 ± 0.12" in table
    assert "threads used" in table
    command = (out / "table2_command.txt").read_text()
    assert "python -m nytro table2" in command and "--quick" in command
    assert "NYTRO" in capsys.readouterr().out


@pytest.mark.skipif(not _insurance_available(), reason="NYTRO_DATA does not hold insurance_coil2000")
def test_table2_exact_methods_na_under_a_small_memory_budget(tmp_path):
    out = tmp_path / "na"
    code = table2.main(["--datasets", "insurance", "--quick", "--threads", "1", "--out", str(out), "--no-progress",
                        "--methods", "kols,landweber,nytro", "--no-peers", "--memory-budget-gb", "0.004"])
    assert code == 0
    records = {r["method"]: r for r in json.loads((out / "table2.json").read_text())["datasets"][0]["records"]}
    assert records["kols"]["status"] == "NA" and records["kols"]["note"].startswith("NA (")
    assert records["landweber"]["status"] == "NA"
    assert records["nytro"]["status"] == "ok"
    assert "NA (" in (out / "table2.md").read_text()


@pytest.mark.skipif(not _insurance_available(), reason="NYTRO_DATA does not hold insurance_coil2000")
def test_table2_float32_row_follows_the_float64_path(tmp_path):
    out = tmp_path / "f32"
    code = table2.main(["--datasets", "insurance", "--quick", "--threads", "1", "--out", str(out), "--no-progress",
                        "--methods", "nytro,nytro-f32", "--no-peers"])
    assert code == 0
    records = {r["method"]: r for r in json.loads((out / "table2.json").read_text())["datasets"][0]["records"]}
    assert records["nytro-f32"]["status"] == "ok"
    assert records["nytro-f32"]["param"] == records["nytro"]["param"]
    assert records["nytro-f32"]["test_rmse"] == pytest.approx(records["nytro"]["test_rmse"], rel=1e-4)
    assert "float32 storage" in (out / "table2.md").read_text()


@pytest.mark.skipif(not _insurance_available(), reason="NYTRO_DATA does not hold insurance_coil2000")
def test_table2_skips_the_named_peers_only(tmp_path):
    out = tmp_path / "skip"
    code = table2.main(["--datasets", "insurance", "--quick", "--threads", "1", "--out", str(out), "--no-progress",
                        "--methods", "nkrls", "--skip-peers", "sklearn-ridgecv"])
    assert code == 0
    result = json.loads((out / "table2.json").read_text())
    methods = {r["method"] for r in result["datasets"][0]["records"]}
    assert methods == {"nkrls", "nkrls:reference-nkrls", "nkrls:sklearn-ridge"}
    assert result["settings"]["skipped_peers"] == ["sklearn-ridgecv"]
    assert "--skip-peers sklearn-ridgecv" in (out / "table2_command.txt").read_text()


def test_table2_rejects_unknown_names(tmp_path, capsys):
    assert table2.main(["--datasets", "mnist", "--out", str(tmp_path)]) == 2
    assert table2.main(["--methods", "svm", "--out", str(tmp_path)]) == 2
    assert table2.main(["--skip-peers", "sklearn-svr", "--out", str(tmp_path)]) == 2
    assert "unknown" in capsys.readouterr().err


def test_table2_rejects_empty_lists_and_bad_numbers_before_reading_data(tmp_path, capsys):
    # --datasets "" ran nothing and wrote an empty table; --m 0 and --max-iter 0 fell back
    # to the defaults; a budget of -1 or nan skipped every method or peer, or none.
    for argv, flag in ((["--datasets", ""], "--datasets"), (["--methods", " , "], "--methods"),
                       (["--m", "0"], "--m"), (["--max-iter", "0"], "--max-iter"),
                       (["--memory-budget-gb", "-1"], "--memory-budget-gb"),
                       (["--memory-budget-gb", "nan"], "--memory-budget-gb"),
                       (["--peer-budget", "nan"], "--peer-budget"), (["--peer-budget", "0"], "--peer-budget")):
        assert table2.main([*argv, "--out", str(tmp_path / "t2")]) == 2, argv
        assert flag in capsys.readouterr().err, argv
    assert not (tmp_path / "t2").exists()  # refused before the output folder is made


def test_figure2_quick(tmp_path):
    out = tmp_path / "f2"
    assert figure2.main(["--quick", "--threads", "1", "--out", str(out), "--sigma", "0.75", "--no-progress"]) == 0
    for name in ("figure2_time_vs_m.png", "figure2.json", "figure2_command.txt"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    result = json.loads((out / "figure2.json").read_text())
    assert result["m"] == list(figure2.QUICK_M) and result["reps"] == 1 and result["sigma"] == 0.75
    assert set(result["curves"]) == set(figure2.CURVES)
    for curve in result["curves"].values():
        assert len(curve["time_mean"]) == 3 and all(t > 0 for t in curve["time_mean"])
        assert curve["exponent"]["upper_half"] is not None
    assert result["curves"]["nytro-direct"]["solver"] == ["direct"] * 3


def test_growth_exponent_recovers_powers():
    ms = np.arange(100, 4001, 100)
    slope, lo, hi = figure2.growth_exponent(ms, 1e-6 * ms.astype(float) ** 2)
    assert slope == pytest.approx(2.0) and lo == 2100 and hi == 4000
    slope, lo, hi = figure2.growth_exponent([100, 200, 400], [1.0, 2.0, 4.0])
    assert slope == pytest.approx(1.0) and (lo, hi) == (200, 400)
