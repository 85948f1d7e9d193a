"""Every parameter of the path functions and estimators, declared once.

A :class:`Param` row gives a parameter's name, default, check and meaning, and the
fields of the C++ options struct (``cpp/include/nytro/options.hpp``) it sets. A
:class:`Family` lists the rows of one C++ struct. From these tables come:

* the options objects (:class:`NytroOptions`, :class:`IterativeOptions`,
  :class:`TikhonovOptions`): the *engineering* rows of a family, those that change how a
  fit is computed (time, memory, rounding) but not which model it selects;
* the C++ struct handed to ``nytro._core`` (:func:`core_options`), set field by field
  by name;
* the validation of the functions, the estimators and the options objects (each row's
  check, raising a ValueError that names the parameter);
* the options' documentation (the options objects' docstrings and the table in the user
  guide).

The *statistical* rows (method, max_iter, step_size, stopping, ...) decide which model
is selected; they stay in the functions' and estimators' signatures. Each default
is the same at every layer (the C++ struct, the function, its NumPy twin in
``nytro.reference``, the estimator, the options object) except where a family's
``differences`` names the layer and says why; tests/test_options.py checks both.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Any, Callable

from . import _checks as chk


@dataclass(frozen=True)
class Param:
    """One parameter: `to_core(value)` checks a value (ValueError naming `name`) and gives
    the C++ struct's fields it sets, by their C++ names ("factor.method" is a field of the
    nested FactorOptions); `doc` is its numpydoc entry (type line, then the meaning)."""

    name: str
    default: Any
    to_core: Callable[[Any], dict]
    doc: str
    engineering: bool = False


def _choice(name: str, choices, field: str | None = None) -> Callable[[Any], dict]:
    def to_core(value):
        chk.check_choice(name, value, choices)
        return {field or name: value}
    return to_core


def _step_size(value) -> dict:
    rule, step = chk.check_step_size(value)
    return {"step_rule": rule, "step_size": step}


def _rank_tol(value) -> dict:
    return {"factor.rank_tol": chk.check_optional_positive("rank_tol", value, -1.0)}


def _jitter(value) -> dict:
    return {"factor.jitter": chk.check_optional_positive("jitter", value, 1e-10)}


def _storage(choices) -> Callable[[Any], dict]:
    return lambda value: {"storage": chk.check_storage(value, choices)}


def _kernel(value) -> dict:
    chk.check_choice("kernel", value, chk.KERNELS)
    return {}  # the kernel goes to the core beside sigma (chk.check_kernel), not in the struct


# matern_nu is checked with the kernel and sigma by chk.check_kernel, where the kernel says
# whether it is read (a Gaussian fit ignores it, as scikit-learn's RBF has no nu).
KERNEL = Param("kernel", "gaussian", _kernel, """\
kernel : {"gaussian", "laplacian", "matern", "linear"}
    The kernel, with bandwidth sigma (one, or one per feature): "gaussian" exp(-r^2 / 2),
    "laplacian" exp(-r) with r the Euclidean distance scaled by sigma, "matern"
    (scikit-learn's Matern(length_scale=sigma, nu=matern_nu)), "linear" x . z (sigma
    unused); see nytro.kernel_matrix.""")
MATERN_NU = Param("matern_nu", 1.5, lambda value: {}, """\
matern_nu : {0.5, 1.5, 2.5}
    Smoothness of kernel="matern" (read by it only; not the nu-method's order nu).""")
METHOD = Param("method", "gd", _choice("method", chk.METHODS), """\
method : {"gd", "nu", "cg", "hybrid"}
    The iterative regulariser: "gd" is the paper's gradient descent (Landweber); "nu"
    (Brakhage's nu-method) follows its path in about sqrt(t) iterations; "cg" is
    conjugate gradients on the same normal equations; "hybrid" solves Tikhonov's
    problem projected onto CG's growing Krylov space for every lambda of the paper's
    grid and selects (t, lambda) on the hold-out set.""")
NU = Param("nu", 1.0, lambda value: {"nu": chk.check_nu(value)}, """\
nu : float
    Order of the nu-method (> 0).""")
MAX_ITER = Param("max_iter", 500, lambda value: {"max_iter": chk.check_int("max_iter", value, 1)}, """\
max_iter : int
    Iterations t_max at most (the paper's protocol uses 500).""")
STEP_SIZE = Param("step_size", "auto", _step_size, """\
step_size : {"auto", "paper"} or float
    Step of "gd" and "nu" ("cg" and "hybrid" need none): "auto" is 1 / lambda_max of the
    operator, the largest stable step (the authors' code); "paper" is gamma / n with gamma
    = 1 / max_i k(x_i, x_i) (the paper's text); a float is used as given (refused when
    unstable).""")
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
    the path against "float32" before relying on it.
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


@dataclass(frozen=True)
class Family:
    """The parameters of one C++ options struct (`core`, a class of nytro._core of that
    name), in the order they are checked. `differences` maps (layer, name) to the reason
    where a layer's default is not the row's: layer is "core" (the C++ struct's default)
    or an estimator's class name."""

    core: str
    params: tuple
    differences: dict = dataclasses.field(default_factory=dict)

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


def core_options(family: Family, values: dict, **fields):
    """The C++ struct of `family` (a nytro._core object) from `values` (a mapping that
    holds every name of the family, such as a function's locals()), each checked by its
    row and set by its C++ field name; then `fields` set as given (validation_weights)."""
    from . import _core
    core = getattr(_core, family.core)()
    for param in family.params:
        fields = {**param.to_core(values[param.name]), **fields}
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


def parameters_doc(params, indent: str = "    ") -> str:
    """The numpydoc entries of `params` (each with its default), indented by `indent`."""
    lines = []
    for param in params:
        head, *body = param.doc.splitlines()
        lines += [f"{head}, default={param.default!r}"] + body
    return "\n".join(indent + line if line else line for line in lines)


def with_parameters(doc: str, family: Family, options_class: str) -> str:
    """A function's docstring `doc` followed by a Parameters section generated from
    `family`'s rows (statistical ones, then `options`, then the options' shortcuts)."""
    statistical = [p for p in family.params if not p.engineering]
    shortcuts = ", ".join(p.name for p in family.params if p.engineering)
    entries = (parameters_doc(statistical) + "\n" if statistical else "") + f"""\
    options : {options_class} or None, default=None
        How the path is computed (see :class:`~nytro.{options_class}`); None: its defaults.
    {shortcuts}
        Shortcuts for the fields of `options` of the same name, with the same defaults; a
        keyword and a field both set to different values are refused."""
    return f"{doc.rstrip()}\n\n    Parameters\n    ----------\n{entries}\n    "


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
                  "TikhonovOptions": [p for p in NKRLS.params if p.engineering]}
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

OPTIONS_CLASSES = {"NytroOptions": NytroOptions, "IterativeOptions": IterativeOptions,
                   "TikhonovOptions": TikhonovOptions}


FAMILIES = {"nytro": NYTRO, "landweber": LANDWEBER, "nkrls": NKRLS, "krls": KRLS}

