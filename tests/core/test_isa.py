"""Run-time dispatch over instruction sets: show_config, the NYTRO_ISA override, and the
same results (to the reference's tolerance) from every variant this machine can run.

A portable build carries three variants of the core (baseline x86-64, AVX2+FMA,
AVX-512); a native build one ("native"). FMA contracts products and sums differently,
so variants agree to rounding, not bit for bit: each is checked against the NumPy
reference with the dtype's tolerance (conftest.RTOL), and the variants' selected
iteration counts and ranks must be equal.
"""
from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nytro
import nytro.reference as ref
from nytro import _config, _core
from conftest import SERIAL, assert_close, make_problem

INFO = nytro._config.isa_info()
RUNNABLE = INFO["runnable"]


@pytest.fixture(params=RUNNABLE)
def variant(request):
    """Each variant this build carries and this machine runs, selected for the test and
    the start-up choice restored afterwards."""
    before = nytro._config.isa_info()["selected"]
    _config._select_isa(request.param)
    try:
        yield request.param
    finally:
        _config._select_isa(before)


def test_show_config_says_which_variant_runs_and_why():
    out = io.StringIO()
    info = nytro.show_config(file=out)
    text = out.getvalue()
    assert info["selected"] in info["compiled"]
    assert info["selected"] in info["runnable"]
    assert set(info["runnable"]) <= set(info["compiled"])
    assert info["reason"] and info["reason"] in text
    assert f"core variant : {info['selected']}" in text
    if info["dispatch"]:
        assert info["compiled"] == ["avx512", "avx2", "baseline"]
        assert "baseline" in info["runnable"]  # every x86-64 runs it
        # The best runnable variant is chosen unless NYTRO_ISA asked for another.
        if not info["requested"]:
            assert info["selected"] == info["runnable"][0]
        # AVX-512 runnable only with the CPU's features and the OS's saved state.
        if "avx512" in info["runnable"]:
            assert {"avx512f", "avx512bw", "avx512vl", "os_avx512_state"} <= set(info["cpu_features"])
        if "avx2" in info["runnable"]:
            assert {"avx2", "fma", "os_avx_state"} <= set(info["cpu_features"])
    else:
        assert info["compiled"] == ["native"]


def test_select_isa_refuses_unknown_variants():
    with pytest.raises(ValueError, match="isa"):
        _config._select_isa("sse9")
    assert nytro._config.isa_info()["selected"] in RUNNABLE


def _fresh_config(env_value):
    """show_config's dict in a fresh interpreter with NYTRO_ISA set (or unset)."""
    env = dict(os.environ)
    env.pop("NYTRO_ISA", None)
    if env_value is not None:
        env["NYTRO_ISA"] = env_value
    code = "import json, nytro; print(json.dumps(nytro._config.isa_info()))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not INFO["dispatch"], reason="a native build has no variants to choose from")
@pytest.mark.parametrize("name", ["baseline", "avx2", "avx512"])
def test_nytro_isa_environment_variable_picks_the_variant(name):
    info = _fresh_config(name)
    assert info["requested"] == name
    if name in info["runnable"]:
        assert info["selected"] == name
        assert f"NYTRO_ISA={name}" in info["reason"]
    else:  # refused, and said so; the best runnable variant runs
        assert info["selected"] == info["runnable"][0]
        assert "cannot run" in info["reason"]


@pytest.mark.skipif(not INFO["dispatch"], reason="a native build has no variants to choose from")
def test_nytro_isa_with_a_bad_value_is_ignored_with_a_reason():
    info = _fresh_config("avx1024")
    assert info["selected"] == info["runnable"][0]
    assert "NYTRO_ISA=avx1024 is not one of" in info["reason"]


def test_kernel_of_each_variant_matches_the_reference(variant, dtype):
    rng = np.random.default_rng(7)
    # Sizes that leave remainders for every register width (8 and 16 floats, 4 and 8 doubles).
    X = rng.standard_normal((203, 9)).astype(dtype)
    Z = rng.standard_normal((77, 9)).astype(dtype)
    K = nytro.gaussian_kernel(X, Z, 1.7, **SERIAL)
    assert_close(K, ref.gaussian_kernel(X, Z, 1.7), dtype, what=f"{variant} kernel")
    out = np.empty_like(K)
    nytro.gaussian_kernel(X, Z, 1.7, out=out, n_threads=2)
    np.testing.assert_array_equal(out, K)  # within a variant: the same bits for any thread count


def test_paths_of_each_variant_match_the_reference(variant, dtype):
    p = make_problem(n=400, m=40, dtype=dtype)
    for solver in ("direct", "gram"):
        got = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=60, solver=solver, **SERIAL)
        want = ref.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=60)
        assert got.n_iter == want.n_iter and got.rank == want.rank
        assert_close(got.coef, want.coef, dtype, what=f"{variant} {solver} coef")
        assert_close(got.validation_rmse, want.validation_rmse, dtype, what=f"{variant} {solver} validation_rmse")
    lambdas = nytro.paper_lambdas()[::10]
    got = nytro.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=lambdas, **p.holdout, **SERIAL)
    want = ref.nkrls_path(p.X, p.y, p.centers, p.sigma, lambdas=lambdas, **p.holdout)
    assert_close(got.validation_rmse, want.validation_rmse, dtype, what=f"{variant} nkrls validation_rmse")
    # The path is flat near its minimum: in float32 rounding may pick a neighbouring lambda
    # of the same error, so the selection is checked by the error it reaches.
    assert_close(got.validation_rmse[got.selected], min(want.validation_rmse), dtype, what=f"{variant} selected")
    if dtype == np.float64:
        assert got.selected == want.selected
    predicted = nytro.kernel_predict(p.X_val, p.centers, got.coef, p.sigma, **SERIAL)
    assert_close(predicted, ref.kernel_predict(p.X_val, p.centers, got.coef, p.sigma), dtype,
                 what=f"{variant} kernel_predict")


def test_variants_agree_with_each_other(dtype):
    """The same fit under every runnable variant: equal selections, coefficients equal to
    the dtype's tolerance (a variant drifting from its siblings fails here even where the
    reference comparison above is loose)."""
    if len(RUNNABLE) < 2:
        pytest.skip("one variant runs here")
    p = make_problem(n=500, m=50, dtype=dtype, seed=3)
    before = nytro._config.isa_info()["selected"]
    results = {}
    try:
        for name in RUNNABLE:
            _config._select_isa(name)
            results[name] = nytro.nytro_path(p.X, p.y, p.centers, p.sigma, **p.holdout, max_iter=100, **SERIAL)
    finally:
        _config._select_isa(before)
    first = results[RUNNABLE[0]]
    for name, r in results.items():
        assert (r.n_iter, r.rank, r.products) == (first.n_iter, first.rank, first.products), name
        assert_close(r.coef, first.coef, dtype, what=f"{name} against {RUNNABLE[0]}")


def test_core_stub_lists_every_function_of_the_compiled_module():
    stub = Path(_core.__file__).with_name("_core.pyi")
    if not stub.exists():  # a source checkout's build folder: the stub lives beside the sources
        stub = Path(nytro.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    stubbed = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    compiled = {name for name in dir(_core) if not name.startswith("__")}
    assert compiled == stubbed
    assert Path(nytro.__file__).with_name("py.typed").exists()


def test_cmake_dir_holds_the_config_or_says_why_not():
    try:
        cmake_dir = nytro.get_cmake_dir()
    except FileNotFoundError as error:
        assert "cmake --install" in str(error)  # a source checkout: no library inside the package
        return
    assert (Path(cmake_dir) / "nytroConfig.cmake").is_file()
    assert (Path(nytro.get_include()) / "nytro" / "nytro.hpp").is_file()
    assert (Path(nytro.get_library_dir()) / "libnytro.a").is_file()
    printed = subprocess.run([sys.executable, "-m", "nytro", "--cmake-dir"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert printed == cmake_dir


def test_show_config_into_a_closed_pipe_prints_no_traceback():
    """`python -m nytro --show-config | head -1`: the reader leaves before the last line,
    and the command printed a BrokenPipeError traceback."""
    with subprocess.Popen([sys.executable, "-m", "nytro", "--show-config"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as child:
        child.stdout.close()  # before the interpreter has even imported nytro
        stderr = child.stderr.read().decode()
        child.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
