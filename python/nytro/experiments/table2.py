"""Table 2 of the paper: training + model-selection time, test RMSE and the selected
parameter of KOLS, KRLS, Early Stopping (Landweber), NKRLS and NYTRO on the benchmark
datasets, with peers run on the same split and the same centres.

    python -m nytro table2 --datasets insurance,adult --reps 5 --data-dir DIR --out DIR

Protocol (docs/protocol.md): a fresh, seeded 20% hold-out of the training set and m fresh
centres drawn from the other 80% at every repetition; lambda from the paper's 100 values
in [1e-15, 1] (times n), t up to 500; time.perf_counter around the fit only (training
and model selection, kernels included; never the test prediction). Rows:

  kols          KOLS, pinv(K) y on all training rows (nothing to select)
  krls          KRLS, 100 lambdas (one eigendecomposition serves them all)
  landweber     Early stopping: Landweber on the full kernel, step 1/n, best of 500
  nkrls         NKRLS, 100 lambdas, nytro's eigendecomposition solver
  nkrls-chol    NKRLS, 100 lambdas, the paper's form (one Cholesky solve per lambda)  [optional]
  nytro         NYTRO, the paper's protocol: gradient descent, step 1/lambda_max, best of 500
  nytro-f32     the same protocol with storage="float32": A^T A (Gram solver) or K_nm (direct)
                and K_val kept in float32, every sum in float64  [optional]
  nytro-window  NYTRO with the authors' window stopping rule and their per-dataset threshold
  nytro-hybrid  NYTRO with NytroRegressor's defaults: method "hybrid" (Tikhonov projected
                onto the Krylov space, (t, lambda) on the hold-out set), best of the path,
                which ends 50 iterations after its last improvement
  nytro-cg      NYTRO with conjugate gradients, best of the path, which ends 50
                iterations after its last improvement (the defaults before "hybrid")  [optional]
  nytro-nu      NYTRO with the nu-method, best of the path  [optional]

Peers (same split, same centres, BLAS threads capped at --threads):
  nytro.reference   the NumPy reference of NYTRO and NKRLS (same signatures, same protocol)
  sklearn Ridge     Nystroem(rbf, gamma = 1/(2 sigma^2), n_components = m) fitted on the m
                    centre rows (so its components are exactly our centres, in another
                    order; the spanned space and hence the fit are the same), then
                    Ridge(alpha = lambda n_train, fit_intercept=False) for each of the 100
                    lambdas, selected on the same hold-out: what nytro's NKRLS computes
  sklearn RidgeCV   the same features and RidgeCV(alphas = the grid times n_train) fitted on
                    the same 80% training rows, selecting alpha by its own leave-one-out
                    (the hold-out rows are unused): what a scikit-learn user would write
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

from .. import reference
from .._api import kernel_predict
from .._checks import paper_lambdas
from ..estimators import (KOLSRegressor, KRLSRegressor, LandweberRegressor, NystromKRLSRegressor,
                          NytroRegressor)
from . import protocol as P

DEFAULT_DATASETS = ("insurance", "adult", "ijcnn1", "covtype", "yearprediction-synthetic")
DEFAULT_METHODS = ("kols", "krls", "landweber", "nkrls", "nytro", "nytro-window", "nytro-hybrid")
QUICK = {"n_train": 1000, "n_test": 1000, "m": 200, "max_iter": 50, "reps": 1}

# What the authors' code recorded with the window rule (docs/protocol.md): t*, val, test.
AUTHORS_WINDOW = {"insurance": (493, 0.50322, 0.46528), "adult": (None, 0.68641, 0.68743),
                  "ijcnn1": (329, 0.46100, 0.47718), "yearprediction": (481, 0.11578, 0.11487),
                  "covtype": (39, 0.82932, 0.91769)}


# ---------------------------------------------------------------------------------------
# Methods
# ---------------------------------------------------------------------------------------
@dataclass
class Context:
    """What one repetition of one dataset needs to build its estimators."""

    config: P.DatasetConfig
    m: int
    sigma: float
    max_iter: int
    threads: int
    seed: int


@dataclass(frozen=True)
class Method:
    key: str
    label: str
    kind: str                 # "exact" (n x n kernel) or "nystrom"
    param_name: str | None    # "lambda", "t" or None
    paper: str | None         # key in the paper's Table 2
    peers: tuple = ()
    solver: str = "eigh"      # of the exact Tikhonov ones (memory estimate)

    def build(self, ctx: Context):
        # The paper's model: its sigma and no intercept (the estimators' defaults are
        # sigma="auto" and fit_intercept=True).
        common = dict(random_state=ctx.seed, n_threads=ctx.threads, fit_intercept=False)
        s = ctx.sigma
        if self.key == "kols":
            return KOLSRegressor(s, n_threads=ctx.threads, fit_intercept=False)
        if self.key == "krls":
            return KRLSRegressor(s, solver="eigh", **common)
        if self.key == "landweber":
            return LandweberRegressor(s, max_iter=ctx.max_iter, step_size="paper", stopping="best", **common)
        if self.key == "nkrls":
            return NystromKRLSRegressor(ctx.m, s, solver="eigh", **ctx.config.nystrom_options(), **common)
        if self.key == "nkrls-chol":
            return NystromKRLSRegressor(ctx.m, s, solver="cholesky", **ctx.config.nystrom_options(), **common)
        nytro = dict(n_centers=ctx.m, sigma=s, max_iter=ctx.max_iter, **ctx.config.nytro_options(), **common)
        if self.key in ("nytro", "nytro-f32"):  # the paper's protocol: GD, best of the whole path
            if self.key == "nytro-f32":  # A^T A (or K_nm) and K_val stored in float32
                nytro["storage"] = "float32"
            return NytroRegressor(method="gd", step_size="auto", stopping="best", n_iter_no_change=None, **nytro)
        if self.key == "nytro-window":
            return NytroRegressor(method="gd", step_size="auto", stopping="window", tol=ctx.config.window_tol,
                                  window=P.WINDOW, **nytro)
        if self.key == "nytro-hybrid":  # NytroRegressor's defaults: hybrid, best, ends 50 after the minimum
            return NytroRegressor(**nytro)
        if self.key == "nytro-cg":  # CG, best, ends 50 after the minimum
            return NytroRegressor(method="cg", **nytro)
        if self.key == "nytro-nu":
            return NytroRegressor(method="nu", step_size="auto", stopping="best", n_iter_no_change=None, **nytro)
        raise ValueError(self.key)  # pragma: no cover


METHODS = {m.key: m for m in (
    Method("kols", "KOLS (pinv(K) y, all training rows)", "exact", None, "kols"),
    Method("krls", "KRLS (100 λ, eigh)", "exact", "lambda", "krls"),
    Method("landweber", "Early stopping (Landweber, step 1/n, best of {T})", "exact", "t", "landweber"),
    Method("nkrls", "NKRLS (100 λ, eigh)", "nystrom", "lambda", "nkrls",
           peers=("reference-nkrls", "sklearn-ridge", "sklearn-ridgecv")),
    Method("nkrls-chol", "NKRLS (100 λ, paper's form: Cholesky per λ)", "nystrom", "lambda", "nkrls"),
    Method("nytro", "NYTRO (paper's protocol: gd, step auto, best of {T})", "nystrom", "t", "nytro",
           peers=("reference-nytro",)),
    Method("nytro-f32", "NYTRO (paper's protocol, float32 storage, float64 sums)", "nystrom", "t", "nytro",
           peers=("reference-nytro",)),
    Method("nytro-window", "NYTRO (authors' window rule, per-dataset tol)", "nystrom", "t", "nytro"),
    Method("nytro-hybrid", "NYTRO hybrid (NytroRegressor's defaults)", "nystrom", "t", None),
    Method("nytro-cg", "NYTRO cg (best of path)", "nystrom", "t", None),
    Method("nytro-nu", "NYTRO nu-method (best of {T})", "nystrom", "t", None),
)}
PEERS = tuple(dict.fromkeys(peer for method in METHODS.values() for peer in method.peers))

PEER_LABELS = {
    "reference-nytro": ("nytro.reference", "nytro.reference.nytro_path (NumPy)"),
    "reference-nkrls": ("nytro.reference", "nytro.reference.nkrls_path (NumPy)"),
    "sklearn-ridge": ("scikit-learn", "Nystroem + Ridge × 100 λ, same hold-out"),
    "sklearn-ridgecv": ("scikit-learn", "Nystroem + RidgeCV (own LOO on the 80%)"),
}


def parse_list(text: str, known, what: str, allow_empty: bool = False) -> list:
    items = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in items if s not in known]
    if unknown:
        raise ValueError(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    if not items and not allow_empty:  # "" would run nothing and write an empty table
        raise ValueError(f"--{what} names none; known: {', '.join(known)}")
    return items


# ---------------------------------------------------------------------------------------
# Cost models of the peers (to skip the ones that would not fit or take too long)
# ---------------------------------------------------------------------------------------
@dataclass
class Calibration:
    """dgemm rate and matrix-vector bandwidth measured at the start of the run, with the
    run's threads: only for predicting the peers' times, not for reporting."""

    gemm_flops: float
    gemv_bytes_per_s: float

    @classmethod
    def measure(cls) -> "Calibration":
        rng = np.random.default_rng(0)
        A, B = rng.standard_normal((1024, 1024)), rng.standard_normal((1024, 1024))
        K, v = rng.standard_normal((4000, 4000)), rng.standard_normal(4000)

        def best(f, reps=3):
            times = []
            for _ in range(reps):
                start = time.perf_counter()
                f()
                times.append(time.perf_counter() - start)
            return min(times)
        return cls(2 * 1024**3 / best(lambda: A @ B), K.nbytes / best(lambda: K @ v))

    def seconds(self, flops: float, nbytes: float) -> float:
        return flops / self.gemm_flops + nbytes / self.gemv_bytes_per_s


def peer_cost(peer: str, n: int, n_val: int, m: int, d: int, max_iter: int, n_lambdas: int):
    """(peak bytes, flops, streamed bytes) of a peer, from what it allocates and computes."""
    kernels = 2.0 * (n + n_val) * m * d
    n, n_val, m = float(n), float(n_val), float(m)
    if peer == "reference-nytro":     # K_nm, A = K_nm R, K_val, 500 alphas; A read twice per iteration
        return (8 * (2 * n * m + n_val * m + max_iter * m + 4 * m * m),
                kernels + 4 * n * m * m + 6 * m**3, max_iter * 8 * (2 * n * m + n_val * m))
    if peer == "reference-nkrls":     # the same, one eigh, 100 coefficient vectors
        return (8 * (2 * n * m + n_val * m + n_lambdas * m + 4 * m * m),
                kernels + 4 * n * m * m + 12 * m**3, n_lambdas * 8 * (n_val * m + 2 * m * m))
    if peer == "sklearn-ridge":       # features of train and val; Ridge forms Phi^T Phi per lambda
        return (8 * (2 * n * m + 2 * n_val * m + 4 * m * m),
                kernels + 2 * (n + n_val) * m * m + 12 * m**3 + n_lambdas * (2 * n * m * m + m**3 / 3),
                n_lambdas * 8 * (n * m + n_val * m))
    if peer == "sklearn-ridgecv":     # features, their covariance and its eigendecomposition; per
        # alpha ("cov" mode) the m x m inverse V diag(w) V^T and the diagonal of X A X^T (leave-one-out)
        return (8 * (3 * n * m + 4 * m * m),
                kernels + 2 * n * m * m + 12 * m**3 + 2 * n * m * m + 10 * m**3
                + n_lambdas * (2 * n * m * m + 2 * m**3), n_lambdas * 8 * (n * m))
    raise ValueError(peer)  # pragma: no cover


# ---------------------------------------------------------------------------------------
# Peers
# ---------------------------------------------------------------------------------------
def _nystroem_features(centers, sigma, seed):
    """scikit-learn's Nystroem on exactly our centres: fitted on the m centre rows with
    n_components = m, it takes all of them as components (in a permuted order)."""
    from sklearn.kernel_approximation import Nystroem
    feature_map = Nystroem(kernel="rbf", gamma=1.0 / (2.0 * sigma**2), n_components=centers.shape[0],
                           random_state=seed)
    return feature_map.fit(centers)


def run_peer(peer, X_tr, y_tr, X_val, y_val, centers, ctx: Context, lambdas):
    """Fit one peer, timed; returns (seconds, predict(X) function, param, val RMSE, extra)."""
    from sklearn.linear_model import Ridge, RidgeCV
    sigma, n = ctx.sigma, X_tr.shape[0]
    extra = {}
    if peer == "reference-nytro":
        with P.Timer() as timer:
            res = reference.nytro_path(X_tr, y_tr, centers, sigma, X_val=X_val, y_val=y_val, method="gd",
                                       max_iter=ctx.max_iter, step_size="auto", stopping="best")
        coef = res.coef
        return (timer.seconds, lambda X: kernel_predict(X, centers, coef, sigma, n_threads=ctx.threads),
                res.n_iter, float(np.min(res.validation_rmse)), {"step_size": res.step_size, "rank": res.rank})
    if peer == "reference-nkrls":
        with P.Timer() as timer:
            res = reference.nkrls_path(X_tr, y_tr, centers, sigma, lambdas=lambdas, X_val=X_val, y_val=y_val)
        coef = res.coef
        return (timer.seconds, lambda X: kernel_predict(X, centers, coef, sigma, n_threads=ctx.threads),
                res.lambda_, float(np.min(res.validation_rmse)), {"rank": res.rank})
    if peer == "sklearn-ridge":
        with P.Timer() as timer:
            features = _nystroem_features(centers, sigma, ctx.seed)
            Phi, Phi_val = features.transform(X_tr), features.transform(X_val)
            best = (np.inf, None, None)
            for lam in lambdas:
                model = Ridge(alpha=lam * n, fit_intercept=False).fit(Phi, y_tr)
                val = P.rmse(model.predict(Phi_val), y_val)
                if val < best[0]:
                    best = (val, lam, model)
        val, lam, model = best
        extra["n_components"] = int(features.components_.shape[0])
        return timer.seconds, lambda X: model.predict(features.transform(X)), lam, val, extra
    if peer == "sklearn-ridgecv":
        with P.Timer() as timer:
            features = _nystroem_features(centers, sigma, ctx.seed)
            model = RidgeCV(alphas=np.asarray(lambdas) * n, fit_intercept=False).fit(features.transform(X_tr), y_tr)
        extra["best_loo_score"] = float(model.best_score_)
        # Not used for selection; the hold-out RMSE of RidgeCV's choice, for comparison.
        val = P.rmse(model.predict(features.transform(X_val)), y_val)
        return timer.seconds, lambda X: model.predict(features.transform(X)), model.alpha_ / n, val, extra
    raise ValueError(peer)  # pragma: no cover


# ---------------------------------------------------------------------------------------
# One dataset
# ---------------------------------------------------------------------------------------
@dataclass
class Settings:
    reps: int
    seed: int
    threads: int
    max_iter: int
    m: int | None             # None: the paper's m
    peers: bool
    peer_budget_s: float
    skipped_peers: tuple      # peers left out by name (--skip-peers)
    memory_budget: float
    methods: list
    quick: bool
    progress: bool
    calibration: Calibration | None = None
    log: list = field(default_factory=list)


def _param_of(method: Method, estimator):
    if method.param_name == "lambda":
        return float(estimator.lambda_)
    if method.param_name == "t":
        return float(estimator.n_iter_)
    return None


def _check_same_split(method: Method, estimator, X, split: P.Split) -> None:
    """The estimator, seeded like the split, must have drawn the same rows/centres."""
    if method.key == "kols":
        return
    expected = split.center_rows(X) if method.kind == "nystrom" else X[split.train]
    if not np.array_equal(estimator.centers_, expected):
        raise RuntimeError(f"{method.key}: the estimator's hold-out split or centres differ from "
                           f"protocol.holdout_split (seed {split.seed}); the peers would not be comparable")


def _say(settings: Settings, bar, text: str) -> None:
    settings.log.append(text)
    if bar is not None:
        bar.write(text, file=sys.stderr)
    else:
        print(text, file=sys.stderr, flush=True)


def run_dataset(name: str, data_dir, settings: Settings) -> dict:
    """All repetitions of all methods (and peers) on one dataset: its JSON record."""
    config = P.dataset_config(name)
    m = settings.m or (QUICK["m"] if settings.quick else config.m)
    loaded = time.perf_counter()
    data = P.load(config, data_dir, n_train=QUICK["n_train"] if settings.quick else None,
                  n_test=QUICK["n_test"] if settings.quick else None, seed=settings.seed)
    loaded = time.perf_counter() - loaded
    X, y, X_test, y_test = data.arrays()
    n_all, d = X.shape
    seeds = P.repetition_seeds(settings.seed, settings.reps)
    lambdas = paper_lambdas()
    methods = [METHODS[k] for k in settings.methods]
    peer_keys = [p for meth in methods for p in meth.peers if p not in settings.skipped_peers] if settings.peers else []
    records: list = []
    skip_peer: dict = {}     # peer -> reason, once it is known to be over budget
    total = len(seeds) * (len(methods) + len(peer_keys))
    from tqdm.auto import tqdm
    bar = tqdm(total=total, desc=config.name, unit="fit", file=sys.stderr, disable=not settings.progress,
               dynamic_ncols=True, leave=True)
    try:
        for rep, seed in enumerate(seeds):
            split = P.holdout_split(n_all, m, seed)
            X_tr, y_tr, X_val, y_val = split.parts(X, y)
            centers = split.center_rows(X)
            ctx = Context(config, m, config.sigma, settings.max_iter, settings.threads, seed)
            for method in methods:
                bar.set_postfix_str(f"rep {rep + 1} {method.key}")
                record = _run_method(method, ctx, X, y, X_test, y_test, split, settings, config, rep)
                records.append(record)
                bar.update(1)
                _say(settings, bar, _line(record))
                if not settings.peers:
                    continue
                for peer in (p for p in method.peers if p not in settings.skipped_peers):
                    bar.set_postfix_str(f"rep {rep + 1} {peer}")
                    peer_record = _run_peer(peer, method, ctx, record, X_tr, y_tr, X_val, y_val, centers,
                                            X_test, y_test, lambdas, settings, skip_peer, config, rep, d)
                    records.append(peer_record)
                    bar.update(1)
                    _say(settings, bar, _line(peer_record))
    finally:
        bar.close()
    return {
        "dataset": config.name, "label": config.label, "synthetic": config.synthetic,
        "description": data.description, "n_train": int(n_all), "n_test": int(X_test.shape[0]), "d": int(d),
        "n_fit": int(n_all - int(round(P.VALIDATION_FRACTION * n_all))),
        "n_val": int(round(P.VALIDATION_FRACTION * n_all)), "m": int(m), "sigma": config.sigma,
        "window_tol": config.window_tol, "max_iter": settings.max_iter, "n_lambdas": int(lambdas.size),
        "seeds": seeds, "load_seconds": loaded,
        "paper": {k: vars(v) for k, v in config.paper.items()},
        "authors_window": dict(zip(("t", "val_rmse", "test_rmse"), AUTHORS_WINDOW.get(config.paper_key, ()))),
        "records": [r.to_dict() for r in records],
        "summary": [dict(row, label=_label(row["method"], settings.max_iter)) for row in summarize(records, methods)],
    }


def _line(r: P.Record) -> str:
    where = f"{r.dataset} rep {r.rep + 1} {r.method} [{r.implementation}]"
    if r.status != "ok":
        return f"{where}: {r.note if r.note.startswith(('NA', 'skipped')) else r.status + ' ' + r.note}"
    param = "" if r.param is None else f" {r.param_name}*={r.param:.3g}"
    ratio = "" if r.ratio_to_nytro is None else f" ({r.ratio_to_nytro:.2f}x nytro's time)"
    return f"{where}: {r.time_s:.3f} s, test RMSE {r.test_rmse:.4f}{param}{ratio}"


def _run_method(method: Method, ctx: Context, X, y, X_test, y_test, split: P.Split, settings: Settings,
                config, rep) -> P.Record:
    record = P.Record(config.name, method.key, "nytro", rep, ctx.seed, param_name=method.param_name)
    if method.kind == "exact":
        n_fit, n_val = (X.shape[0], 0) if method.key == "kols" else (split.n_train, split.n_val)
        verdict = P.exact_method_fits(method.key, n_fit, n_val, solver=method.solver,
                                      budget_bytes=settings.memory_budget)
        record.extra["memory_needed_gb"] = round(verdict.needed_gb, 3)
        if not verdict.fits:
            record.status, record.note = "NA", verdict.na_text()
            return record
    estimator = method.build(ctx)
    try:
        with P.path_cut_expected(), P.Timer() as timer:
            estimator.fit(X, y)
    except MemoryError as error:
        record.status, record.note = "NA", f"NA (MemoryError: {error})"
        return record
    except (RuntimeError, ValueError, np.linalg.LinAlgError) as error:
        record.status, record.note = "error", f"{type(error).__name__}: {error}"
        return record
    _check_same_split(method, estimator, X, split)
    record.time_s = timer.seconds
    record.test_rmse = P.rmse(estimator.predict(X_test), y_test)
    record.param = _param_of(method, estimator)
    if getattr(estimator, "validation_rmse_", None) is not None and len(estimator.validation_rmse_):
        path = np.asarray(estimator.validation_rmse_)
        if method.param_name == "t":
            record.val_rmse = float(path[estimator.n_iter_ - 1]) if estimator.n_iter_ <= path.size else None
            record.extra["iterations_run"] = int(path.size)
            record.extra["step_size"] = float(estimator.step_size_)
        else:
            record.val_rmse = float(np.min(path))
    for attribute in ("solver_", "rank_", "products_"):
        if hasattr(estimator, attribute):
            record.extra[attribute.rstrip("_")] = getattr(estimator, attribute)
    return record


def _run_peer(peer, method, ctx, nytro_record, X_tr, y_tr, X_val, y_val, centers, X_test, y_test, lambdas,
              settings: Settings, skip_peer: dict, config, rep, d) -> P.Record:
    implementation = PEER_LABELS[peer][0]
    record = P.Record(config.name, f"{method.key}:{peer}", implementation, rep, ctx.seed,
                      param_name=method.param_name)
    nbytes, flops, streamed = peer_cost(peer, X_tr.shape[0], X_val.shape[0], ctx.m, d, ctx.max_iter, lambdas.size)
    record.extra["memory_needed_gb"] = round(nbytes / 1e9, 3)
    verdict = P.memory_verdict(nbytes, settings.memory_budget)
    if not verdict.fits:
        record.status, record.note = "NA", verdict.na_text()
        return record
    if settings.calibration is not None:
        predicted = settings.calibration.seconds(flops, streamed)
        record.extra["predicted_s"] = round(predicted, 3)
        if predicted > settings.peer_budget_s and peer not in skip_peer:
            skip_peer[peer] = f"skipped (>budget: predicted {predicted:.0f} s > {settings.peer_budget_s:.0f} s)"
    if peer in skip_peer:
        record.status, record.note = "skipped", skip_peer[peer]
        return record
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seconds, predict, param, val, extra = run_peer(peer, X_tr, y_tr, X_val, y_val, centers, ctx, lambdas)
            test = P.rmse(predict(X_test), y_test)
    except MemoryError as error:
        record.status, record.note = "NA", f"NA (MemoryError: {error})"
        return record
    except Exception as error:  # a peer's failure is a result, not a crash of the run
        record.status, record.note = "error", f"{type(error).__name__}: {error}"
        record.extra["traceback"] = traceback.format_exc(limit=3)
        return record
    record.time_s, record.test_rmse, record.val_rmse = seconds, test, val
    record.param = None if param is None else float(param)
    record.extra.update(extra)
    if caught:
        messages = sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught})
        record.extra["warnings"] = {"count": len(caught), "distinct": messages[:5]}
    if nytro_record.status == "ok" and nytro_record.time_s:
        record.ratio_to_nytro = seconds / nytro_record.time_s
    if seconds > settings.peer_budget_s:
        skip_peer[peer] = (f"skipped (>budget: repetition {rep + 1} took {seconds:.0f} s > "
                           f"{settings.peer_budget_s:.0f} s)")
    return record


def summarize(records, methods) -> list:
    """One row per (method, implementation): mean +- std over the repetitions that ran."""
    rows = []
    keys = []
    for method in methods:
        keys.append(method.key)
        keys.extend(f"{method.key}:{peer}" for peer in method.peers)
    for key in keys:
        group = [r for r in records if r.method == key]
        if not group:
            continue
        ok = [r for r in group if r.status == "ok"]
        base = [r for r in records if r.method == key.split(":")[0] and r.status == "ok"]
        row = {"method": key, "implementation": group[0].implementation, "param_name": group[0].param_name,
               "reps_ok": len(ok), "reps": len(group),
               "status": "ok" if ok else group[0].status, "note": "" if ok else group[0].note}
        for name in ("time_s", "test_rmse", "val_rmse", "param", "ratio_to_nytro"):
            row[name], row[name + "_std"] = P.mean_std([getattr(r, name) for r in ok])
        if ":" in key and ok and base:
            # ratio of the mean times (the per-repetition ratios are averaged in ratio_to_nytro)
            row["ratio_of_means"] = row["time_s"] / P.mean_std([r.time_s for r in base])[0]
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------
def _label(key: str, max_iter: int = P.MAX_ITER) -> str:
    if ":" in key:
        return "↳ " + PEER_LABELS[key.split(":")[1]][1]
    return METHODS[key].label.replace("{T}", str(max_iter))


def _param_text(row) -> str:
    if row["param"] is None:
        return "-"
    kind = "int" if row["param_name"] == "t" else "g"
    prefix = "t*=" if row["param_name"] == "t" else "λ*="
    return prefix + P.format_mean_std(row["param"], row["param_std"], kind)


def _paper_cells(dataset: dict, key: str):
    if ":" in key:
        return "", "", ""
    paper_key = METHODS[key].paper
    cell = dataset["paper"].get(paper_key) if paper_key else None
    if cell is None:
        return ("NA" if paper_key in ("kols", "krls", "landweber") else "-"), "", ""
    kind = "int" if paper_key in ("landweber", "nytro") else "g"
    param = "-" if cell["param"] is None else P.format_mean_std(cell["param"], cell["param_std"], kind)
    return (P.format_mean_std(cell["time"], cell["time_std"], "time"),
            P.format_mean_std(cell["rmse"], cell["rmse_std"], "rmse"), param)


def markdown(result: dict) -> str:
    info = result["machine"]
    mode = "QUICK mode, subsampled: not the paper protocol" if result["quick"] else "paper protocol"
    lines = [f"# Table 2: time and test RMSE ({mode})",
             "",
             f"Machine: {P.machine_line(info)}. nytro {info['nytro']}, NumPy {info['numpy']}, "
             f"scikit-learn {info['scikit-learn']}.",
             f"Command: `{result['command']}`",
             "",
             "Time: training + model selection (kernels, factorisations, all λ or all iterations, validation "
             "errors), mean ± std over the repetitions; test prediction not timed. Each repetition draws a fresh "
             "20% hold-out and fresh centres, the same for every row of that repetition. "
             "\"× nytro\" is a peer's time over nytro's time for the same method (mean of the per-repetition "
             "ratios). Paper: 12 × 2.10 GHz Xeon E5-2620 v2, the authors' MATLAB code.",
             ""]
    for ds in result["datasets"]:
        lines.append(f"## {ds['label']}" + (" — SYNTHETIC data, not YearPredictionMSD; the paper's numbers are "
                                             "for the real dataset" if ds["synthetic"] else ""))
        lines.append("")
        lines.append(f"n_train = {ds['n_train']} ({ds['n_fit']} fit + {ds['n_val']} hold-out), n_test = "
                     f"{ds['n_test']}, d = {ds['d']}, m = {ds['m']}, σ = {ds['sigma']}, t ≤ {ds['max_iter']}, "
                     f"{ds['n_lambdas']} λ, {len(ds['seeds'])} repetition(s) "
                     f"(seeds {ds['seeds'][0]}..{ds['seeds'][-1]}).")
        lines.append("")
        lines.append("| method | time (s) | test RMSE | val RMSE | selected | × nytro "
                     "| paper time (s) | paper RMSE | paper selected |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for row in ds["summary"]:
            paper = _paper_cells(ds, row["method"])
            if row["reps_ok"] == 0:
                cells = [row["note"] or row["status"], "", "", "", ""]
            else:
                ratio = ("" if row["ratio_to_nytro"] is None else
                         P.format_mean_std(row["ratio_to_nytro"], row["ratio_to_nytro_std"]) + "×")
                time_text = P.format_mean_std(row["time_s"], row["time_s_std"], "time")
                if row["reps_ok"] < row["reps"]:
                    time_text += f" ({row['reps_ok']}/{row['reps']} reps)"
                cells = [time_text, P.format_mean_std(row["test_rmse"], row["test_rmse_std"], "rmse"),
                         P.format_mean_std(row["val_rmse"], row["val_rmse_std"], "rmse"), _param_text(row), ratio]
            lines.append(f"| {_label(row['method'], ds['max_iter'])} | " + " | ".join(cells) + " | "
                         + " | ".join(paper) + " |")
        authors = ds.get("authors_window") or {}
        if authors:
            t = authors.get("t")
            lines.append("")
            lines.append(f"The authors' code with the window rule (tol {ds['window_tol']}) recorded: "
                         f"t* = {t if t is not None else 'not recorded'}, val RMSE {authors['val_rmse']}, "
                         f"test RMSE {authors['test_rmse']}.")
        notes = sorted({f"{_label(r['method'], ds['max_iter']).lstrip('↳ ')}: {r['note']}" for r in ds["records"]
                        if r["status"] != "ok" and r["note"]})
        if notes:
            lines.append("")
            lines.extend(f"- {note}" for note in notes)
        lines.append("")
    return "\n".join(lines)


def _command(args, datasets, methods) -> str:
    options = ["--datasets", ",".join(datasets), "--reps", str(args.reps), "--seed", str(args.seed),
               "--threads", str(args.threads), "--methods", ",".join(methods),
               "--peers" if args.peers else "--no-peers", "--peer-budget", f"{args.peer_budget:g}"]
    if args.skip_peers:
        options += ["--skip-peers", args.skip_peers]
    if args.data_dir:
        options += ["--data-dir", args.data_dir]
    if args.memory_budget_gb is not None:
        options += ["--memory-budget-gb", f"{args.memory_budget_gb:g}"]
    if args.m is not None:
        options += ["--m", str(args.m)]
    if args.max_iter is not None:
        options += ["--max-iter", str(args.max_iter)]
    if args.quick:
        options.append("--quick")
    options += ["--out", args.out]
    return P.command_line("table2", options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", default=",".join(DEFAULT_DATASETS),
                        help=f"comma-separated, from {', '.join(P.CONFIGS)} (default: {','.join(DEFAULT_DATASETS)})")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated, from {', '.join(METHODS)} (default: {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 5; 1 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first repetition (default 0)")
    parser.add_argument("--data-dir", default=None, help="dataset folder (default: $NYTRO_DATA)")
    parser.add_argument("--out", default="table2_results", help="output folder (default: table2_results)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for nytro and for the peers' BLAS (default: all available cores)")
    parser.add_argument("--peers", action=argparse.BooleanOptionalAction, default=True,
                        help="run the peers (nytro.reference, scikit-learn) on the same splits (default: yes)")
    parser.add_argument("--peer-budget", type=float, default=600.0,
                        help="seconds per peer fit; peers predicted or seen to exceed it are skipped (default 600)")
    parser.add_argument("--skip-peers", default="",
                        help=f"comma-separated peers not to run, from {', '.join(PEERS)} (default: none)")
    parser.add_argument("--memory-budget-gb", type=float, default=None,
                        help="memory for one fit; exact methods and peers above it are NA (default: half the RAM)")
    parser.add_argument("--m", type=int, default=None, help="override the paper's m (all datasets)")
    parser.add_argument("--max-iter", type=int, default=None, help="iterations at most (default 500; 50 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"CI smoke run: {QUICK['n_train']} training and {QUICK['n_test']} test rows per dataset, "
                             f"m={QUICK['m']}, {QUICK['max_iter']} iterations, 1 repetition")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="tqdm progress bars on stderr (default: when stderr is a terminal)")


def run(args) -> int:
    datasets = parse_list(args.datasets, list(P.CONFIGS) + list(P._ALIASES), "datasets")
    datasets = [P.dataset_config(name).name for name in datasets]
    methods = parse_list(args.methods, METHODS, "methods")
    skipped_peers = tuple(parse_list(args.skip_peers, PEERS, "peers", allow_empty=True))
    args.threads = P.resolve_threads(args.threads)
    if args.reps is None:
        args.reps = QUICK["reps"] if args.quick else 5
    if args.reps < 1:
        raise ValueError(f"--reps must be >= 1, got {args.reps}")
    # Checked before any data set is read: a budget of -1 or nan would skip every method
    # or peer, or none.
    for flag, value in (("--m", args.m), ("--max-iter", args.max_iter)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be >= 1, got {value}")
    for flag, value in (("--memory-budget-gb", args.memory_budget_gb), ("--peer-budget", args.peer_budget)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError(f"{flag} must be a finite number > 0, got {value}")
    max_iter = args.max_iter if args.max_iter is not None else (QUICK["max_iter"] if args.quick else P.MAX_ITER)
    budget = P.default_memory_budget() if args.memory_budget_gb is None else args.memory_budget_gb * 1e9
    os.makedirs(args.out, exist_ok=True)
    command = _command(args, datasets, methods)
    settings = Settings(reps=args.reps, seed=args.seed, threads=args.threads, max_iter=max_iter, m=args.m,
                        peers=args.peers, peer_budget_s=args.peer_budget, skipped_peers=skipped_peers,
                        memory_budget=budget, methods=methods,
                        quick=args.quick,
                        progress=sys.stderr.isatty() if args.progress is None else args.progress)
    started = time.perf_counter()
    with P.blas_threads(args.threads):
        info = P.machine_info(args.threads)
        if args.peers:
            settings.calibration = Calibration.measure()
            info["calibration"] = {"gemm_gflops": settings.calibration.gemm_flops / 1e9,
                                   "gemv_GBps": settings.calibration.gemv_bytes_per_s / 1e9,
                                   "note": "quick estimate at start, used only to predict the peers' times"}
        info["memory_budget_gb"] = budget / 1e9
        print(f"Table 2 on {', '.join(datasets)}: {args.reps} repetition(s), {args.threads} threads; "
              f"{P.machine_line(info)}", file=sys.stderr, flush=True)
        results = [run_dataset(name, args.data_dir, settings) for name in datasets]
    result = {"experiment": "table2", "quick": bool(args.quick), "command": command, "argv": sys.argv,
              "machine": info, "settings": {"reps": args.reps, "seed": args.seed, "threads": args.threads,
                                            "max_iter": max_iter, "methods": methods, "peers": args.peers,
                                            "skipped_peers": list(skipped_peers),
                                            "peer_budget_s": args.peer_budget, "memory_budget_gb": budget / 1e9,
                                            "m_override": args.m},
              "wall_seconds": time.perf_counter() - started, "datasets": results}
    json_path = os.path.join(args.out, "table2.json")
    with open(json_path, "w") as f:
        json.dump(P.json_ready(result), f, indent=1, allow_nan=False)
    table = markdown(result)
    with open(os.path.join(args.out, "table2.md"), "w") as f:
        f.write(table + "\n")
    P.write_command(args.out, "table2_command.txt", command)
    print(table)
    print(f"\nwritten: {json_path}, table2.md, table2_command.txt in {args.out} "
          f"({result['wall_seconds']:.1f} s)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nytro table2", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, MemoryError, OSError) as error:
        print(f"table2: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
