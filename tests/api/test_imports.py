"""Importing nytro leaves other libraries' global state alone: no matplotlib backend is
selected and no pyplot figure is opened, even by the modules that draw plots. The
package's own imports form no cycle, and the estimators and the backends (nytro.dask)
meet only in nytro._backends."""
import ast
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")


def run_python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_nytro_loads_no_matplotlib():
    code = ("import sys, nytro, nytro.demo, nytro.plots, nytro.experiments.figure1, nytro.experiments.figure2, "
            "nytro.experiments.theorem1\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    assert run_python(code) == "[]"


def test_import_nytro_defers_scikit_learn_to_the_estimators():
    """The core's functions and the configuration load without scikit-learn (most of the
    import's time); an estimator, named in any of the usual ways, loads it then."""
    code = ("import sys, nytro\n"
            "print('sklearn' in sys.modules, 'NytroRegressor' in dir(nytro), 'NytroRegressor' in nytro.__all__)\n"
            "nytro.nytro_path; nytro.show_config; nytro.datasets.load_cpusmall\n"
            "print('sklearn' in sys.modules)\n"
            "from nytro import NytroClassifier\n"
            "from nytro.estimators import NytroClassifier as same\n"
            "print('sklearn' in sys.modules, NytroClassifier is same is nytro.NytroClassifier)")
    assert run_python(code).split() == ["False", "True", "True", "False", "True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'NoSuchEstimator'"):
        import nytro
        nytro.NoSuchEstimator  # noqa: B018


def test_plots_keep_the_callers_backend_and_figures(tmp_path):
    # The caller picked the svg backend and has one pyplot figure open; drawing nytro's
    # plots must change neither (the old plots.py switched to Agg on import).
    code = f"""
import matplotlib
matplotlib.use("svg")
import matplotlib.pyplot as plt
plt.figure()
import numpy as np
import nytro.plots
class Path: pass
a, b = Path(), Path()
a.validation_rmse_, a.n_iter_ = np.linspace(1, 0.5, 10), 7
b.lambdas_, b.validation_rmse_, b.lambda_ = np.logspace(-6, 0, 5), np.linspace(0.6, 0.9, 5), 1e-6
nytro.plots.plot_validation_paths(a, b, {str(tmp_path / "paths.png")!r}, title="t")
print(matplotlib.get_backend(), len(plt.get_fignums()))
"""
    assert run_python(code).lower() == "svg 1"
    assert (tmp_path / "paths.png").stat().st_size > 0


# -- the package's import graph ----------------------------------------------------------
# Every import a module of python/nytro makes of another, at module level and inside its
# functions alike (a function-level import is a dependency too, only a later one), read
# from the source with ast: nothing is imported to draw it.

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "nytro"


def module_names():
    """{module name: its file} for every module of python/nytro (a package by its
    __init__.py; the compiled nytro._core by its stub, which imports nothing)."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyi")):
        parts = ("nytro",) + path.relative_to(PACKAGE).with_suffix("").parts
        names.setdefault(".".join(parts[:-1] if parts[-1] == "__init__" else parts), path)
    return names


def imported_by(name, path, modules):
    """The modules of nytro that module `name` (in file `path`) imports: `import nytro.x`,
    `from nytro.x import y` and the relative forms, y counted where it is a module itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    if path.suffix == ".pyi":
        return found
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name inside a module: that module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph():
    modules = module_names()
    return {name: imported_by(name, path, modules) for name, path in modules.items()}


def within(name, package):
    return name == package or name.startswith(package + ".")


def test_import_graph_reads_both_levels():
    """The graph sees a module-level relative import and a function-level one."""
    graph = import_graph()
    assert "nytro._checks" in graph["nytro._api"]
    assert "nytro.dask._fit" in graph["nytro.dask"]


def test_the_package_has_no_import_cycle():
    """No module of nytro imports, directly or through others, a module that imports it:
    the layers point one way (docs/dirs.md), and no import inside a function hides a
    cycle that a module-level one would make."""
    graph = import_graph()
    done, path = set(), []

    def visit(name):
        if name in path:
            cycle = path[path.index(name):] + [name]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        path.append(name)
        for target in sorted(graph[name]):
            visit(target)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_backends_and_estimators_do_not_import_each_other():
    """The estimators reach a backend only through nytro._backends (which imports its
    package when an array of its library is fitted), and a backend implements
    nytro._backends' protocol without importing the estimators."""
    from nytro._backends import _PACKAGES
    graph = import_graph()
    backends = sorted(_PACKAGES.values())
    for name, targets in graph.items():
        if within(name, "nytro.estimators"):
            assert not [t for t in targets for b in backends if within(t, b)], name
        for backend in backends:
            if within(name, backend):
                assert not [t for t in targets if within(t, "nytro.estimators")], name
