"""Every parameter of the path functions and estimators, declared once.

A :class:`Param` row gives a parameter's name, default, check and meaning, and the
fields of the C++ options struct (``cpp/include/nytro/options.hpp``) it sets. A
:class:`Family` lists the rows of one C++ struct. From these tables come:

* the options objects (:class:`NytroOptions`, :class:`IterativeOptions`,
  :class:`TikhonovOptions`): the *engineering* rows of a family, those that change how a
  fit is computed (time, memory, rounding) but not which model it selects;
* the C++ struct handed to ``nytro._core`` (:func:`core_options`), set field by field
  by name;
* the validation of the functions, the estimators and the options objects: each row's
  check is its parameter's only one, raising a ValueError that names it, run by
  :func:`check_parameters` on entry to every public function that takes the parameter
  (`FUNCTION_FAMILIES`) and to every estimator's fit, as scikit-learn's
  ``_parameter_constraints`` (what depends on the data is checked where it is known);
* the documentation: the Parameters sections of the functions', the estimators' (class
  decorator `documented`) and the options objects' docstrings, the estimators'
  Attributes sections (from `ATTRIBUTES`), and the table on the docs' options page.

KOLS has no C++ options struct: its family (`KOLS`) names the binding whose keywords its
rows set (`Family.keywords_of`). The estimators' parameters that set no C++ field (sigma,
the centres, the lambda grid, the hold-out split, ...) are rows of `SHARED`, declared
here for their one check and their one description.

The *statistical* rows (method, max_iter, step_size, stopping, ...) decide which model
is selected; they stay in the functions' and estimators' signatures. Each default
is the same at every layer (the C++ struct, the function, its NumPy twin in
``nytro.reference``, the estimator, the options object) except where a family's
``differences`` names the layer and says why; tests/api/test_options.py checks both.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from typing import Any, Callable

from . import _checks as chk


@dataclass(frozen=True)
class Param:
    """One parameter: `to_core(value)` checks a value (ValueError naming `name`) and gives
    the C++ struct's fields it sets, by their C++ names ("factor.method" is a field of the
    nested FactorOptions); `doc` is its numpydoc entry (type line, then the meaning).

    The row's check is the parameter's only one: every function and estimator that takes
    the parameter runs it on entry (`check_parameters`). `read_when` names the other
    parameters under which the parameter is read at all, by the values that read it
    (matern_nu only with kernel="matern"); otherwise any value is let through, as it is
    ignored. `invalid` is a value the check refuses, for the tests that every function
    and estimator taking the parameter refuses it by this row."""

    name: str
    default: Any
    to_core: Callable[[Any], dict]
    doc: str
    engineering: bool = False
    read_when: dict = dataclasses.field(default_factory=dict)
    invalid: Any = "not-a-value"

    def is_read(self, values: dict) -> bool:
        """Whether the parameter is read given the other parameters' `values` (a name
        missing from them is taken to read it)."""
        return all(values.get(other, choices[0]) in choices for other, choices in self.read_when.items())

    def check(self, value, values: dict | None = None) -> None:
        """ValueError naming the parameter for a value its row refuses; nothing where
        `values`, the other parameters, say it is not read."""
        if values is None or self.is_read(values):
            self.to_core(value)


def _choice(name: str, choices, field: str | None = None) -> Callable[[Any], dict]:
    def to_core(value):
        chk.check_choice(name, value, choices)
        return {field or name: value}
    return to_core


def _choosing(name: str, choices) -> Callable[[Any], None]:
    return lambda value: chk.check_choice(name, value, choices)


def _step_size(value) -> dict:
    rule, step = chk.check_step_size(value)
    return {"step_rule": rule, "step_size": step}


def _rank_tol(value) -> dict:
    return {"factor.rank_tol": chk.check_optional_positive("rank_tol", value, -1.0)}


def _jitter(value) -> dict:
    return {"factor.jitter": chk.check_optional_positive("jitter", value, 1e-10)}


def _storage(choices) -> Callable[[Any], dict]:
    return lambda value: {"storage": chk.check_storage(value, choices)}


def _checked_by(check: Callable[[Any], Any]) -> Callable[[Any], dict]:
    """The to_core of a row that sets no C++ struct field: `check` (a ValueError naming
    the parameter), then no field. The kernel and its parameters go to the core as its
    KernelSpec (chk.check_kernel, which runs the same checks); the shared rows' values
    are read by the estimators and the functions."""
    def to_core(value) -> dict:
        check(value)
        return {}
    return to_core


# A kernel's parameters are read by the kernels that have them: a Gaussian fit ignores
# matern_nu (as scikit-learn's RBF has no nu), a linear one sigma.
_MATERN = {"kernel": ("matern",)}
_WITH_BANDWIDTH = {"kernel": ("gaussian", "laplacian", "matern")}

KERNEL = Param("kernel", "gaussian", _checked_by(chk.check_kernel_name), """\
kernel : {"gaussian", "laplacian", "matern", "linear"} or callable
    The kernel, with r = ||(x - x') / sigma||: "gaussian" exp(-r^2 / 2) (scikit-learn's
    RBF); "laplacian" exp(-r) (Euclidean r; scikit-learn's laplacian_kernel uses the L1
    distance); "matern" scikit-learn's Matern(length_scale=sigma, nu=matern_nu), u =
    sqrt(2 matern_nu) r; "linear" x . x' (sigma unused). See nytro.kernel_matrix. A
    callable k(X, Z) returning the (len(X), len(Z)) kernel matrix is a kernel of one's
    own, taken by NytroRegressor and NytroClassifier only: evaluated in Python on blocks
    of rows against the centres, by the gram solver (solver "direct" or "spectral" and a
    storage are refused, ValueError), its own parameters (sigma unused, sigma_ None),
    uniform or given centres (user guide, "Kernels"). The
    core's functions and the other estimators refuse it (NotImplementedError).""")
MATERN_NU = Param("matern_nu", 1.5, _checked_by(chk.check_matern_nu), """\
matern_nu : {0.5, 1.5, 2.5}
    Order of the Matern kernel (scikit-learn's nu; named apart from `nu`, the
    nu-method's order); read by kernel="matern" only.""", read_when=_MATERN)
METHOD = Param("method", "gd", _choice("method", chk.METHODS), """\
method : {"gd", "nu", "cg", "hybrid"}
    The iterative regulariser, each taking one product with the operator (A^T A, or K
    on the full kernel) per iteration: "gd" is the paper's gradient descent (Landweber;
    method="gd", max_iter=500 is the paper's protocol, whose path is often still
    improving at 500 iterations); "nu" (Brakhage's nu-method) follows its path in about
    sqrt(t) iterations; "cg" is conjugate gradients on the same normal equations (its
    iterates taken from the reorthogonalised Lanczos basis of the Krylov space; once that
    space is invariant, the minimum-norm least-squares solution on it), which reaches its
    path's best hold-out error in tens to hundreds of iterations; "hybrid" grows the
    Krylov space CG searches and, at each of its sizes t, solves Tikhonov's problem
    projected onto it for every lambda of the lambdas' default grid (O(t) each), selecting (t,
    lambda) on the hold-out set: Nystrom KRLS's hold-out accuracy without its
    eigendecomposition, also where the best model is nearly unregularised. Without a
    hold-out set "hybrid" runs max_iter steps at hybrid_lambda (CG's iterate, up to
    rounding, for the grid's smallest lambda).""")
NU = Param("nu", 1.0, lambda value: {"nu": chk.check_nu(value)}, """\
nu : float
    Order of the nu-method (> 0).""")
MAX_ITER = Param("max_iter", 500, lambda value: {"max_iter": chk.check_int("max_iter", value, 1)}, """\
max_iter : int
    Iterations t_max at most (the paper's protocol uses 500). When the hold-out
    selection picks t = max_iter, the path may have been cut before its best model: the
    estimators' fit then emits scikit-learn's ConvergenceWarning.""")
STEP_SIZE = Param("step_size", "auto", _step_size, """\
step_size : {"auto", "paper"} or float
    Step of "gd" and "nu" ("cg" and "hybrid" need none): "auto" is 1 / lambda_max of the
    operator, the largest stable step (the authors' code); "paper" is gamma / n with gamma
    = 1 / max_i k(x_i, x_i) (1, or 1 / max ||x_i||^2 for kernel="linear"; the paper's
    text); a float is used as given (refused when unstable).""")
STOPPING = Param("stopping", "best", _choice("stopping", chk.STOPPING_RULES), """\
stopping : {"best", "relative", "window"}
    How t is picked from the validation path: "best" is its argmin; "relative" (the
    paper's text) stops once the RMSE has not improved by more than `tol` (relative,
    default 0.05) over the last `window` iterations; "window" (the authors' code) stops
    when a line fitted to the last `window` RMSEs falls by less than `tol` (absolute,
    default 1e-4) over the window. On the classification error (metric="error", the
    classifiers' selection="error"), a step function of t: the iterations while the
    error keeps its first value (the first iterates often predict one class everywhere)
    are not counted by `window` or `n_iter_no_change`, a tie is no improvement (a flat
    window stops the rules), and "window"'s `tol` is relative to the window's mean
    error.""")
TOL = Param("tol", None, lambda value: {"tol": chk.check_tol(value)}, """\
tol : float or None
    Threshold of the early stopping rules (None: the rule's default).""")
WINDOW = Param("window", 10, lambda value: {"window": chk.check_int("window", value, 2)}, """\
window : int
    Iterations the early stopping rules look back (>= 2).""")
N_ITER_NO_CHANGE = Param("n_iter_no_change", None, lambda value: {"patience": chk.check_patience(value)}, """\
n_iter_no_change : int or None
    With stopping="best", end the path this many iterations after its last improvement;
    None runs all max_iter iterations, as the paper's protocol does. The C++ field is
    ``patience``.""")
ITERATES = Param("iterates", "auto", _choice("iterates", chk.GD_ITERATES), """\
iterates : {"auto", "lanczos", "stepwise"}
    How "gd"'s iterates are computed ("nu" and "cg" always step): "lanczos" takes them
    from a Lanczos basis of the Krylov space, each within 64 machine epsilons of the
    stepwise iterate by a computed bound (64 float32 epsilons with storage="float32"),
    in tens of products instead of one per iteration (where the bound is not met within
    the basis' size limit, the path is stepped instead); "stepwise" takes one product per
    iteration, as the paper writes it; "auto" uses "lanczos" in float64 compute except
    with solver="spectral" (whose iterations already cost O(m)), and "stepwise" in
    float32 compute, whose rounding the basis would amplify.""", engineering=True)
METRIC = Param("metric", "rmse", _choice("metric", chk.METRICS), """\
metric : {"rmse", "error"}
    What the hold-out selection minimises: the RMSE, or the fraction of misclassified
    hold-out rows for targets coding classes as +-1 (the sign of one column, or the
    largest of one-vs-all columns); ties go to the smaller t and to the larger lambda.""")
HYBRID_LAMBDA = Param("hybrid_lambda", None,
                      lambda value: {"hybrid_lambda": chk.check_optional_positive("hybrid_lambda", value, -1.0)}, """\
hybrid_lambda : float or None
    Method "hybrid" without a hold-out set: the lambda of the projected problems (None:
    the grid's smallest), to refit at a selected (t, lambda).""")
FACTOR = Param("factor", "pivoted", _choice("factor", chk.FACTOR_METHODS, "factor.method"), """\
factor : {"pivoted", "qr", "cholesky"}
    How R with R R^T = pinv(K_mm) is computed: rank-revealing pivoted Cholesky (fast),
    the paper's pivoted QR + Cholesky (much slower: LAPACK's ?geqp3 is half
    matrix-vector work), or the authors' Cholesky of K_mm + jitter I.""", engineering=True)
RANK_TOL = Param("rank_tol", None, _rank_tol, """\
rank_tol : float or None
    The factor's relative rank cut: centres within this Schur residual of the others are
    dropped (None: m * machine epsilon, or 1e-4 with storage="float16").""", engineering=True)
JITTER = Param("jitter", 1e-10, _jitter, """\
jitter : float
    Added to K_mm's diagonal by factor="cholesky".""", engineering=True)
NYTRO_SOLVER = Param("solver", "auto", _choice("solver", chk.NYTRO_SOLVERS), """\
solver : {"auto", "direct", "gram", "spectral"}
    How products with A^T A are taken (the same iterates up to rounding): "direct"
    stores K_nm and reads it once per product; "gram" forms A^T A once from streamed row
    blocks (K_nm never stored) and iterates in m dimensions; "spectral" also
    eigendecomposes A^T A, after which an iteration costs O(m) (long "nu" or "cg" paths);
    "auto" picks by a cost model (the result's ``solver`` says which ran).""", engineering=True)
NYTRO_STORAGE = Param("storage", None, _storage(chk.NYTRO_STORAGES), """\
storage : {None, "float32", "float16"}
    Precision of the large stored matrices: "float32" keeps K_nm (direct) or A^T A (gram)
    and the hold-out kernel in float32 while computing in float64, half the memory and
    bytes per iteration; "float16" keeps K_nm in half precision (direct solver) and the
    hold-out kernel in float32; half precision's rounding would be amplified by R along
    centres that K_mm barely separates, so the factor's rank_tol then defaults to 1e-4
    and such centres are dropped (factor "pivoted" or "qr"; "cholesky" is refused): check
    the path against "float32" before relying on it. The linear kernel's K_nm is stored
    times a power of two that brings it to half's range, folded back exactly: its
    rounding is half's relative precision at any scale of X.
    np.float32 / np.float16 and their dtypes mean the same.""", engineering=True)
TIKHONOV_SOLVER = Param("solver", "eigh", _choice("solver", chk.TIKHONOV_SOLVERS), """\
solver : {"eigh", "cholesky"}
    "eigh": one eigendecomposition serves every lambda exactly; "cholesky": the paper's
    form, one Cholesky solve per lambda.""", engineering=True)
STORAGE = Param("storage", None, _storage(chk.STORAGES), """\
storage : {None, "float32"}
    "float32" computes the kernel blocks of A^T A and keeps the hold-out kernel in
    float32 while computing in float64 (Nystrom KRLS only).""", engineering=True)
N_THREADS = Param("n_threads", None, lambda value: {"n_threads": chk.check_n_threads(value)}, """\
n_threads : int or None
    Threads of the C++ core; results are the same for any count. None is
    ``nytro.default_n_threads()``: OMP_NUM_THREADS or a threadpoolctl limit, within the
    CPU affinity and the cgroup CPU quota.""", engineering=True)

RCOND = Param("rcond", None, lambda value: {"rcond": chk.check_optional_positive("rcond", value, -1.0)}, """\
rcond : float or None
    KOLS's pseudo-inverse cut: eigenvalues of K at or below rcond * max are treated as
    0 (None: n * machine epsilon).""", engineering=True)


# The parameters the estimators (and some functions) share beyond the families' rows:
# the bandwidth, the centres, the lambda grid, the hold-out split. They set no field of a
# C++ options struct; their rows give their one check (run on entry by every estimator
# and function that takes them: check_parameters) and their one description, from which
# every docstring is assembled (`documented`, `with_parameters`). What depends on the
# data (an ARD sigma's length, centre indices within X, n_centers within the training
# rows) is checked where the data are known.
SIGMA = Param("sigma", "auto", _checked_by(chk.check_bandwidth_or_auto), """\
sigma : "auto", float or array-like of shape (n_features,)
    Bandwidth of the kernel (scikit-learn's length_scale); an array gives each feature
    its own (ARD). Unused by kernel="linear". A number or an array is used as given.
    "auto" (the estimators only; the functions take a number or an array) chooses ARD
    bandwidths from the training rows: sigma_j = s * std_j, each feature's standard
    deviation (a constant feature takes the median of the others'), so that features
    in any unit, with any offset, need no scaler; the overall scale s starts at s0, the
    median distance between rows so scaled (on at most 200 training rows drawn by
    random_state), and is selected on the fit's hold-out set among s0 * 2^k (k from -2
    to 2, widened one step at a time while the best is at the edge, up to a factor 16
    either way), each candidate screened by a NYTRO "hybrid" fit (t and lambda of the
    paper's grid) at at most 200 centres and 10000 training rows, by the hold-out RMSE (of the +-1 codes for the
    classifiers, whose error rate ties across candidates on a small hold-out set). The
    same search runs with each feature's range in place of std_j, and the ranges win
    only where their best hold-out RMSE is lower by more than that RMSE's standard
    error (sigma_spread_). Where the fit has at least twice as many centres, a second
    round screens the winning spreads' scales again at up to 800 (at most n_centers),
    from the narrowest first-round candidate within that standard error of the best,
    widened while the best is at an edge: few centres favour wide kernels. The fit then
    runs once at the winner. Without a hold-out set
    (validation_fraction=None, KOLSRegressor) s = s0. On Dask arrays the spreads are
    those of all rows and s = s0 (no screening). The bandwidths used are sigma_, the
    candidates and their hold-out errors sigma_candidates_ and sigma_scores_.""", read_when=_WITH_BANDWIDTH)
def _check_n_centers(value):
    if isinstance(value, str) and value == "auto":
        return
    chk.check_int("n_centers", value, 1)


N_CENTERS = Param("n_centers", 1000, _checked_by(_check_n_centers), """\
n_centers : int or "auto"
    Nystrom centres m, drawn without replacement from the training rows (see
    center_selection); ignored when `centers` is given. The estimators cap it at the
    training rows left after the hold-out split, with a UserWarning, as scikit-learn's
    Nystroem caps n_components (the m used is n_centers_); the functions, and the
    estimators on Dask arrays, refuse more centres than rows (ValueError). "auto" grows
    m while the hold-out error still improves: the fit runs at m = 128, 256, 512, ...
    (up to every training row, at most 4096) and stops at the first size that does not
    lower the selected hold-out error by 1%, keeping the best (n_centers_candidates_,
    n_centers_scores_); in memory only, with a hold-out set.""")
CENTERS = Param("centers", None, _checked_by(chk.check_centers_form), """\
centers : array of shape (m, d), 1-D integer array, or None
    Your own centres: the points themselves, or indices of rows of the X given to fit
    (taken before the hold-out split, so they may be hold-out rows). None draws
    n_centers of them (center_selection).""")
CENTER_SELECTION = Param("center_selection", "uniform",
                         _checked_by(_choosing("center_selection", chk.CENTER_SELECTIONS)), """\
center_selection : {"uniform", "leverage"}
    How the centres are drawn from the training rows: uniformly, or by approximate
    ridge leverage scores (BLESS-style, nytro.centers), which put them where the
    kernel's feature space needs them: fewer in dense, redundant clusters, more on rows
    in regions of their own. Its cost, O(m^3 + m^2 d) a level whatever n, is measured
    against the fit's in benchmarks/bench_centers.py. Seeded by random_state,
    independent of n_threads; it does not use sample_weight.""")
LAMBDAS = Param("lambdas", None, _checked_by(chk.check_lambdas), """\
lambdas : array-like or None
    The Tikhonov grid (each multiplied by the number of training rows n inside); None is
    the paper's 100 values log-spaced in [1e-15, 1] times the kernel's bound kappa^2 =
    max_i k(x_i, x_i) over the training rows: 1 for the distance kernels (the paper's
    numbers), the largest ||x_i||^2 for the linear kernel, whose spectrum scales with
    the features (unscaled, the grid would over-regularise small features into the zero
    model). Method "hybrid" searches the same grid. Without a hold-out set exactly one
    lambda is needed.""")
VALIDATION_FRACTION = Param("validation_fraction", 0.2,
                            _checked_by(lambda value: chk.check_fraction("validation_fraction", value)), """\
validation_fraction : float in (0, 1) or None
    Share of the rows given to fit held out to select the regularisation (t, lambda, or
    both); None fits all rows without a hold-out set: the iterative estimators then run
    exactly max_iter iterations, the Tikhonov ones need exactly one lambda.""")
REFIT = Param("refit", False, _checked_by(lambda value: chk.check_bool("refit", value)), """\
refit : bool
    After the hold-out selection, fit again on all rows given to fit (training and
    hold-out parts together) at the selected t (n_iter_), lambda (lambda_, times the
    number of all rows), or both (method "hybrid"), without a hold-out set: the authors'
    "recompute". Nystrom centres stay those drawn from the training part; on the full
    kernel centers_ become all rows; a step rule (step_size "auto" or "paper") is
    evaluated on all rows. The validation path and the selection are those of the
    hold-out fit; coef_ is the refitted model's. Ignored without a hold-out set
    (validation_fraction=None).""")
FIT_INTERCEPT = Param("fit_intercept", True, _checked_by(lambda value: chk.check_bool("fit_intercept", value)), """\
fit_intercept : bool
    Fit each output column's weighted mean over the rows given to fit as a constant
    term, intercept_: the path is fitted to the targets less it, and predict adds it
    back. The kernel model has no constant term of its own, and early stopping and
    lambda both shrink the part of the targets' mean it represents towards zero: targets
    whose mean is large against their spread (temperatures in kelvin, prices, years) are
    fitted worse without it. False fits the paper's model, f(x) = k(x, centers_) @ coef_
    (the paper's experiments pass it). kernel="linear" does not centre the features:
    its x . x' model has no constant term either, and a target linear through the origin
    is fitted better with fit_intercept=False. The classifiers have no intercept: their +-1
    codes are fitted as they are, as the hold-out error scores the path's own
    decision values.""")
RANDOM_STATE = Param("random_state", None, _checked_by(chk.check_random_state), """\
random_state : int, RandomState or None
    Seeds the hold-out split and the centres.""")
VERBOSE = Param("verbose", 0, _checked_by(chk.check_verbose), """\
verbose : int
    Progress on stderr: 0 prints nothing; 1 draws one tqdm bar for each stage of the
    fit that lasts (the kernel, the factor, A^T A, the iterations, ...), with its
    elapsed time and an estimate of what is left, and ends with one line: the selected
    t and lambda, sigma, m, why the path stopped, and the fit's time; 2 and more print
    the core's counters, "stage done/total" a line, then the same summary.""")
DTYPE = Param("dtype", None, _checked_by(lambda value: chk.float_dtype_name("dtype", value, chk.DTYPES)), """\
dtype : {None, "float32", "float64"}
    Compute precision; None computes in float32 for float32 X, float64 otherwise.
    NumPy's spellings (np.float32, np.dtype("float64"), "f4", float) are accepted.""")
N_JOBS = Param("n_jobs", None, _checked_by(chk.check_n_jobs), """\
n_jobs : int or None
    scikit-learn's name for the core's threads, changing only the time of a fit (the
    model is the same for any count): a positive count, or -1 for every CPU (-2 all
    but one, ..., within the CPU affinity and the cgroup quota, as joblib counts them);
    None leaves the count to n_threads, whose None takes what the surrounding context
    allows (OMP_NUM_THREADS, threadpoolctl, and so inside GridSearchCV(n_jobs=k)'s
    worker processes joblib's limit of cpu_count // k threads). n_jobs and n_threads
    both given must agree (ValueError otherwise): neither overrides the other. See the
    user guide, "Parallelism".""")
SELECTION = Param("selection", "error", _checked_by(_choosing("selection", chk.SELECTIONS)), """\
selection : {"error", "rmse"}
    What the classifiers' hold-out selection minimises: the fraction of misclassified
    hold-out rows, or the RMSE of the +-1 coded targets (the regressors' choice). Error
    rates tie often: a tie goes to the smaller t and to the larger lambda (the stronger
    regularisation).""")

# NytroLogisticClassifier's own rows (nytro._logistic): its iterations and its selection.
LOGISTIC_METHOD = Param("method", "nesterov", _checked_by(_choosing("method", ("newton", "nesterov", "gd"))), """\
method : {"nesterov", "newton", "gd"}
    The iterations on the unregularised logistic risk over the Nystrom features, from
    the zero model, each iterate a model of the path: "gd" gradient descent at step 1/L,
    L the gradient's Lipschitz bound (1/4, or 1/2 for the softmax, times lambda_max of
    the weighted features' Gram matrix over n); "nesterov" the same step from Nesterov's
    extrapolated point (about the square root of gd's iterations to a given risk);
    "newton" truncated Newton-CG steps (at most 50 CG steps each), each changing no
    training logit by more than 4 and shortened by backtracking, so that the path stays
    finite on separable data (it then ends once the training risk is below 1e-12).
    "newton" needs the fewest iterations (tens; set max_iter and n_iter_no_change
    lower) but each costs up to 50 passes over the features.""")
LOGISTIC_SELECTION = Param("selection", "log_loss", _checked_by(_choosing("selection", ("log_loss", "error"))), """\
selection : {"log_loss", "error"}
    What the hold-out selection of the iterate minimises: the hold-out log loss
    (weighted by the hold-out rows' sample weights), or the fraction of misclassified
    hold-out rows (each counted once; ties go to the earlier iterate). Both are recorded
    for every iterate (validation_log_loss_, validation_error_).""")
LOGISTIC_MAX_ITER = dataclasses.replace(MAX_ITER, default=1000, doc="""\
max_iter : int
    Iterations at most. When the hold-out selection picks t = max_iter, the path may
    have been cut before its best model: fit then emits scikit-learn's
    ConvergenceWarning.""")
LOGISTIC_N_ITER_NO_CHANGE = dataclasses.replace(N_ITER_NO_CHANGE, default=100, doc="""\
n_iter_no_change : int or None
    End the path this many iterations after the last improvement of the selected
    hold-out score; None runs all max_iter iterations.""")
# Every row outside the families' tables, by name.
SHARED = {p.name: p for p in (SIGMA, N_CENTERS, CENTERS, CENTER_SELECTION, LAMBDAS, VALIDATION_FRACTION, REFIT,
                              FIT_INTERCEPT, RANDOM_STATE, N_JOBS, VERBOSE, DTYPE, SELECTION)}


@dataclass(frozen=True)
class Attribute:
    """One fitted attribute shared by estimators: its numpydoc entry (type line, then the
    meaning), from which their Attributes sections are assembled (`documented`)."""

    name: str
    doc: str


# The estimators' fitted attributes, each described once for every estimator that has it.
ATTRIBUTES = {a.name: a for a in (
    Attribute("sigma_", """\
sigma_ : float, ndarray of shape (n_features,) or None
    The bandwidths the model uses (predict reads them, not sigma): sigma as given
    (a float, or an ARD array), the selected ARD bandwidths with sigma="auto", None for
    kernel="linear"."""),
    Attribute("sigma_candidates_", """\
sigma_candidates_ : ndarray of shape (n_candidates,) or None
    With sigma="auto": the overall scales s of the last screening round, increasing
    (each candidate's bandwidths are s times the features' spreads; sigma_ is the
    winner's): the second round's where the fit has at least twice the first round's
    200 centres, else the first's; one, the distance heuristic s0, without a hold-out
    set. None with an explicit sigma."""),
    Attribute("sigma_scores_", """\
sigma_scores_ : ndarray of shape (n_candidates,) or None
    The hold-out RMSE of each of sigma_candidates_ (of the +-1 codes for the
    classifiers; the best over t and the lambda grid of a screening fit at that round's
    centres: 200 at most in the first, 800 at most in the second); sigma_ is the
    argmin's. NaN without a hold-out set. None with an explicit sigma."""),
    Attribute("sigma_spread_", """\
sigma_spread_ : {"deviation", "range"} or None
    With sigma="auto": the features' spreads that sigma_ is s times: their standard
    deviations over the training rows, or their ranges (largest less smallest value),
    which were screened as well and replaced the deviations only where their best
    hold-out RMSE was lower by more than its standard error (1 / sqrt(2 n_val)
    relatively): heavy-tailed features, whose deviation understates the distances the
    kernel must reach. "deviation" on Dask arrays and without a hold-out set. None with
    an explicit sigma."""),
    Attribute("centers_", """\
centers_ : ndarray of shape (m, n_features)
    The rows predict evaluates the kernel at: the Nystrom centres (the Nystrom
    estimators), or the training part of the rows given to fit (the full-kernel ones;
    all of them after a refit)."""),
    Attribute("n_centers_", """\
n_centers_ : int
    The number of centres m the fit used: n_centers, capped at the training rows
    (with a UserWarning), the size selected with n_centers="auto", or the number of
    rows of `centers` when given."""),
    Attribute("n_centers_candidates_", """\
n_centers_candidates_ : ndarray of shape (n_sizes,) or None
    With n_centers="auto", the sizes m tried, smallest first (the last one tried is
    where growth stopped). None otherwise."""),
    Attribute("n_centers_scores_", """\
n_centers_scores_ : ndarray of shape (n_sizes,) or None
    With n_centers="auto", the hold-out error of the model selected at each of
    n_centers_candidates_ (RMSE, or the error rate with selection="error"). None
    otherwise."""),
    Attribute("coef_", """\
coef_ : ndarray of shape (m,) or (m, n_outputs)
    The model at the selected regularisation: predict(X) = k(X, centers_) @ coef_
    + intercept_."""),
    Attribute("intercept_", """\
intercept_ : float or ndarray of shape (n_outputs,)
    The constant term: each output's weighted mean over the rows given to fit with
    fit_intercept=True, else 0."""),
    Attribute("n_iter_", """\
n_iter_ : int
    The selected iteration t."""),
    Attribute("validation_rmse_", """\
validation_rmse_ : ndarray
    The hold-out RMSE along the path: after each iteration (the iterative estimators;
    "hybrid" and "cg" take no products past the rank of their Krylov space, and their
    path ends there), or for each lambda of the grid (the Tikhonov ones). Empty without
    a hold-out set."""),
    Attribute("step_size_", """\
step_size_ : float
    The step used (0 for "cg" and "hybrid")."""),
    Attribute("products_", """\
products_ : int
    Products with the operator (A^T A, or K on the full kernel) taken: fewer than the
    iterations with Lanczos iterates."""),
    Attribute("lambda_", """\
lambda_ : float or None
    The selected lambda (before the factor n): the Tikhonov estimators', or method
    "hybrid"'s, selected with t; None for the other methods."""),
    Attribute("lambdas_", """\
lambdas_ : ndarray
    The lambda grid the selection searched (before the factor n)."""),
    Attribute("rank_", """\
rank_ : int
    Columns of the Nystrom factor R (centres that K_mm barely separates from the others
    are dropped)."""),
    Attribute("solver_", """\
solver_ : str
    The solver that ran ("direct", "gram" or "spectral")."""),
)}


def attributes_section(names, notes: dict | None = None, indent: str = "    ") -> str:
    """A numpydoc Attributes section of the fitted attributes `names` (rows of
    ATTRIBUTES), each with a note from `notes` by name (a sentence added to its meaning)."""
    lines = []
    for name in names:
        lines += ATTRIBUTES[name].doc.splitlines()
        note = (notes or {}).get(name)
        lines += ["    " + line for line in textwrap.wrap(note, 84)] if note else []
    entries = "\n".join(indent + line if line else line for line in lines)
    return f"{indent}Attributes\n{indent}----------\n{entries}\n"


@dataclass(frozen=True)
class Family:
    """The parameters of one C++ options struct (`core`, a class of nytro._core of that
    name, and the name of the options object), in the order they are checked.
    `differences` maps (layer, name) to the reason where a layer's default is not the
    row's: layer is "core" (the C++ struct's default) or an estimator's class name.

    A family without a C++ struct names in `keywords_of` the binding (a function of
    nytro._core, without its dtype suffix) whose keyword arguments its rows set by the
    same names; `core` then names the options object only."""

    core: str
    params: tuple
    differences: dict = dataclasses.field(default_factory=dict)
    keywords_of: str | None = None

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    @property
    def names(self) -> tuple:
        return tuple(p.name for p in self.params)

    @property
    def option_names(self) -> tuple:
        return tuple(p.name for p in self.params if p.engineering)


_KERNEL = (KERNEL, MATERN_NU)
_ITERATION = (METHOD, NU, MAX_ITER, STEP_SIZE, STOPPING, TOL, WINDOW, N_ITER_NO_CHANGE, ITERATES, METRIC,
              HYBRID_LAMBDA)
_NYSTROM_FACTOR = (FACTOR, RANK_TOL, JITTER)

NYTRO = Family("NytroOptions", _KERNEL + _ITERATION + _NYSTROM_FACTOR + (NYTRO_SOLVER, NYTRO_STORAGE, N_THREADS), {
    ("NytroRegressor", "method"):
        "the functions compute the paper's algorithm by default; the estimator defaults to the "
        "method that reaches the best hold-out error in the fewest products (user guide, 'Method')",
    ("NytroRegressor", "n_iter_no_change"):
        "the functions run the paper's whole path; the estimator ends it 50 iterations after its "
        "best, which 'hybrid' and 'cg' reach within tens to hundreds of iterations",
})
LANDWEBER = Family("IterativeOptions", _KERNEL + tuple(dataclasses.replace(p, default="paper") if p is STEP_SIZE else p
                                             for p in _ITERATION) + (N_THREADS,), {
    ("core", "step_size"):
        "Landweber's functions and estimator take the paper's step 1/n, as its experiments do; "
        "the C++ IterativeOptions default, 'auto', is shared with NYTRO",
})
NKRLS = Family("TikhonovOptions", _KERNEL + _NYSTROM_FACTOR + (TIKHONOV_SOLVER, STORAGE, N_THREADS, METRIC))
KRLS = Family("TikhonovOptions", _KERNEL + (TIKHONOV_SOLVER, N_THREADS, METRIC))
# NytroLogisticClassifier's rows: its path is NumPy iterations over the core's kernel and
# factor (nytro._logistic), so it has no C++ struct and no options object; n_threads are
# the kernel's and the factor's threads.
LOGISTIC = Family("LogisticOptions", _KERNEL + (LOGISTIC_METHOD, LOGISTIC_MAX_ITER, LOGISTIC_N_ITER_NO_CHANGE,
                                                 LOGISTIC_SELECTION)
                  + tuple(dataclasses.replace(p, engineering=False) for p in (FACTOR, N_THREADS)),
                  keywords_of="logistic_path")
# KOLS has no iterations and no factor: the binding takes its two options as keywords.
KOLS = Family("KOLSOptions", _KERNEL + (RCOND, N_THREADS), keywords_of="kols")
# The rows of the kernel functions (kernel_matrix, gaussian_kernel, kernel_predict), which
# hand the kernel to the core as its KernelSpec and take no options object.
KERNEL_FUNCTIONS = Family("KernelSpec", _KERNEL + (N_THREADS,))
# nystrom_factor's: the factor's rows, its method by the name the function gives it.
NYSTROM_FACTOR = Family("FactorOptions", (
    dataclasses.replace(FACTOR, name="method", to_core=_choice("method", chk.FACTOR_METHODS, "factor.method"),
                        doc=FACTOR.doc.replace("factor :", "method :", 1)), RANK_TOL, JITTER, N_THREADS))


def core_options(family: Family, values: dict, **fields):
    """The C++ struct of `family` (a nytro._core object) from `values` (a mapping that
    holds every name of the family, such as a function's locals()), each checked by its
    row and set by its C++ field name; then `fields` set as given (validation_weights).
    For a family without a struct (`keywords_of`), the binding's keyword arguments, a
    dict by the same names."""
    for param in family.params:
        if param.is_read(values):
            fields = {**param.to_core(values[param.name]), **fields}
    if family.keywords_of is not None:
        return fields
    from . import _core
    core = getattr(_core, family.core)()
    for path, value in fields.items():
        owner, _, name = path.rpartition(".")
        setattr(getattr(core, owner) if owner else core, name, value)
    return core


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # an array or another object without a truth value
        return False


def merged(family: Family, options, values: dict) -> dict:
    """Every parameter of `family`: from `values` (keywords as given, such as a
    function's locals(); a missing name is its default) with the fields of an options
    object folded in. A keyword left at its default takes the object's value; a keyword
    and an object field that both differ from the default must agree (ValueError naming
    the option otherwise)."""
    cls = OPTIONS_CLASSES[family.core]
    if options is not None and not isinstance(options, cls):
        raise ValueError(f"options must be a nytro.{cls.__name__} or None, got {options!r}")
    out = {}
    for param in family.params:
        given = values.get(param.name, param.default)
        if options is not None and param.engineering:
            field = getattr(options, param.name)
            if _same(given, param.default):
                given = field
            elif not _same(field, param.default) and not _same(field, given):
                raise ValueError(f"{param.name} is given twice, {given!r} as a keyword and {field!r} in options")
        out[param.name] = given
    for param in OPTIONS_PARAMS[family.core] if options is not None else ():
        if param.name not in family.names and not _same(getattr(options, param.name), param.default):
            raise ValueError(f"options.{param.name}={getattr(options, param.name)!r} has no effect here "
                             "(KRLS has no Nystrom factor and stores no kernel); leave it at its default")
    return out


def options_object(family: Family, values: dict):
    """The options object of `family`'s struct holding the options in `values` (the
    defaults for the fields the family does not use)."""
    params = OPTIONS_PARAMS[family.core]
    return OPTIONS_CLASSES[family.core](**{p.name: values.get(p.name, p.default) for p in params})


def parameters_doc(params, indent: str = "    ", defaults: dict | None = None, notes: dict | None = None) -> str:
    """The numpydoc entries of `params`, each with its default (the row's, or the one in
    `defaults` by name; none for inspect.Parameter.empty, a required parameter) and a
    note from `notes` by name (a sentence added to its meaning), indented by `indent`."""
    lines = []
    for param in params:
        head, *body = param.doc.splitlines()
        default = (defaults or {}).get(param.name, param.default)
        note = (notes or {}).get(param.name)
        lines += [head if default is inspect.Parameter.empty else f"{head}, default={default!r}"] + body
        lines += ["    " + line for line in textwrap.wrap(note, 84)] if note else []
    return "\n".join(indent + line if line else line for line in lines)


def declared(family: Family | None, name: str) -> Param | None:
    """The row that describes parameter `name` of a function or estimator of `family`:
    the family's, else the shared one (SHARED); None where none is declared."""
    if family is not None and name in family.names:
        return family.param(name)
    return SHARED.get(name)


# The shared rows the public functions take beside their family's (the path functions
# document them with it; the centres' samplers take n_centers).
FUNCTION_SHARED = ("sigma", "lambdas", "dtype", "n_centers")


def check_parameters(family: Family | None, values: dict, shared=tuple(SHARED)) -> None:
    """Checks each parameter in `values` (a function's locals(), an estimator's
    get_params()) that has a row, the family's or a shared one named in `shared`, by
    that row: a ValueError naming the first refused, before any work. Parameters without
    a row (the data, progress, options) are left to their readers."""
    for name, value in values.items():
        row = declared(family, name)
        if row is not None and (family is not None and name in family.names or name in shared):
            row.check(value, values)


def parameters_section(names, family: Family | None, *, defaults: dict | None = None, notes: dict | None = None,
                       shared=tuple(SHARED), indent: str = "    ") -> str:
    """A numpydoc Parameters section for a function or estimator whose parameters are
    `names` (in its signature's order): the declared statistical rows (family rows, and
    the shared rows named in `shared`), then `options` and the shortcuts for its fields
    (the engineering rows in `names`). Names without a row are left to the summary."""
    rows = [declared(family, name) for name in names]
    rows = [p for p in rows if p is not None and (family is not None and p.name in family.names or p.name in shared)]
    statistical = [p for p in rows if not p.engineering]
    shortcuts = ", ".join(p.name for p in rows if p.engineering)
    entries = parameters_doc(statistical, indent, defaults, notes)
    if family is not None and "options" in names:
        entries += f"""
{indent}options : {family.core} or None, default=None
{indent}    How the fit is computed: time, memory and rounding (see :class:`~nytro.{family.core}`,
{indent}    where each field is described); None: its defaults."""
    if shortcuts:
        entries += f"""
{indent}{shortcuts}
{indent}    Shortcuts for the fields of `options` of the same name, with the same defaults (an
{indent}    estimator's can be searched with set_params and GridSearchCV): a shortcut left at
{indent}    its default takes the value in `options`; a shortcut and a field both set to
{indent}    different values are refused."""
    return f"{indent}Parameters\n{indent}----------\n{entries}\n"


def with_parameters(doc: str, family: Family, options_class: str | None = None, signature=None) -> str:
    """A function's docstring `doc` followed by a Parameters section generated from
    `family`'s rows (statistical ones, then `options`, then the options' shortcuts).
    `signature` (an inspect.Signature): the function's, whose order and defaults the
    section follows, adding the shared rows of sigma, lambdas and dtype; None: the
    family's rows in their order. `options_class` is the family's options object
    (`family.core`), kept for older callers."""
    if signature is None:
        names, defaults = list(family.names) + ["options"], None
    else:
        names = list(signature.parameters)
        defaults = {name: parameter.default for name, parameter in signature.parameters.items()}
    section = parameters_section(names, family, defaults=defaults, shared=FUNCTION_SHARED)
    return f"{doc.rstrip()}\n\n{section}    "


def document_function(function: Callable, family: Family) -> Callable:
    """`function` with its docstring followed by the Parameters section of its signature's
    declared parameters (with_parameters)."""
    function.__doc__ = with_parameters(function.__doc__, family, signature=inspect.signature(function))
    return function


_PARAMETERS_MARK = re.compile(r"^[ \t]*\{parameters\}[ \t]*\n", re.MULTILINE)
_ATTRIBUTES_MARK = re.compile(r"^[ \t]*\{attributes\}[ \t]*\n", re.MULTILINE)


def documented(cls: type) -> type:
    """Class decorator of the estimators: the line `{parameters}` of the class docstring
    becomes the Parameters section of its __init__'s parameters, each entry the declared
    row's (from the estimator's `_family` or SHARED) with the estimator's default; where
    the estimator's default differs from the functions' (the family's `differences`), the
    entry says so and why. A line `{attributes}` becomes the Attributes section of the
    class's own `_attributes` (attributes_section)."""
    signature = inspect.signature(cls.__init__)
    names = [name for name in signature.parameters if name != "self"]
    defaults = {name: signature.parameters[name].default for name in names}
    family = cls._family
    notes = {}
    for klass in reversed(cls.__mro__):
        for (layer, name), why in (family.differences.items() if family is not None else ()):
            if layer == klass.__name__:
                notes[name] = f"The functions default to {family.param(name).default!r}: {why}."
    section = parameters_section(names, family, defaults=defaults, notes=notes)
    doc, count = _PARAMETERS_MARK.subn(lambda match: section, cls.__doc__)
    if count != 1:
        raise ValueError(f"{cls.__name__}'s docstring needs one line {{parameters}}, found {count}")
    # A line {attributes}: the Attributes section of the class's `_attributes`, from their
    # rows (ATTRIBUTES), with the class's `_attribute_notes`.
    attributes = attributes_section(cls.__dict__.get("_attributes", ()), cls.__dict__.get("_attribute_notes"))
    doc, count = _ATTRIBUTES_MARK.subn(lambda match: attributes, doc)
    if count > 1 or count != ("_attributes" in cls.__dict__):
        raise ValueError(f"{cls.__name__} needs a line {{attributes}} in its docstring exactly where it declares "
                         f"_attributes, found {count}")
    cls.__doc__ = doc
    return cls


def _docstring(summary: str, params) -> str:
    return f"""{summary}

    Parameters
    ----------
{parameters_doc(params)}
    """


def _options_class(name: str, summary: str, params) -> type:
    """A frozen dataclass of `params` (engineering rows), checked on construction."""
    def __post_init__(self):
        for param in params:
            param.to_core(getattr(self, param.name))

    cls = dataclasses.make_dataclass(
        name, [(p.name, Any, dataclasses.field(default=p.default)) for p in params],
        namespace={"__post_init__": __post_init__, "__module__": __name__}, frozen=True,
        **({"kw_only": True} if sys.version_info >= (3, 10) else {}))
    cls.__doc__ = _docstring(summary, params)
    return cls


# The fields of each options object, by the C++ struct's name: the engineering rows of
# the family that uses all of the struct (KRLS uses a part of TikhonovOptions).
OPTIONS_PARAMS = {"NytroOptions": [p for p in NYTRO.params if p.engineering],
                  "IterativeOptions": [p for p in LANDWEBER.params if p.engineering],
                  "TikhonovOptions": [p for p in NKRLS.params if p.engineering],
                  "KOLSOptions": [p for p in KOLS.params if p.engineering]}
NytroOptions = _options_class(
    "NytroOptions", "How NYTRO's path is computed: options of nytro_path and NytroRegressor.\n\n"
    "    They change time, memory and rounding rather than the statistical model (rank_tol, and\n"
    "    storage=\"float16\" through it, also decide which nearly dependent centres are dropped).\n"
    "    Each may also be given as a keyword of the function or the estimator (where it has one);\n"
    "    a keyword and an options field that both differ from the default must agree.",
    OPTIONS_PARAMS["NytroOptions"])
IterativeOptions = _options_class(
    "IterativeOptions", "How Landweber's path is computed: options of landweber_path and LandweberRegressor.\n\n"
    "    As NytroOptions, for the iterations on the full kernel.",
    OPTIONS_PARAMS["IterativeOptions"])
TikhonovOptions = _options_class(
    "TikhonovOptions", "How the Tikhonov paths are computed: options of nkrls_path, krls_path and their\n"
    "    estimators (krls_path has no Nystrom factor and no stored kernel: it refuses the\n"
    "    factor's and storage's fields set).\n\n"
    "    As NytroOptions otherwise.",
    OPTIONS_PARAMS["TikhonovOptions"])

KOLSOptions = _options_class(
    "KOLSOptions", "How KOLS is computed: options of kols and KOLSRegressor.\n\n"
    "    As NytroOptions (KOLS has no C++ options struct: the binding takes them as keywords).",
    OPTIONS_PARAMS["KOLSOptions"])

OPTIONS_CLASSES = {"NytroOptions": NytroOptions, "IterativeOptions": IterativeOptions,
                   "TikhonovOptions": TikhonovOptions, "KOLSOptions": KOLSOptions}


FAMILIES = {"nytro": NYTRO, "landweber": LANDWEBER, "nkrls": NKRLS, "krls": KRLS, "kols": KOLS}

# nytro.machine_rates's: it probes the core's kernels with n_threads threads.
MACHINE_RATES = Family("machine_rates", (N_THREADS,))

# The rows of each public function of nytro (and of a submodule, "centers.leverage_centers")
# that takes declared parameters: its family's,
# and of the shared rows those in FUNCTION_SHARED; each checked on entry (check_parameters).
FUNCTION_FAMILIES = {"nytro_path": NYTRO, "landweber_path": LANDWEBER, "nkrls_path": NKRLS, "krls_path": KRLS,
                     "kols": KOLS, "kernel_matrix": KERNEL_FUNCTIONS, "gaussian_kernel": KERNEL_FUNCTIONS,
                     "kernel_predict": KERNEL_FUNCTIONS, "nystrom_factor": NYSTROM_FACTOR,
                     "machine_rates": MACHINE_RATES, "centers.leverage_centers": KERNEL_FUNCTIONS,
                     "centers.approximate_leverage_scores": KERNEL_FUNCTIONS,
                     "centers.exact_leverage_scores": KERNEL_FUNCTIONS}
