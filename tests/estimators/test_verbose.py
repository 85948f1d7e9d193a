"""What a verbose fit prints (issue 44): nothing at verbose=0; at verbose=1 one tqdm bar
per stage that lasts, with its elapsed time and an estimate of what is left, and one
closing line with the selection (t, lambda, sigma, m), why the path stopped and the
fit's time; at verbose >= 2 the core's counters (test_interrupt.py) and the same line."""
from __future__ import annotations

import re

import numpy as np
import pytest

from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)
from nytro.estimators import _base

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SUMMARY = re.compile(r"\[(\w+)\] fitted in (\d+\.\d\d) s: (.*)")
COUNTER = re.compile(r"\[\w+\] [\w ]+ \d+/\d+")


def _data(n=400, d=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, 0]) + 0.1 * rng.standard_normal(n)


def _summary(err, cls):
    """The one summary line of a fit's stderr (bars are redrawn with carriage returns)."""
    matches = [SUMMARY.fullmatch(line.strip()) for line in err.replace("\r", "\n").splitlines()]
    found = [m for m in matches if m]
    assert len(found) == 1, err
    assert found[0][1] == cls.__name__
    return found[0][3]


AFTER_BEST = r"no improvement in n_iter_no_change=50 iterations after t=(\d+)"
CASES = [
    (NytroRegressor, {"n_centers": 40, "method": "gd", "max_iter": 30}, "reached max_iter=30"),
    (NytroRegressor, {"n_centers": 150}, AFTER_BEST),
    (NytroRegressor, {"n_centers": 15, "method": "cg", "n_iter_no_change": None},
     r"the Krylov space was exhausted at t=(\d+) \(method='cg'\)"),
    (NytroRegressor, {"n_centers": 40, "method": "gd", "stopping": "relative"}, r"stopping='relative' met at t=(\d+)"),
    (NytroRegressor, {"n_centers": 40, "validation_fraction": None, "max_iter": 20},
     "no hold-out set: ran max_iter=20 iterations"),
    (LandweberRegressor, {"max_iter": 20}, "reached max_iter=20"),
    (NystromKRLSRegressor, {"n_centers": 40}, None),
    (KRLSRegressor, {}, None),
    (NytroClassifier, {"n_centers": 150, "refit": True}, AFTER_BEST),
    (NystromKRLSClassifier, {"n_centers": 40}, None),
    # The default bandwidths (the cases above give sigma=1.0, which their reasons assume).
    (NytroRegressor, {"n_centers": 40, "sigma": "auto", "method": "gd", "max_iter": 30}, "reached max_iter=30"),
    (NytroRegressor, {"n_centers": 40, "sigma": "auto", "validation_fraction": None, "max_iter": 20},
     "no hold-out set: ran max_iter=20 iterations"),
    (NystromKRLSClassifier, {"n_centers": 40, "sigma": "auto"}, None),
]


@pytest.mark.parametrize("cls, params, reason", CASES)
def test_verbose_fit_ends_with_one_summary_of_the_selection(cls, params, reason, capsys):
    X, y = _data()
    if "Classifier" in cls.__name__:
        y = y > 0
    est = cls(verbose=1, random_state=0, **{"sigma": 1.0, **params}).fit(X, y)
    out, err = capsys.readouterr()
    assert out == ""
    assert not any(COUNTER.fullmatch(line) for line in err.splitlines()), err  # the counters are verbose=2's
    summary = _summary(err, cls)
    fields = dict(re.findall(r"(\w+)=([^,;]+)", summary.split(";")[0]))
    if hasattr(est, "n_iter_"):
        assert int(fields["t"]) == est.n_iter_
    if est.lambda_ is not None:
        assert float(fields["lambda"].split()[0]) == pytest.approx(est.lambda_, rel=5e-3)
    else:
        assert "lambda" not in fields
    if est.sigma_candidates_ is None:
        assert float(fields["sigma"]) == est.sigma
    else:  # sigma="auto": the ARD bandwidths' range, and how they were selected
        low, high = (f"{float(v):.3g}" for v in (est.sigma_.min(), est.sigma_.max()))
        ard = f"sigma=(ARD, {X.shape[1]} values in [{low}, {high}])"
        holdout = params.get("validation_fraction", 0.2) is not None
        by = " of the feature ranges" if est.sigma_spread_ == "range" else ""
        how = (f"auto: best of {len(est.sigma_candidates_)} scales{by} on the hold-out set" if holdout else
               "auto: the distance heuristic, no hold-out set")
        assert f"{ard} ({how})" in summary, summary
    if hasattr(est, "n_centers_"):
        assert fields["m"] == f"{est.n_centers_} (rank {est.rank_})"
    assert ("refitted on all rows" in summary) == bool(params.get("refit"))
    if reason is None:
        assert "path stopped" not in summary
    else:
        stopped = re.search(r"path stopped: " + reason + "$", summary)
        assert stopped, summary
        path = est.validation_rmse_ if est.validation_rmse_ is not None else est.validation_error_
        if stopped.groups() and "n_iter_no_change" in reason:
            assert int(stopped[1]) == est.n_iter_ and len(path) == est.n_iter_ + 50
        elif stopped.groups():
            assert int(stopped[1]) == len(path) < est.max_iter


@pytest.mark.parametrize("cls", [NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor,
                                 KOLSRegressor, NytroClassifier])
def test_verbose_zero_prints_nothing(cls, capfd):
    X, y = _data(200)
    params = {"n_centers": 20, "max_iter": 20, "random_state": 0}
    est = cls().set_params(**{k: v for k, v in params.items() if k in cls().get_params()})
    est.fit(X, y > 0 if cls is NytroClassifier else y)
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("cls", [NytroRegressor, NystromKRLSRegressor, NytroClassifier, NystromKRLSClassifier])
def test_verbose_partial_fit_ends_each_call_with_its_summary(cls, capfd):
    # verbose is read by partial_fit as by fit: one summary line a call at verbose=1
    # (of the model selected at that call), nothing at verbose=0.
    X, y = _data(300)
    labels = "Classifier" in cls.__name__
    target, extra = (y > 0, dict(classes=[False, True])) if labels else (y, {})
    est = cls(n_centers=20, sigma=1.0, random_state=0, verbose=1)
    for rows in (slice(0, 150), slice(150, 300)):
        est.partial_fit(X[rows], target[rows], **extra)
        out, err = capfd.readouterr()
        assert out == ""
        summary = _summary(err, cls)
        assert f"m={est.n_centers_} (rank {est.rank_})" in summary
        selected = f"t={est.n_iter_}" if hasattr(est, "n_iter_") else f"lambda={float(est.lambda_):.3g}"
        assert summary.startswith(selected), summary
    cls(n_centers=20, sigma=1.0, random_state=0).partial_fit(X, target, **extra)
    assert capfd.readouterr() == ("", "")


def test_bars_show_each_stage_with_elapsed_time_and_estimate(capsys):
    """A bar per stage: a new stage name, a new total or a count that goes back starts the
    next; each shows done/total and tqdm's [elapsed<remaining]."""
    bars = _base.ProgressBars("Fit", delay=0.0, mininterval=0.0)
    for done in range(0, 11, 5):
        bars("kernel", done, 10)
    bars("kernel", 2, 10)  # the hold-out kernel: a second bar of the same name
    bars("gram", 3, 8)
    bars.close()
    err = capsys.readouterr().err.replace("\r", "\n")
    assert re.search(r"\[Fit\] kernel: +100%.*\| 10/10 \[\d\d:\d\d<\d\d:\d\d", err), err
    assert re.search(r"\[Fit\] kernel: +20%.*\| 2/10 \[\d\d:\d\d<", err), err
    assert re.search(r"\[Fit\] gram: +38%.*\| 3/8 \[\d\d:\d\d<", err), err
    assert bars.bar is None


def test_a_fit_draws_bars_for_the_core_stages(monkeypatch, capsys):
    """The core's stages reach the bars (here with no delay, so every stage draws one)."""
    monkeypatch.setattr(_base.ProgressBars.__init__, "__defaults__", (0.0, 0.0))
    X, y = _data(2000)
    NytroRegressor(n_centers=100, solver="gram", verbose=1, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    for stage in ("kernel", "factor", "gram"):
        assert re.search(rf"\[NytroRegressor\] {stage}: .*\[\d\d:\d\d<", err), stage
    _summary(err, NytroRegressor)


def test_verbose_two_prints_the_counters_and_the_summary(capsys):
    X, y = _data()
    NytroRegressor(n_centers=40, verbose=2, random_state=0).fit(X, y)
    *lines, last = capsys.readouterr().err.splitlines()
    assert lines and all(COUNTER.fullmatch(line) for line in lines)
    assert SUMMARY.fullmatch(last)


def test_a_failed_fit_prints_no_summary(capsys):
    X, y = _data(50)
    with pytest.raises(ValueError, match="validation_fraction"):
        NytroRegressor(n_centers=5, verbose=1, validation_fraction=0.001).fit(X, y)
    assert "fitted in" not in capsys.readouterr().err
