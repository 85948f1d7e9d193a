"""Progress and interruption of a fit on Dask arrays: nytro.dask's progress(stage, done,
total) and the estimators' verbose=, as in memory (the in-memory core reports its stages
through the same callable)."""
from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

import nytro  # noqa: E402
import nytro.dask as nd  # noqa: E402
import test_dask  # noqa: E402
from test_dask import FRACTION, SEED, data  # noqa: E402

client = test_dask.client  # its LocalCluster fixture (one cluster for this module)


def dask_arrays(n=300, chunks=70):
    X, y, sigma = data(n=n)
    return da.from_array(X, chunks=chunks), da.from_array(y, chunks=chunks), sigma


class Recorder:
    def __init__(self, stop_at=None):
        self.calls, self.stop_at = [], stop_at

    def __call__(self, stage, done, total):
        self.calls.append((stage, done, total))
        if (stage, done) == self.stop_at:
            raise KeyboardInterrupt

    def stages(self):
        return [stage for stage, _, _ in self.calls]


def fit(function=nd.nytro_path, **kwargs):
    X, y, sigma = dask_arrays()
    return function(X, y, sigma, n_centers=40, seed=SEED, validation_fraction=FRACTION, **kwargs)


@pytest.mark.parametrize("solver", ["gram", "direct"])
def test_each_pass_is_reported_in_order(client, solver):
    recorder = Recorder()
    result = fit(method="gd", max_iter=30, iterates="stepwise", solver=solver, progress=recorder).result
    stages = recorder.stages()
    assert stages[:2] == ["split", "centres"] and stages[-1] == "validation", stages
    assert all(done <= total for _, done, total in recorder.calls)
    products = [done for stage, done, _ in recorder.calls if stage == "product"]
    if solver == "gram":
        assert "gram" in stages and not products
    else:  # one report per product, counting up to the fit's own count
        assert "gram" not in stages and products == list(range(1, result.products + 1))
        assert [total for stage, _, total in recorder.calls if stage == "product"][-1] == result.products


def test_nkrls_reports_its_passes(client):
    recorder = Recorder()
    fit(nd.nkrls_path, lambdas=[1e-3, 1e-6], progress=recorder)
    stages = recorder.stages()
    assert stages[:2] == ["split", "centres"] and stages[-2:] == ["gram", "validation"], stages


@pytest.mark.parametrize("stop_at", [("centres", 1), ("product", 3)])
def test_an_exception_from_progress_stops_the_fit(client, stop_at):
    recorder = Recorder(stop_at)
    with pytest.raises(KeyboardInterrupt):
        fit(method="cg", max_iter=20, solver="direct", progress=recorder)
    assert recorder.calls[-1][:2] == stop_at  # nothing reported after it: the fit stopped


def test_a_bad_progress_is_refused_by_name(client):
    with pytest.raises(ValueError, match="progress"):
        fit(method="cg", max_iter=5, progress="yes")


def test_verbose_estimator_prints_its_stages(client, capsys):
    X, y, sigma = dask_arrays()
    nytro.NytroRegressor(n_centers=40, sigma=sigma, method="cg", max_iter=10, solver="direct", verbose=2,
                         random_state=0).fit(X, y)  # verbose=2: the counters (1 draws bars)
    err = capsys.readouterr().err
    for stage in ("split", "centres", "product", "validation"):
        assert f"[NytroRegressor] {stage} " in err, err
    nytro.NytroRegressor(n_centers=40, sigma=sigma, method="cg", max_iter=10, random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""  # verbose=0: silent


def test_progress_does_not_change_the_fit(client):
    plain = fit(method="gd", max_iter=25, solver="direct").result
    reported = fit(method="gd", max_iter=25, solver="direct", progress=Recorder()).result
    np.testing.assert_array_equal(reported.coef, plain.coef)
    np.testing.assert_array_equal(reported.validation_rmse, plain.validation_rmse)
