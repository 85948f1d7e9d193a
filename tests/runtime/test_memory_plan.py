"""A fit that cannot fit in the memory this process may use is refused from its plan,
before anything large is allocated, with a MemoryError naming what to change; never a
bare std::bad_alloc nor an abort. The limits are set in a fresh interpreter
(RLIMIT_AS, as `ulimit -v` does), so that this process keeps its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nytro

LIMITED = """
import json, resource, sys, time
import numpy as np
from nytro import NytroRegressor  # scikit-learn with it, before the limit and the clock
# the address space mapped now (libraries, thread stacks, BLAS buffers) plus the room given
with open("/proc/self/statm") as f:
    mapped = int(f.read().split()[0]) * resource.getpagesize()
room = int(float(sys.argv[1]) * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (mapped + room, resource.getrlimit(resource.RLIMIT_AS)[1]))
n, m, solver, storage = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
X = np.random.default_rng(0).standard_normal((n, 5))
y = X[:, 0].copy()
start = time.perf_counter()
try:
    # sigma given: "auto"'s screening fits (at 200 centres) would run before the plan
    NytroRegressor(n_centers=m, sigma=1.0, solver=solver, storage=None if storage == "None" else storage,
                   max_iter=5, random_state=0).fit(X, y)
    outcome, message = "fitted", ""
except MemoryError as error:
    outcome, message = "MemoryError", str(error)
print(json.dumps([outcome, message, time.perf_counter() - start]))
"""


def fit_under_limit(room_gib, n, m, solver="auto", storage="None"):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                   "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", LIMITED, str(room_gib), str(n), str(m), solver, storage],
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert "bad_alloc" not in done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("solver", ["auto", "direct", "gram"])
def test_a_fit_beyond_the_address_space_limit_is_refused_from_its_plan(solver):
    # m = 20000 centres: K_mm and its factor alone are 6.4 GB, under a 1 GiB limit.
    outcome, message, seconds = fit_under_limit(1.0, 30000, 20000, solver)
    assert outcome == "MemoryError"
    assert "bad_alloc" not in message
    assert "RLIMIT_AS" in message
    for word in ("n_centers", "solver=", "storage=", "K_mm"):
        assert word in message, (word, message)
    assert seconds < 2.0  # from the plan, before K_mm (20000 x 5 rows of kernel: seconds)


def test_the_plans_advice_fits():
    # The plan's advised n_centers for solver='gram' must then fit under the same limit.
    outcome, message, _ = fit_under_limit(0.5, 20000, 12000, "gram")
    assert outcome == "MemoryError"
    advised = int(message.split("n_centers <= ")[1].split()[0])
    assert 100 < advised < 12000
    outcome, message, _ = fit_under_limit(0.5, 20000, advised // 2, "gram")
    assert outcome == "fitted", message


def test_a_fit_within_the_limit_runs():
    outcome, message, _ = fit_under_limit(1.0, 3000, 200)
    assert outcome == "fitted", message


def test_the_plan_names_the_binding_limit_in_process():
    n = 2 * 10**5
    X = np.zeros((n, 2))
    X[:, 0] = np.arange(n)
    with pytest.raises(MemoryError, match="GB available") as error:
        nytro.nytro_path(X, np.zeros(n), X[: 10**5], 1.0, solver="gram")
    assert "n_centers <= " in str(error.value)


# As LIMITED, for the exact methods' entry points: argv[2] names the call.
LIMITED_CALL = """
import json, resource, sys
import numpy as np
import nytro
with open("/proc/self/statm") as f:
    mapped = int(f.read().split()[0]) * resource.getpagesize()
room = int(float(sys.argv[1]) * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (mapped + room, resource.getrlimit(resource.RLIMIT_AS)[1]))
call, n, m = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
X = np.random.default_rng(0).standard_normal((n, 5))
try:
    if call == "landweber_path":
        nytro.landweber_path(X, X[:, 0].copy(), 2.0, max_iter=5, n_threads=1)
    else:
        nytro.gaussian_kernel(X, X[:m], 2.0, n_threads=1)
    outcome, message = "done", ""
except MemoryError as error:
    outcome, message = "MemoryError", str(error)
print(json.dumps([outcome, message]))
"""


def call_under_limit(room_gib, call, n, m=0):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                   "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", LIMITED_CALL, str(room_gib), call, str(n), str(m)],
                          env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    assert "bad_alloc" not in done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_landweber_beyond_the_limit_is_refused_with_advice_that_fits():
    # n = 30000: K alone is 7.2 GB, under a 0.5 GiB limit.
    outcome, message = call_under_limit(0.5, "landweber_path", 30000)
    assert outcome == "MemoryError"
    assert "RLIMIT_AS" in message and "Landweber on n = 30000" in message
    for words in ("K (30000 x 30000 float64)", "NytroRegressor", "training rows", "float32"):
        assert words in message, (words, message)
    advised = int(message.split("at most ")[1].split()[0])
    assert 1000 < advised < 30000
    outcome, message = call_under_limit(0.5, "landweber_path", advised * 3 // 4)
    assert outcome == "done", message


def test_gaussian_kernel_beyond_the_limit_is_refused_with_advice_that_fits():
    # 100000 x 4000 float64: 3.2 GB, under a 0.5 GiB limit.
    outcome, message = call_under_limit(0.5, "gaussian_kernel", 100000, 4000)
    assert outcome == "MemoryError"
    assert "RLIMIT_AS" in message and "K (100000 x 4000 float64)" in message
    for words in ("X in blocks of at most", "kernel_predict", "float32"):
        assert words in message, (words, message)
    advised = int(message.split("at most ")[1].split()[0])
    assert 1000 < advised < 100000
    outcome, message = call_under_limit(0.5, "gaussian_kernel", advised * 3 // 4, 4000)
    assert outcome == "done", message


def test_exact_methods_name_what_to_change_in_process():
    # Far beyond any machine's memory: refused from the plan, nothing allocated.
    X = np.zeros((300_000, 2))
    with pytest.raises(MemoryError, match="GB available") as error:
        nytro.landweber_path(X, np.zeros(len(X)), 1.0, max_iter=3)
    assert "training rows" in str(error.value) and "NytroRegressor" in str(error.value)
    with pytest.raises(MemoryError, match="GB available") as error:
        nytro.gaussian_kernel(X, X[:200_000], 1.0)
    assert "X in blocks of at most" in str(error.value)
