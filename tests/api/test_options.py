"""The options table (nytro.options) against every layer: the C++ structs' defaults and
fields, the binding's keyword-only calls, the functions' and their NumPy twins'
signatures, the estimators' signatures and the options objects."""
import importlib
import inspect
import pickle
import re

import numpy as np
import pytest
from sklearn.base import clone

import nytro
import nytro.centers
from nytro import _core, reference
from nytro import options as opt

FUNCTIONS = {"nytro_path": opt.NYTRO, "landweber_path": opt.LANDWEBER, "nkrls_path": opt.NKRLS,
             "krls_path": opt.KRLS, "kols": opt.KOLS}
ESTIMATORS = {nytro.NytroRegressor: opt.NYTRO, nytro.LandweberRegressor: opt.LANDWEBER,
              nytro.NystromKRLSRegressor: opt.NKRLS, nytro.KRLSRegressor: opt.KRLS,
              nytro.KOLSRegressor: opt.KOLS}
CLASSIFIERS = {nytro.NytroClassifier: opt.NYTRO, nytro.NystromKRLSClassifier: opt.NKRLS}
STRUCT_FAMILIES = {key: family for key, family in opt.FAMILIES.items() if family.keywords_of is None}


def _field(core, path):
    owner, _, name = path.rpartition(".")
    return getattr(getattr(core, owner) if owner else core, name)


def _fields(cls):
    """The names of the attributes a bound struct exposes (its C++ fields), nested ones
    as "factor.method"."""
    names = []
    for klass in inspect.getmro(cls):
        for name, value in vars(klass).items():
            if isinstance(value, property) and name not in names:
                names.append(name)
    nested = [name for name in names if name == "factor"]
    return [n for n in names if n not in nested] + [f"{n}.{f}" for n in nested for f in _fields(_core.FactorOptions)]


def _default(sig, name):
    return sig.parameters[name].default


def _same(a, b):
    return type(a) is type(b) and a == b if a is not None and b is not None else a is b


@pytest.mark.parametrize("family", STRUCT_FAMILIES.values(), ids=list(STRUCT_FAMILIES))
def test_cpp_struct_defaults_are_the_table_defaults(family):
    core = getattr(_core, family.core)()
    differing = set()
    for param in family.params:
        for path, value in param.to_core(param.default).items():
            if _field(core, path) != value:
                differing.add(param.name)
    declared = {name for layer, name in family.differences if layer == "core"}
    assert differing == declared


@pytest.mark.parametrize("family", [opt.NYTRO, opt.LANDWEBER, opt.NKRLS], ids=["nytro", "landweber", "nkrls"])
def test_every_cpp_field_is_set_from_the_table(family):
    """A field added to the C++ struct and bound, but missing from the table, would keep
    its C++ default from Python without anyone deciding so."""
    set_by_table = {path for param in family.params for path in param.to_core(param.default)}
    bound = set(_fields(getattr(_core, family.core)))
    # set by the path functions from their arguments: TargetScales and the sample weights
    assert bound - set_by_table == {"validation_weights", "sample_weights", "validation_sample_weights"}
    assert set_by_table <= bound


def _binding_keywords(function) -> list:
    """The keyword names of a pybind11 function, from its signature line."""
    head = function.__doc__.splitlines()[0]
    return re.findall(r"(?:\(\*, |, )(\w+): ", head)


@pytest.mark.parametrize("family", [f for f in opt.FAMILIES.values() if f.keywords_of is not None],
                         ids=lambda f: f.keywords_of)
def test_binding_keywords_are_set_from_the_table(family):
    """A family without a C++ struct (KOLS) hands its options to the binding as keywords of
    the same names: every one it sets is a keyword of the binding, and the binding has no
    option the table does not set."""
    set_by_table = {path for param in family.params for path in param.to_core(param.default)}
    for dtype in ("float32", "float64"):
        keywords = _binding_keywords(getattr(_core, f"{family.keywords_of}_{dtype}"))
        assert set_by_table <= set(keywords)
        assert set(keywords) - set_by_table == {"X", "Y", "kernel", "sample_weights"}
    assert set_by_table == {"rcond", "n_threads"}


def test_kols_binding_takes_the_table_values():
    """The table's keywords for KOLS, passed to the binding by name, give kols's result."""
    X, Y = _small()
    keywords = opt.core_options(opt.KOLS, {**{p.name: p.default for p in opt.KOLS.params}, "rcond": 1e-6,
                                           "n_threads": 1})
    assert keywords == {"rcond": 1e-6, "n_threads": 1}
    raw = _core.kols_float64(X=X, Y=Y, kernel=1.0, **keywords)
    np.testing.assert_array_equal(raw, nytro.kols(X, Y, 1.0, rcond=1e-6, n_threads=1))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_and_twin_signatures_carry_the_table_defaults(name):
    family = FUNCTIONS[name]
    for module in (nytro, reference):
        sig = inspect.signature(getattr(module, name))
        assert _default(sig, "options") is None
        for param in family.params:
            assert _same(_default(sig, param.name), param.default), (module.__name__, name, param.name)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_estimator_defaults_are_the_table_defaults_or_declared(estimator):
    family = ESTIMATORS[estimator]
    params = estimator().get_params()
    assert params["options"] is None
    differing = {p.name for p in family.params if p.name in params and not _same(params[p.name], p.default)}
    declared = {name for layer, name in family.differences if layer == estimator.__name__}
    assert differing == declared
    # the engineering options it names are shortcuts: each is an options field
    shortcuts = {p.name for p in family.params if p.engineering and p.name in params}
    assert shortcuts <= set(family.option_names)


@pytest.mark.parametrize("core", opt.OPTIONS_CLASSES)
def test_options_objects_carry_the_table_defaults(core):
    options = opt.OPTIONS_CLASSES[core]()
    assert [f for f in vars(options)] == [p.name for p in opt.OPTIONS_PARAMS[core]]
    for param in opt.OPTIONS_PARAMS[core]:
        assert _same(getattr(options, param.name), param.default)
    assert {p.name for p in opt.OPTIONS_PARAMS[core]} >= {
        n for f in opt.FAMILIES.values() if f.core == core for n in f.option_names}


def test_declared_differences_name_real_parameters():
    for family in opt.FAMILIES.values():
        for layer, name in family.differences:
            assert name in family.names and family.differences[layer, name]


# ------------------------------------------------------------------------ the binding
def _small():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 3))
    return X, np.sin(X[:, :1]).copy()


def test_binding_refuses_positional_arguments():
    X, Y = _small()
    core = _core.NytroOptions()
    with pytest.raises(TypeError):
        _core.nytro_path_float64(X, Y, X[:5], 1.0, X[:0], Y[:0], core)
    with pytest.raises(TypeError):
        _core.landweber_path_float64(X, Y, 1.0, X[:0], Y[:0], _core.IterativeOptions())
    with pytest.raises(TypeError):
        _core.krls_path_float64(X, Y, 1.0, [1e-3], X[:0], Y[:0], _core.TikhonovOptions())
    with pytest.raises(TypeError):
        _core.kernel_matrix_float64(X, X, 1.0, 1)
    with pytest.raises(TypeError):
        _core.kols_float64(X, Y, 1.0, -1.0, 1)


def test_binding_refuses_unknown_names():
    X, Y = _small()
    with pytest.raises(TypeError):  # an unknown keyword
        _core.nytro_path_float64(X=X, Y=Y, centers=X[:5], kernel=1.0, X_val=X[:0], Y_val=Y[:0],
                                 options=_core.NytroOptions(), patience=3)
    with pytest.raises(TypeError):  # the wrong struct for the function
        _core.nytro_path_float64(X=X, Y=Y, centers=X[:5], kernel=1.0, X_val=X[:0], Y_val=Y[:0],
                                 options=_core.TikhonovOptions())
    core = _core.NytroOptions()
    with pytest.raises(AttributeError):  # a field the struct does not have
        core.n_iter_no_change = 3
    with pytest.raises(AttributeError):
        core.factor.methd = "qr"


def test_binding_by_keyword_is_the_function():
    """The binding called by keyword with the table's struct gives the function's result."""
    X, Y = _small()
    values = {p.name: p.default for p in opt.NYTRO.params}
    values.update(method="cg", max_iter=7, n_threads=1, n_iter_no_change=3)
    core = opt.core_options(opt.NYTRO, values)
    raw = _core.nytro_path_float64(X=X, Y=Y, centers=X[:8], kernel=1.0, X_val=X[:10], Y_val=Y[:10], options=core)
    result = nytro.nytro_path(X, Y, X[:8], 1.0, X_val=X[:10], y_val=Y[:10], method="cg", max_iter=7,
                              n_iter_no_change=3, n_threads=1)
    assert core.patience == 3 and core.method == "cg"
    np.testing.assert_array_equal(raw["coef"], result.coef)
    np.testing.assert_array_equal(raw["validation_rmse"], result.validation_rmse)


@pytest.mark.parametrize("core, field, choices", [
    ("NytroOptions", "method", nytro._checks.METHODS),
    ("NytroOptions", "stopping", nytro._checks.STOPPING_RULES),
    ("NytroOptions", "iterates", nytro._checks.GD_ITERATES),
    ("NytroOptions", "solver", nytro._checks.NYTRO_SOLVERS),
    ("NytroOptions", "storage", ("same", "float32", "float16")),
    ("NytroOptions", "step_rule", nytro._checks.STEP_RULES + ("fixed",)),
    ("TikhonovOptions", "solver", nytro._checks.TIKHONOV_SOLVERS),
    ("FactorOptions", "method", nytro._checks.FACTOR_METHODS),
])
def test_python_choices_are_the_cpp_names(core, field, choices):
    struct = getattr(_core, core)()
    for choice in choices:
        setattr(struct, field, choice)
        assert getattr(struct, field) == choice
    with pytest.raises(ValueError, match="is not one of"):
        setattr(struct, field, "nonsense")


# ------------------------------------------------------------------- options objects
def _path_args():
    X, Y = _small()
    return (X, Y[:, 0], X[:8], 1.0), dict(X_val=X[:10], y_val=Y[:10, 0], max_iter=20)


@pytest.mark.parametrize("fields", [dict(solver="gram"), dict(storage="float32", iterates="stepwise"),
                                    dict(factor="qr", n_threads=1)])
def test_options_object_equals_the_keywords(fields):
    args, kwargs = _path_args()
    by_keyword = nytro.nytro_path(*args, **kwargs, **fields)
    by_object = nytro.nytro_path(*args, **kwargs, options=nytro.NytroOptions(**fields))
    np.testing.assert_array_equal(by_object.coef, by_keyword.coef)
    np.testing.assert_array_equal(by_object.validation_rmse, by_keyword.validation_rmse)
    assert by_object.solver == by_keyword.solver
    twin = reference.nytro_path(*args, **kwargs, options=nytro.NytroOptions(**fields))
    twin_keyword = reference.nytro_path(*args, **kwargs, **fields)
    np.testing.assert_array_equal(twin.coef, twin_keyword.coef)


def test_options_and_keyword_must_agree():
    args, kwargs = _path_args()
    with pytest.raises(ValueError, match="solver is given twice"):
        nytro.nytro_path(*args, **kwargs, solver="direct", options=nytro.NytroOptions(solver="gram"))
    same = nytro.nytro_path(*args, **kwargs, solver="gram", options=nytro.NytroOptions(solver="gram"))
    assert same.solver == "gram"
    with pytest.raises(ValueError, match="options must be a nytro.NytroOptions"):
        nytro.nytro_path(*args, **kwargs, options=nytro.TikhonovOptions())
    with pytest.raises(ValueError, match="options must be"):
        nytro.nytro_path(*args, **kwargs, options={"solver": "gram"})


def test_options_objects_check_their_fields():
    with pytest.raises(ValueError, match="solver"):
        nytro.NytroOptions(solver="gramm")
    with pytest.raises(ValueError, match="n_threads"):
        nytro.TikhonovOptions(n_threads=0)
    with pytest.raises(ValueError, match="rank_tol"):
        nytro.NytroOptions(rank_tol=-1.0)
    with pytest.raises(TypeError):
        nytro.NytroOptions(patience=3)  # a statistical parameter: the signatures keep it


def test_krls_refuses_nystrom_fields():
    X, Y = _small()
    with pytest.raises(ValueError, match="factor"):
        nytro.krls_path(X, Y, 1.0, lambdas=[1e-3], options=nytro.TikhonovOptions(factor="qr"))
    with pytest.raises(ValueError, match="storage"):
        nytro.KRLSRegressor(options=nytro.TikhonovOptions(storage="float32")).fit(X, Y[:, 0])
    result = nytro.krls_path(X, Y, 1.0, lambdas=[1e-3], options=nytro.TikhonovOptions(solver="cholesky"))
    np.testing.assert_array_equal(result.coef, nytro.krls_path(X, Y, 1.0, lambdas=[1e-3], solver="cholesky").coef)


def _accepted(row, value) -> bool:
    try:
        row.check(value)
    except ValueError:
        return False
    return True


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short paths on purpose
@pytest.mark.parametrize("estimator, options, shortcut", [
    (nytro.NytroRegressor(n_centers=10, max_iter=20, random_state=0), nytro.NytroOptions(solver="gram"),
     {"solver": "gram"}),
    (nytro.LandweberRegressor(max_iter=20, random_state=0), nytro.IterativeOptions(iterates="stepwise"),
     {"iterates": "stepwise"}),
    (nytro.NystromKRLSRegressor(n_centers=10, random_state=0), nytro.TikhonovOptions(factor="qr"),
     {"factor": "qr"}),
    (nytro.KRLSRegressor(random_state=0), nytro.TikhonovOptions(solver="cholesky"), {"solver": "cholesky"}),
    (nytro.KOLSRegressor(), nytro.KOLSOptions(rcond=1e-6), {"rcond": 1e-6}),
])
def test_estimator_options_equal_shortcuts_and_survive_clone_and_pickle(estimator, options, shortcut):
    X, Y = _small()
    y = Y[:, 0]
    with_options = clone(estimator).set_params(options=options)
    assert clone(with_options).get_params()["options"] == options
    fitted = with_options.fit(X, y)
    by_shortcut = clone(estimator).set_params(**shortcut).fit(X, y)
    np.testing.assert_array_equal(fitted.coef_, by_shortcut.coef_)
    restored = pickle.loads(pickle.dumps(fitted))
    assert restored.options == options
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    name, value = next(iter(shortcut.items()))
    row = opt.declared(estimator._family, name)
    # a valid value set apart from the default, so that the conflict is what is refused (a
    # two-way choice set to its other value in options has none: no keyword can conflict)
    other = next((v for v in ("gram", "direct", "lanczos", "auto", "cholesky", "qr", 1e-3)
                  if v != value and v != row.default and _accepted(row, v)), None)
    if other is None:
        return
    conflicting = clone(with_options).set_params(**{name: other})
    with pytest.raises(ValueError, match=f"{name} is given twice"):
        conflicting.fit(X, y)


def test_options_doc_is_generated_from_the_table():
    doc = nytro.NytroOptions.__doc__
    for param in opt.OPTIONS_PARAMS["NytroOptions"]:
        assert param.doc.splitlines()[1].strip() in doc


# ------------------------------------------------------------------ the docstrings
ALL_ESTIMATORS = {**ESTIMATORS, **CLASSIFIERS}


def _signature_defaults(function) -> dict:
    parameters = inspect.signature(function).parameters
    return {name: p.default for name, p in parameters.items() if name != "self"}


def _entry(doc: str, name: str) -> list:
    """The numpydoc entry of `name` in `doc`: its head line, then its indented lines."""
    lines = inspect.cleandoc(doc).splitlines()
    heads = [i for i, line in enumerate(lines) if line == name or line.startswith(f"{name} : ")]
    assert len(heads) == 1, f"{name!r} has {len(heads)} entries"
    entry = [lines[heads[0]]]
    for line in lines[heads[0] + 1:]:
        if not line.startswith("    "):
            break
        entry.append(line)
    return entry


def _declared_default(family, estimator, name):
    """The default the table declares for `estimator`'s parameter `name`: the row's, or the
    estimator's (or a base class's) own where the family's `differences` name it."""
    for klass in estimator.__mro__:
        if (klass.__name__, name) in family.differences:
            return _signature_defaults(klass.__init__)[name]
    return opt.declared(family, name).default


@pytest.mark.parametrize("estimator", ALL_ESTIMATORS, ids=lambda e: e.__name__)
def test_every_estimator_parameter_is_declared_with_its_default(estimator):
    """Each parameter of each estimator has one row (its family's, or a shared one), and the
    estimator's default is the row's unless a declared difference says why not."""
    family = ALL_ESTIMATORS[estimator]
    assert estimator._family is family
    defaults = _signature_defaults(estimator.__init__)
    undeclared = [name for name in defaults if name != "options" and opt.declared(family, name) is None]
    assert undeclared == [], f"declare these parameters in python/nytro/options.py: {undeclared}"
    for name, default in defaults.items():
        if name != "options":
            assert _same(default, _declared_default(family, estimator, name)), (estimator.__name__, name)


@pytest.mark.parametrize("estimator", ALL_ESTIMATORS, ids=lambda e: e.__name__)
def test_estimator_docstrings_say_what_the_rows_say(estimator):
    """Each statistical parameter's entry is its row's text with the estimator's default;
    `options` names the family's options object; the shortcuts are listed together."""
    family = ALL_ESTIMATORS[estimator]
    defaults = _signature_defaults(estimator.__init__)
    for name, default in defaults.items():
        row = opt.declared(family, name)
        if row is None or row.engineering:
            continue
        head, *body = row.doc.splitlines()
        entry = _entry(estimator.__doc__, name)
        assert entry[0] == f"{head}, default={default!r}"
        assert entry[1:len(body) + 1] == body, (estimator.__name__, name)
    assert _entry(estimator.__doc__, "options")[0] == f"options : {family.core} or None, default=None"
    shortcuts = [name for name in defaults if name in family.option_names]
    assert _entry(estimator.__doc__, ", ".join(shortcuts))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_docstrings_say_what_the_rows_say(name):
    function, family = getattr(nytro, name), FUNCTIONS[name]
    for parameter, default in _signature_defaults(function).items():
        row = opt.declared(family, parameter)
        if row is None or row.engineering or parameter not in family.names + ("sigma", "lambdas", "dtype"):
            continue
        head, *body = row.doc.splitlines()
        entry = _entry(function.__doc__, parameter)
        assert entry[0] == (head if default is inspect.Parameter.empty else f"{head}, default={default!r}")
        assert entry[1:len(body) + 1] == body, (name, parameter)
    assert _entry(function.__doc__, ", ".join(family.option_names))


def test_documented_refuses_a_docstring_without_its_mark():
    class Estimator(nytro.KOLSRegressor):
        """No parameters mark."""
    with pytest.raises(ValueError, match="needs one line"):
        opt.documented(Estimator)


# ------------------------------------------------------ validation by the rows, on entry
def _all_rows() -> list:
    """Every declared row: the families', the functions' and the shared ones."""
    families = list(opt.FAMILIES.values()) + list(opt.FUNCTION_FAMILIES.values())
    rows = {}
    for row in [p for family in families for p in family.params] + list(opt.SHARED.values()):
        rows.setdefault(id(row), row)
    return list(rows.values())


def _reading(row) -> dict:
    """Values of the other parameters under which `row`'s parameter is read."""
    return {other: choices[0] for other, choices in row.read_when.items()}


def _refusal(row) -> str:
    """The message of the row's own check for its invalid value."""
    with pytest.raises(ValueError) as info:
        row.check(row.invalid, _reading(row))
    return str(info.value)


@pytest.mark.parametrize("row", _all_rows(), ids=lambda row: row.name)
def test_each_row_refuses_its_invalid_value_by_name_and_takes_its_default(row):
    assert re.search(rf"\b{row.name}\b", _refusal(row))
    row.check(row.default, _reading(row))
    for other in row.read_when:  # not read (another value of `other`): any value goes, it is ignored
        row.check(row.invalid, {other: object()})


def _entry_call(call, **given):
    """call(...) with `given`, its other required arguments (the data) None, or their rows'
    defaults where they have rows (sigma): whatever it raises comes before any data check."""
    required = [name for name, p in inspect.signature(call).parameters.items() if p.default is p.empty]
    data = {name: opt.SHARED[name].default if name in opt.SHARED else None for name in required}
    taken = inspect.signature(call).parameters
    return call(**{**data, **{name: value for name, value in given.items() if name in taken}})


ESTIMATOR_PARAMETERS = [(estimator, name) for estimator in ALL_ESTIMATORS
                        for name in _signature_defaults(estimator.__init__) if name != "options"]


@pytest.mark.parametrize("estimator, name", ESTIMATOR_PARAMETERS,
                         ids=[f"{e.__name__}-{name}" for e, name in ESTIMATOR_PARAMETERS])
def test_every_estimator_parameter_is_checked_by_its_row_on_entry_to_fit(estimator, name):
    """Each parameter of each estimator (a new one too: every parameter has a row, see
    above) is refused by its row's check, with the row's message, before fit looks at
    the data (X and y are None here)."""
    row = opt.declared(estimator._family, name)
    model = estimator().set_params(**_reading(row), **{name: row.invalid})
    with pytest.raises(ValueError) as info:
        model.fit(None, None)
    assert str(info.value) == _refusal(row)


# The names a function takes as data, not as a declared parameter: the path functions'
# centres are points only, checked with X (the estimators' centers row also takes indices).
_FUNCTION_DATA = {"centers"}


def _function(fname):
    """nytro's function `fname`, or a submodule's ("centers.leverage_centers")."""
    module, _, name = fname.rpartition(".")
    return getattr(importlib.import_module(f"nytro.{module}") if module else nytro, name)


def _public_functions() -> dict:
    """The functions of nytro's __all__ and of its submodules' that declare one."""
    names = list(nytro.__all__) + [f"centers.{name}" for name in nytro.centers.__all__]
    return {fname: _function(fname) for fname in names if inspect.isfunction(_function(fname))}


def test_every_public_function_parameter_with_a_row_is_checked_by_it():
    """A public function that takes a declared parameter (by name) is listed in
    FUNCTION_FAMILIES with a family (or FUNCTION_SHARED) that holds it, so that its entry
    check covers it."""
    declared_names = {row.name for row in _all_rows()}
    missing = []
    for fname, function in _public_functions().items():
        family = opt.FUNCTION_FAMILIES.get(fname)
        for name in inspect.signature(function).parameters:
            if name in declared_names - _FUNCTION_DATA:
                if family is None or not (name in family.names or name in opt.FUNCTION_SHARED):
                    missing.append(f"{fname}({name})")
    assert missing == []


FUNCTION_PARAMETERS = [(fname, name) for fname, family in opt.FUNCTION_FAMILIES.items()
                       for name in inspect.signature(_function(fname)).parameters
                       if name in family.names or (name in opt.FUNCTION_SHARED and name in opt.SHARED)]


@pytest.mark.parametrize("fname, name", FUNCTION_PARAMETERS, ids=[f"{f}-{n}" for f, n in FUNCTION_PARAMETERS])
def test_every_function_parameter_is_checked_by_its_row_on_entry(fname, name):
    family = opt.FUNCTION_FAMILIES[fname]
    row = opt.declared(family, name)
    with pytest.raises(ValueError) as info:
        _entry_call(_function(fname), **_reading(row), **{name: row.invalid})
    assert str(info.value) == _refusal(row)


def test_unread_parameters_are_not_checked():
    """As before the table checked them: matern_nu is read by the Matern kernel only,
    sigma not by the linear one."""
    X, Y = _small()
    np.testing.assert_array_equal(nytro.kernel_matrix(X, X, matern_nu=7.0), nytro.kernel_matrix(X, X))
    linear = nytro.kols(X, Y, -1.0, kernel="linear")
    np.testing.assert_array_equal(nytro.KOLSRegressor(sigma=None, kernel="linear", fit_intercept=False).fit(X, Y).coef_,
                                  linear)


# ------------------------------------------------------------ the Attributes sections
_SKLEARN_ATTRIBUTES = {"n_features_in_", "feature_names_in_"}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # short paths on purpose
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_estimator_attributes_are_declared_and_documented_by_their_rows(estimator):
    """The attributes fit sets are the class's `_attributes` (a new one must be declared),
    and each Attributes entry is its row's text."""
    X, Y = _small()
    params = {"max_iter": 20, "n_centers": 10}
    fitted = estimator().set_params(**{k: v for k, v in params.items() if k in estimator().get_params()})
    fitted.fit(X, Y[:, 0])
    public = {name for name in vars(fitted) if name.endswith("_") and not name.startswith("_")}
    assert public - _SKLEARN_ATTRIBUTES == set(estimator._attributes)
    for name in estimator._attributes:
        head, *body = opt.ATTRIBUTES[name].doc.splitlines()
        entry = _entry(estimator.__doc__, name)
        assert entry[0] == head and entry[1:len(body) + 1] == body, (estimator.__name__, name)


def test_documented_refuses_attributes_without_their_mark():
    class Estimator(nytro.KOLSRegressor):
        """A parameters mark, no attributes mark.

        {parameters}
        """
        _attributes = ("coef_",)
    with pytest.raises(ValueError, match="attributes"):
        opt.documented(Estimator)
