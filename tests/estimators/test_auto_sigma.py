"""sigma="auto", the estimators' default: ARD bandwidths from each feature's spread times an
overall scale selected on the fit's hold-out rows (nytro.estimators._bandwidth), on the
raw features of scikit-learn's bundled data sets; equivariant under each feature's unit
and offset; an explicit sigma untouched; bad values refused by name."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.model_selection import train_test_split

import nytro
from nytro import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSClassifier, NystromKRLSRegressor,
                   NytroClassifier, NytroRegressor)
from nytro.estimators._bandwidth import (distance_scale, feature_spreads, holdout_resolution, select_bandwidth,
                                         weighted_median)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::sklearn.exceptions.ConvergenceWarning")

REGRESSORS = (NytroRegressor, NystromKRLSRegressor, KRLSRegressor, LandweberRegressor)
CLASSIFIERS = (NytroClassifier, NystromKRLSClassifier)


def diabetes():
    X, y = load_diabetes(return_X_y=True, scaled=False)  # raw units: years, mmHg, ...
    return train_test_split(X, y, test_size=0.25, random_state=0)


def r2(est, X, y):
    return 1 - np.mean((est.predict(X) - y) ** 2) / np.var(y)


# ----------------------------------------------------------- what auto selects
@pytest.mark.parametrize("cls", REGRESSORS)
def test_auto_on_raw_diabetes_fits_as_a_tuned_kernel_does(cls):
    """On the raw features (ages in years, blood pressures in mmHg, a 1/2 sex code) the
    defaults fit nearly as well as a kernel ridge tuned on standardised features (R^2
    0.34 on these held-out rows; a linear model 0.36), where the old defaults (sigma=1 in
    raw units, no intercept) predict nearly a constant far from the targets' mean."""
    X, Xt, y, yt = diabetes()
    est = cls(random_state=0).fit(X, y)
    assert r2(est, Xt, yt) > 0.25
    old = cls(sigma=1.0, fit_intercept=False, random_state=0).fit(X, y)
    assert r2(old, Xt, yt) < 0.1
    # The candidates and their hold-out errors are kept, the winner is their argmin.
    candidates, scores = est.sigma_candidates_, est.sigma_scores_
    assert candidates.shape == scores.shape and len(candidates) >= 5
    assert_allclose(candidates[1:] / candidates[:-1], 2.0)
    best = candidates[np.argmin(scores)]
    ratio = est.sigma_ / best  # each feature's spread on the training rows
    assert est.sigma_.shape == (X.shape[1],)
    assert_allclose(ratio / ratio[0], X.std(0) / X.std(0)[0], rtol=0.5)  # the training rows' spreads


@pytest.mark.parametrize("loader, accuracy", [(load_breast_cancer, 0.93), (load_digits, 0.95)])
@pytest.mark.parametrize("cls", CLASSIFIERS)
def test_auto_on_raw_classification_sets(cls, loader, accuracy):
    """breast_cancer's raw features range from 1e-3 to 1e3 in their units, digits' are
    pixel counts 0..16 with constant border pixels: the defaults classify both well."""
    X, y = loader(return_X_y=True)
    X, Xt, y, yt = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    est = cls(n_centers=300, random_state=0).fit(X, y)
    assert est.score(Xt, yt) > accuracy
    assert np.all(np.isfinite(est.sigma_)) and np.all(est.sigma_ > 0)
    assert len(est.sigma_candidates_) == len(est.sigma_scores_) >= 5


def test_the_winner_is_the_best_screened_and_ties_go_nearest_the_heuristic():
    X, _, y, _ = diabetes()
    est = NytroRegressor(n_centers=100, random_state=0).fit(X, y)
    scores = est.sigma_scores_
    assert scores.min() < scores.max()
    ks = np.round(np.log2(est.sigma_candidates_ / est.sigma_candidates_[0])).astype(int)
    assert_array_equal(ks, np.arange(len(ks)))
    # The search widened only while the best was at an edge.
    best = int(np.argmin(scores))
    assert 0 < best < len(scores) - 1 or len(scores) == 9


# ------------------------------------------------- deviations or ranges
def test_heavy_tailed_features_take_their_ranges_on_cpusmall():
    """cpuSmall's system counters are heavy-tailed, and its test rows reach twice the
    training rows' range in some of them: bandwidths from the deviations understate the
    distances the kernel must reach (test RMSE 4.0-7.3 over five seeds), those from the
    ranges win on the hold-out set by more than its resolution and predict the test rows
    far better (3.2-3.7)."""
    data = nytro.datasets.load_cpusmall()
    est = NytroRegressor(random_state=0).fit(data.X_train, data.y_train)
    assert est.sigma_spread_ == "range"
    # s times each feature's range over the split's training rows, within the range of
    # every row given
    scale = est.sigma_candidates_[np.argmin(est.sigma_scores_)]
    within = est.sigma_ / (scale * (data.X_train.max(axis=0) - data.X_train.min(axis=0)))
    assert np.all(within <= 1 + 1e-12) and np.all(within > 0.5), within
    rmse = np.sqrt(np.mean((est.predict(data.X_test) - data.y_test) ** 2))
    assert rmse < 4.0, rmse


class _Screened:
    """A backend stub whose screening fits score each candidate by `score(sigma)`."""
    screens_bandwidth = True

    def __init__(self, X, score, n_val, w_val=None):
        self.X, self.score = X, score
        self.split = type("Split", (), {"n_val": n_val, "w_val": w_val, "X_train": X})()

    def bandwidth_inputs(self, split, rng, n_rows):
        return self.X.std(axis=0), np.abs(self.X).max(axis=0), self.X, None

    def feature_ranges(self, split):
        return self.X.max(axis=0) - self.X.min(axis=0)

    def nytro_path(self, split, sample, sigma, **params):
        result = type("Result", (), {"validation_rmse": np.array([self.score(np.asarray(sigma))])})()
        return type("Fit", (), {"result": result})()


@pytest.mark.parametrize("n_val, gain, expected", [(200, 0.9, "range"), (200, 0.99, "deviation"),
                                                   (10, 0.9, "deviation"), (10, 0.7, "range")])
def test_ranges_replace_deviations_only_by_more_than_the_holdouts_resolution(n_val, gain, expected):
    """The ranges' best hold-out RMSE must be below the deviations' by more than 1 /
    sqrt(2 n_val) relatively: 200 rows resolve 5%, 10 rows only 22%."""
    X = np.random.default_rng(0).standard_t(3, size=(50, 3))
    by_range = X.max(axis=0) - X.min(axis=0)

    def score(sigma):  # the ranges' candidates score `gain` times the deviations'
        ratio = sigma / by_range
        return gain if np.allclose(ratio, ratio[0]) else 1.0

    backend = _Screened(X, score, n_val)
    est = NytroRegressor()
    sigma, candidates, scores, kind = select_bandwidth(est, backend, backend.split, np.random.RandomState(0), 50)
    assert kind == expected
    assert holdout_resolution(backend.split) == pytest.approx(1 / np.sqrt(2 * n_val))
    spreads = by_range if kind == "range" else feature_spreads(X)
    ratio = sigma / spreads
    assert_allclose(ratio, ratio[0], rtol=1e-12)
    assert scores.min() == (gain if kind == "range" else 1.0)


def test_holdout_resolution_counts_the_weights_effective_rows():
    split = type("Split", (), {"n_val": 4, "w_val": np.array([1.0, 1.0, 1.0, 1.0])})()
    assert holdout_resolution(split) == pytest.approx(1 / np.sqrt(8))
    split.w_val = np.array([1e-300, 0.0, 0.0, 0.0])  # one row counts: scaled, no underflow
    assert holdout_resolution(split) == pytest.approx(1 / np.sqrt(2))
    split.w_val = np.array([2.0, 1.0, 1.0])  # (sum w)^2 / sum w^2 = 16 / 6
    assert holdout_resolution(split) == pytest.approx(1 / np.sqrt(2 * 16 / 6))


def test_one_feature_screens_one_kind_of_spreads():
    """A single feature's range is proportional to its deviation: the same candidates, so
    the second search is not run and the deviations are kept."""
    X, _, y, _ = diabetes()
    calls = []
    est = NytroRegressor(n_centers=50, random_state=0)
    est.fit(X[:, :1], y)
    assert est.sigma_spread_ == "deviation"
    backend = _Screened(X[:, :1], lambda sigma: calls.append(sigma) or 1.0, 100)
    select_bandwidth(est, backend, backend.split, np.random.RandomState(0), 50)
    assert len(calls) == 5  # k = -2..2 (all tie: k = 0 wins, no widening), for the deviations only


# ------------------------------------------------------- the second round
class _Centred(_Screened):
    """_Screened whose sample has the rows asked for, and whose score also sees how many
    centres the screening fit had: score(n_centres, s) for the bandwidths s * spreads."""

    def bandwidth_inputs(self, split, rng, n_rows):
        return self.X.std(axis=0), np.abs(self.X).max(axis=0), self.X[:n_rows], None

    def nytro_path(self, split, sample, sigma, **params):
        s = float(np.asarray(sigma)[0] / self.X.std(axis=0)[0])
        self.calls.append((len(sample), s))
        result = type("Result", (), {"validation_rmse": np.array([self.score(len(sample), s)])})()
        return type("Fit", (), {"result": result})()


def _round_backend(score, n_rows=1000, n_val=10000):
    X = np.random.default_rng(1).standard_normal((n_rows, 1))  # one feature: one kind of spreads
    backend = _Centred(X, score, n_val)
    backend.calls = []
    return backend


def test_a_second_round_at_more_centres_selects_among_what_the_first_could_not_tell_apart():
    """At 200 centres the wide kernels tie within the hold-out's resolution (scores flat
    from s0 up); at 800 the best is s0 / 2. The second round starts at the narrowest
    candidate within the resolution of the first round's best (k = 0 here, 0.5% above
    the best at k = 2), widens towards the better edge, and its candidates and scores are
    the ones kept."""
    def score(m, s):
        k = np.log2(s / s0)
        if m == 200:
            return 1.0 + 0.005 * max(0.0, 2.0 - k) / 2 + (1.0 if k < -0.5 else 0.0)
        return 1.0 + 0.1 * abs(k + 1)

    backend = _round_backend(score)
    s0 = distance_scale(backend.X[:800][np.sort(np.random.RandomState(0).permutation(800)[:200])],
                        feature_spreads(backend.X))
    est = NytroRegressor()
    sigma, candidates, scores, kind = select_bandwidth(est, backend, backend.split, np.random.RandomState(0), 1000)
    sizes = [m for m, _ in backend.calls]
    assert sizes == sorted(sizes) and sizes.count(200) == 6  # k = -2..2, widened once (the tie at k = 2, 3)
    assert len(candidates) == sizes.count(800)
    ks = np.round(np.log2(candidates / candidates[0])).astype(int)
    assert_array_equal(ks, np.arange(len(ks)))
    assert np.log2(candidates[np.argmin(scores)] / s0) == pytest.approx(-1)
    assert_allclose(sigma / feature_spreads(backend.X), candidates[np.argmin(scores)])
    # the second round began at k = -1, 0, 1 (k = 0: the narrowest within 1 / sqrt(2e4)
    # of the best) and widened once to k = -2
    assert sorted(np.round(np.log2(np.array([s for m, s in backend.calls if m == 800]) / s0)).astype(int)) == \
        [-2, -1, 0, 1]


@pytest.mark.parametrize("n_screen, n_rows", [(300, 1000), (1000, 300), (200, 1000)])
def test_no_second_round_without_twice_the_centres(n_screen, n_rows):
    """The second round needs the fit's centres and the training rows to reach twice the
    first round's 200: otherwise the first round decides, as before."""
    backend = _round_backend(lambda m, s: 1.0 + abs(np.log2(s)), n_rows=n_rows)
    select_bandwidth(NytroRegressor(), backend, backend.split, np.random.RandomState(0), n_screen)
    assert {m for m, _ in backend.calls} == {min(200, n_screen, n_rows)}


def test_digits_screens_twice_and_keeps_the_second_rounds_scores(monkeypatch):
    """On digits (1078 training rows, n_centers=1000) the first round screens at 200
    centres and the second at 800; sigma_ is the second round's best."""
    from nytro._memory import MEMORY
    X, y = load_digits(return_X_y=True)
    sizes = []
    original = type(MEMORY).nytro_path

    def spy(self, split, centers, sigma, **params):
        sizes.append(len(centers))
        return original(self, split, centers, sigma, **params)

    monkeypatch.setattr(type(MEMORY), "nytro_path", spy)
    est = NytroClassifier(random_state=0).fit(X[:1347], y[:1347])
    assert sizes[-1] == est.n_centers_ and {200, 800} <= set(sizes[:-1])
    assert len(est.sigma_candidates_) == sizes.count(800)
    assert est.score(X[1347:], y[1347:]) > 0.9


def test_screening_fits_train_on_a_sample_of_rows_and_score_every_holdout_row(monkeypatch):
    """Past SCREEN_ROWS training rows (lowered here to 300) the screening fits train on a
    uniform draw of that many, scored on the whole hold-out part; the fit itself trains
    on every training row."""
    from nytro._memory import MEMORY
    from nytro.estimators import _bandwidth
    monkeypatch.setattr(_bandwidth, "SCREEN_ROWS", 300)
    X, y = load_digits(return_X_y=True)
    seen = []
    original = type(MEMORY).nytro_path

    def spy(self, split, centers, sigma, **params):
        seen.append((split.X_train.shape[0], split.n_val, split.X_train))
        return original(self, split, centers, sigma, **params)

    monkeypatch.setattr(type(MEMORY), "nytro_path", spy)
    est = NytroClassifier(n_centers=250, random_state=0).fit(X, y)
    *screens, (n_fit, n_val, X_fit) = seen
    assert n_fit > 300 and all(n == 300 and v == n_val for n, v, _ in screens)
    fit_rows = {r.tobytes() for r in X_fit}
    assert all(r.tobytes() in fit_rows for r in screens[0][2])  # drawn from the fit's training rows
    assert est.score(X, y) > 0.9


# ------------------------------------------------------------- equivariance
def test_sigma_scales_with_each_features_unit_and_ignores_offsets():
    """x_j -> a_j x_j + b_j: the spreads are deviations from the mean, the rows compared
    after division by them, so sigma_ scales by a_j and the model is the same."""
    X, Xt, y, _ = diabetes()
    base = NytroRegressor(n_centers=200, random_state=0).fit(X, y)
    a = 10.0 ** np.arange(-3, X.shape[1] - 3)  # each feature in another unit
    scaled = NytroRegressor(n_centers=200, random_state=0).fit(X * 1e6 * a, y)
    assert_allclose(scaled.sigma_, base.sigma_ * 1e6 * a, rtol=1e-9)
    assert_allclose(scaled.sigma_candidates_, base.sigma_candidates_, rtol=1e-9)
    assert_allclose(scaled.sigma_scores_, base.sigma_scores_, rtol=1e-7)
    assert_allclose(scaled.predict(Xt * 1e6 * a), base.predict(Xt), rtol=1e-6)
    # A huge offset: the data keep digits to about 1e-8 of it, the spreads as many.
    shifted = NytroRegressor(n_centers=200, random_state=0).fit(X + 1e8, y)
    assert_allclose(shifted.sigma_, base.sigma_, rtol=1e-4)
    assert_allclose(shifted.sigma_candidates_, base.sigma_candidates_, rtol=1e-4)
    assert np.argmin(shifted.sigma_scores_) == np.argmin(base.sigma_scores_)


def test_spreads_of_constant_features_and_weights():
    X = np.array([[1.0, 5.0, 1e8], [2.0, 5.0, 1e8], [4.0, 5.0, 1e8], [7.0, 5.0, 1e8]])
    X[:, 1] *= 3.0
    spreads = feature_spreads(X)
    # the varying feature's standard deviation; the constant ones (one with an offset) take
    # the median of the others'
    assert_allclose(spreads, [X[:, 0].std()] * 3)
    assert_array_equal(feature_spreads(np.full((5, 2), 3.0)), [1.0, 1.0])
    # integer weights are repeated rows, zero weights rows left out
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((12, 3))
    w = rng.integers(0, 4, 12).astype(float)
    w[0] = 1.0
    repeated = np.repeat(Z, w.astype(int), axis=0)
    assert_allclose(feature_spreads(Z, w), feature_spreads(repeated), rtol=1e-12)
    s = feature_spreads(repeated)
    assert_allclose(distance_scale(Z, s, w), distance_scale(repeated, s), rtol=1e-12)
    values, counts = rng.standard_normal(7), rng.integers(1, 4, 7)
    assert weighted_median(values, counts.astype(float)) == np.median(np.repeat(values, counts))


# ------------------------------------------------------- explicit sigma untouched
@pytest.mark.parametrize("cls", REGRESSORS + (KOLSRegressor,))
def test_auto_fits_the_model_of_its_sigma_given_explicitly(cls):
    """Uniform centres are drawn before the bandwidth search, so sigma=<auto's sigma_>
    with the same random_state fits the same model, bit for bit; an explicit sigma is
    kept as given, with no search."""
    X, Xt, y, _ = diabetes()
    params = dict(random_state=0) if cls is not KOLSRegressor else {}
    if "n_centers" in cls().get_params():
        params["n_centers"] = 80
    auto = cls(**params).fit(X[:200], y[:200])
    given = cls(sigma=auto.sigma_, **params).fit(X[:200], y[:200])
    assert_array_equal(given.coef_, auto.coef_)
    assert_array_equal(given.predict(Xt), auto.predict(Xt))
    assert given.sigma_candidates_ is None and given.sigma_scores_ is None
    assert_array_equal(given.sigma_, auto.sigma_)
    scalar = cls(sigma=2.5, **params).fit(X[:200], y[:200])
    assert scalar.sigma_ == 2.5 and scalar.sigma_candidates_ is None


def test_explicit_sigma_fits_the_functions_model():
    """sigma and fit_intercept given: the fit is nytro_path's on the estimators' split and
    centres (experiments.protocol.holdout_split), as before sigma="auto" existed."""
    from nytro.experiments.protocol import holdout_split
    X, _, y, _ = diabetes()
    X = (X - X.mean(0)) / X.std(0)
    est = NytroRegressor(n_centers=50, sigma=3.0, fit_intercept=False, random_state=4).fit(X, y)
    split = holdout_split(X.shape[0], 50, 4)
    fit = nytro.nytro_path(X[split.train], y[split.train], X[split.train][split.centers], 3.0,
                           X_val=X[split.val], y_val=y[split.val], method="hybrid", n_iter_no_change=50)
    assert_array_equal(est.coef_, fit.coef)
    assert est.intercept_ == 0.0


def test_linear_kernel_has_no_bandwidth():
    X, _, y, _ = diabetes()
    est = NytroRegressor(n_centers=50, kernel="linear", random_state=0).fit(X[:100], y[:100])
    assert est.sigma_ is None and est.sigma_candidates_ is None
    given = NytroRegressor(n_centers=50, kernel="linear", sigma=7.0, random_state=0).fit(X[:100], y[:100])
    assert_array_equal(est.coef_, given.coef_)


# ----------------------------------------------------------- without a hold-out
@pytest.mark.parametrize("cls", (NytroRegressor, NystromKRLSRegressor, KOLSRegressor))
def test_without_holdout_the_heuristic_alone(cls):
    X, _, y, _ = diabetes()
    params = {} if cls is KOLSRegressor else dict(validation_fraction=None, random_state=0)
    if cls is NystromKRLSRegressor:
        params["lambdas"] = [1e-6]
    if cls is NytroRegressor:
        params["max_iter"] = 20
    est = cls(**params).fit(X[:150], y[:150])
    (s0,) = est.sigma_candidates_
    assert np.isnan(est.sigma_scores_).all() and est.sigma_scores_.shape == (1,)
    assert_allclose(est.sigma_, s0 * feature_spreads(X[:150]))


def test_leverage_centres_use_the_selected_bandwidths():
    X, Xt, y, yt = diabetes()
    est = NytroRegressor(n_centers=60, center_selection="leverage", random_state=0).fit(X, y)
    assert len(est.sigma_candidates_) >= 5 and r2(est, Xt, yt) > 0.2


# ----------------------------------------------------------------- bad values
@pytest.mark.parametrize("bad", ["median", "AUTO", "", -1.0, 0.0, [1.0, -2.0]])
def test_bad_sigma_is_refused_by_name(bad):
    X, _, y, _ = diabetes()
    with pytest.raises(ValueError, match="sigma"):
        NytroRegressor(sigma=bad).fit(X, y)


def test_functions_refuse_auto_by_name():
    X, _, y, _ = diabetes()
    with pytest.raises(ValueError, match="sigma='auto' is the estimators'"):
        nytro.nytro_path(X, y, X[:10], "auto")
    with pytest.raises(ValueError, match="sigma='auto' is the estimators'"):
        nytro.kernel_matrix(X, X, sigma="auto")


def test_summary_line_reports_the_selected_bandwidths(capsys):
    X, _, y, _ = diabetes()
    NytroRegressor(n_centers=50, random_state=0, verbose=1).fit(X[:200], y[:200])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "sigma=(ARD, 10 values in [" in line and "auto: best of" in line
    NytroRegressor(n_centers=50, sigma=2.0, random_state=0, verbose=1).fit(X[:200], y[:200])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "sigma=2," in line and "auto" not in line


# ------------------------------------------------------------------------ Dask
def test_dask_fits_the_defaults_with_the_heuristic():
    da = pytest.importorskip("dask.array")
    import dask
    X, Xt, y, yt = diabetes()
    with dask.config.set(scheduler="synchronous"):
        est = NytroRegressor(n_centers=100, random_state=0).fit(da.from_array(X, chunks=100), da.from_array(y,
                                                                                                     chunks=100))
    (s0,) = est.sigma_candidates_
    assert np.isnan(est.sigma_scores_).all()
    assert_allclose(est.sigma_, s0 * X.std(0), rtol=1e-10)
    assert r2(est, Xt, yt) > 0.2
