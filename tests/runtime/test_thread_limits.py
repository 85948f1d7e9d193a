"""n_threads=None follows the limits the environment sets: OMP_NUM_THREADS, threadpoolctl
(as joblib's and dask's workers use), the CPU affinity mask. Each case runs in a fresh
interpreter, since OpenMP reads its environment once at start-up."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import nytro



def cgroup_cpus() -> float:
    """CPUs of this process's cgroup v2 quota (inf without one)."""
    try:
        with open("/proc/self/cgroup") as f:
            own = next((line[3:].strip() for line in f if line.startswith("0::")), "")
    except OSError:
        return float("inf")
    for folder in (f"/sys/fs/cgroup{own}", "/sys/fs/cgroup"):
        try:
            with open(f"{folder}/cpu.max") as f:
                quota, period = f.read().split()
        except (OSError, ValueError):
            continue
        return float("inf") if quota == "max" else -(-int(quota) // int(period))
    return float("inf")


AFFINITY = int(min(len(os.sched_getaffinity(0)), cgroup_cpus()))


def run_python(code: str, **env) -> dict:
    """Runs `code` in a fresh interpreter that imports this nytro; returns the JSON it prints."""
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_THREAD_LIMIT")}
    environment.update(env)
    environment["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_default_is_the_affinity_mask_without_limits():
    got = run_python("import json, nytro; print(json.dumps(nytro.default_n_threads()))")
    assert got == AFFINITY


@pytest.mark.parametrize("threads", [1, 3])
def test_omp_num_threads_is_honoured_within_the_cores(threads):
    got = run_python("import json, nytro; print(json.dumps(nytro.default_n_threads()))",
                     OMP_NUM_THREADS=str(threads))
    assert got == min(threads, AFFINITY)


def test_threadpoolctl_limits_nytros_openmp():
    code = """
import json, nytro
from threadpoolctl import threadpool_info, threadpool_limits
before = nytro.default_n_threads()
with threadpool_limits(limits=1):
    inside = nytro.default_n_threads()
    # the fit runs too (and on one thread gives the same model as on all)
    import numpy as np
    X = np.random.default_rng(0).standard_normal((300, 3)); y = X[:, 0]
    one = nytro.NytroRegressor(n_centers=40, max_iter=20, random_state=0).fit(X, y).coef_
after = nytro.default_n_threads()
libs = [lib["filepath"] for lib in threadpool_info() if lib["user_api"] == "openmp"]
print(json.dumps([before, inside, after, len(libs)]))
"""
    before, inside, after, n_openmp = run_python(code)
    assert n_openmp >= 1
    assert (before, inside, after) == (AFFINITY, 1, AFFINITY)


@pytest.mark.skipif(AFFINITY < 2, reason="needs two CPUs to restrict to one")
def test_cpu_affinity_is_honoured():
    code = """
import json, os
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
import nytro
print(json.dumps(nytro.default_n_threads()))
"""
    assert run_python(code) == 1


def test_grid_search_workers_split_the_cores():
    # joblib's loky workers get OMP_NUM_THREADS = cores // n_jobs: each nested fit must use
    # that many threads, not every core (which oversubscribes and runs slower than serial).
    # The scorer runs in the worker, right after its fit, and reports the count.
    code = """
import json, numpy as np, nytro
from sklearn.model_selection import GridSearchCV
from joblib import cpu_count
X = np.random.default_rng(0).standard_normal((400, 3)); y = X[:, 0]
search = GridSearchCV(nytro.NytroRegressor(n_centers=30, max_iter=10, random_state=0),
                      {"sigma": [0.5, 1.0, 2.0]}, cv=2, n_jobs=2,
                      scoring=lambda est, X, y: float(nytro.default_n_threads()))
search.fit(X, y)
print(json.dumps([sorted(set(search.cv_results_["mean_test_score"].tolist())), cpu_count()]))
"""
    scores, cores = run_python(code)
    assert scores == [float(max(1, cores // 2))]


def test_default_n_threads_in_this_process():
    assert 1 <= nytro.default_n_threads() <= AFFINITY
