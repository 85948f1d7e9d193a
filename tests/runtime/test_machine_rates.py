"""The machine rates behind solver="auto" (nytro.machine_rates): pinned (conftest pins
them for every test), set in-process, probed and cached on disk in a fresh interpreter;
and the solver choice as a function of the rates alone. No assertion depends on what the
probe measures beyond its being a positive rate."""
from __future__ import annotations

import io
import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

import nytro
from conftest import PINNED_RATES

RATE_NAMES = ("flops", "flops32", "bytes", "fresh_bytes")


@pytest.fixture
def unpinned_after():
    yield
    nytro.set_machine_rates()


def test_the_tests_run_on_pinned_rates():
    rates = nytro.machine_rates(1)
    assert rates["source"] == "NYTRO_RATES"
    assert os.environ["NYTRO_RATES"] == PINNED_RATES
    assert (rates["flops"], rates["flops32"], rates["bytes"], rates["fresh_bytes"]) == (1e11, 2e11, 3e10, 3e9)
    assert rates["threads"] == 1
    assert nytro.machine_rates()["threads"] == nytro.default_n_threads()
    assert rates["key"].endswith("| 1 threads")


def test_the_cache_key_names_the_instructions_compiled_for():
    """Rates are cached per CPU model, instruction set and threads: a build without
    dispatch is keyed by the widest vectors its -march allowed (an AVX2 build and an
    AVX-512 build on one machine must not share rates), a dispatched one by its variant."""
    info = nytro._config.isa_info()
    variant = nytro.machine_rates(1)["key"].split(" | ")[1]
    if info["dispatch"]:
        assert variant == info["selected"]
    elif platform.machine() in ("x86_64", "AMD64"):
        assert variant in ("native avx512", "native avx2", "native baseline"), variant
        needs = {"native avx512": "avx512f", "native avx2": "avx2"}.get(variant)
        assert needs is None or needs in info["cpu_features"]  # the build runs here


def test_show_config_reports_the_rates():
    out = io.StringIO()
    info = nytro.show_config(file=out)
    text = out.getvalue()
    assert info["rates"] == nytro.machine_rates()
    assert "cost model" in text and "NYTRO_RATES" in text
    assert "100 GFLOP/s float64, 200 float32" in text
    assert "read 30 GB/s, first write 3 GB/s" in text


def test_set_machine_rates_pins_and_unpins(unpinned_after):
    nytro.set_machine_rates(2e10, bytes=1e10, fresh_bytes=1e9)
    rates = nytro.machine_rates(2)
    assert rates["source"] == "set_machine_rates"
    assert (rates["flops"], rates["flops32"], rates["bytes"], rates["fresh_bytes"]) == (2e10, 4e10, 1e10, 1e9)
    nytro.set_machine_rates()
    assert nytro.machine_rates(2)["source"] == "NYTRO_RATES"


@pytest.mark.parametrize("kwargs, word", [
    ({"flops": 1e10}, "bytes"),
    ({"flops": 1e10, "bytes": -1.0, "fresh_bytes": 1e9}, "bytes"),
    ({"flops": 1e10, "bytes": 1e9, "fresh_bytes": float("inf")}, "fresh_bytes"),
    ({"flops": "fast", "bytes": 1e9, "fresh_bytes": 1e9}, "flops"),
    ({"bytes": 1e9}, "flops"),
])
def test_bad_rates_are_refused(kwargs, word, unpinned_after):
    flops = kwargs.pop("flops", None)
    with pytest.raises(ValueError, match=word):
        nytro.set_machine_rates(flops, **kwargs)


def test_bad_environment_rates_are_a_value_error():
    script = ("import nytro, numpy as np\n"
              "try:\n"
              "    nytro.machine_rates(1)\n"
              "except ValueError as e:\n"
              "    print('ValueError', e)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NYTRO_RATES": "flops=1e11,bytes=fast,fresh=1e9",
                               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    assert done.returncode == 0, done.stderr
    assert "ValueError NYTRO_RATES: bytes must be a positive number" in done.stdout


# In a fresh interpreter, unpinned, with the cache NYTRO_RATES_CACHE: the rates (probed or read
# back; probed again and written if argv[1] is "refresh") and the solver a fit with
# solver="auto" chose.
PROBE = """
import json, sys
import numpy as np
import nytro
rates = nytro.machine_rates(1, refresh=sys.argv[1] == "refresh")
X = np.random.default_rng(0).standard_normal((400, 4))
est = nytro.NytroRegressor(n_centers=30, max_iter=5, n_threads=1, random_state=0).fit(X, X[:, 0])
print(json.dumps([rates, est.solver_]))
"""


def run_unpinned(cache, refresh=False):
    environment = {k: v for k, v in os.environ.items() if k != "NYTRO_RATES"}
    environment.update(NYTRO_RATES_CACHE=cache, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", PROBE, "refresh" if refresh else "read"], env=environment,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def probed(rates):
    # "probe (loaded)" or "probe (unsteady)" when the machine was busy: then written to the
    # cache on refresh only
    return rates["source"] in ("probe", "probe (loaded)", "probe (unsteady)")


def test_rates_are_probed_then_read_from_the_cache(tmp_path):
    cache = tmp_path / "new" / "dir" / "rates.txt"
    first, solver = run_unpinned(str(cache))
    assert probed(first)
    assert cache.exists() == (first["source"] == "probe")
    first, solver = run_unpinned(str(cache), refresh=True)
    assert probed(first)
    assert solver in ("direct", "gram", "spectral")
    for name in RATE_NAMES:
        assert np.isfinite(first[name]) and first[name] > 0, (name, first)
    assert first["key"] in cache.read_text()
    second, _ = run_unpinned(str(cache))
    assert second["source"] == f"cache {cache}"
    for name in RATE_NAMES:
        assert second[name] == pytest.approx(first[name], rel=1e-5)


def test_a_line_of_another_version_is_probed_again(tmp_path):
    """The cache's lines name the probe's and the library's versions: rates that an
    older nytro wrote under the same key (here absurdly low ones, which would send every
    choice one way) are not read; the probe runs and its line is added beside them."""
    key = nytro.machine_rates(1)["key"]  # pinned: the key, without a probe
    cache = tmp_path / "rates.txt"
    stale = [f"probe-v2\t{key}\t1 1 1 1", f"probe-v3 nytro-0.0.0\t{key}\t1 1 1 1"]
    cache.write_text("".join(line + "\n" for line in stale))
    rates, _ = run_unpinned(str(cache), refresh=False)
    assert probed(rates), rates
    assert rates["flops"] > 1
    lines = cache.read_text().splitlines()
    assert lines[:2] == stale  # another version's lines are left for it
    if rates["source"] == "probe":
        (written,) = lines[2:]
        assert written.startswith("probe-v3 nytro-") and f"\t{key}\t" in written


# Rates read from the cache, a first fit with solver="auto", the rates again, a second fit
# and the rates once more.
DEPARTED = """
import json
import numpy as np
import nytro
seen = [nytro.machine_rates(1)]
X = np.random.default_rng(0).standard_normal((400, 4))
for _ in range(2):
    nytro.NytroRegressor(n_centers=30, max_iter=5, n_threads=1, random_state=0).fit(X, X[:, 0])
    seen.append(nytro.machine_rates(1))
print(json.dumps(seen))
"""


def test_a_fit_far_from_its_price_probes_again(tmp_path):
    """Cached rates far below any machine's (as a probe under a load it did not see
    would leave): the model prices the first fit at days, far above what any fit takes
    (no real timing is compared), and the rates are forgotten: the next call probes again
    (a steady, unloaded probe rewrites the line), and keeps that probe for the process."""
    cache = tmp_path / "rates.txt"
    run_unpinned(str(cache), refresh=True)  # a line in this build's format
    (written,) = cache.read_text().splitlines()
    slow = written.rsplit("\t", 1)[0] + "\t1 1 1 1"
    cache.write_text(slow + "\n")
    environment = {k: v for k, v in os.environ.items() if k != "NYTRO_RATES"}
    environment.update(NYTRO_RATES_CACHE=str(cache), PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", DEPARTED], env=environment, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    cached, after, later = json.loads(done.stdout.strip().splitlines()[-1])
    assert cached["source"] == f"cache {cache}" and cached["flops"] == 1
    assert probed(after) and after["flops"] > 1
    assert later == after  # once probed again, kept for the process
    assert (slow in cache.read_text()) == (after["source"] != "probe")


def busy_processes(count):
    """`count` processes that spin on a core each until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def test_a_probe_under_load_serves_its_process_only(tmp_path):
    """Beside twice as many spinning processes as this process may use cores, the probe's
    thread gets about a third of a core: every repetition is slowed alike, so they agree
    (a steady probe), yet the rates are the load's. The probe sees it in its thread's CPU
    time, says so, and writes nothing for later processes to read."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cache = tmp_path / "rates.txt"
    spinners = busy_processes(2 * cores)
    try:
        rates, solver = run_unpinned(str(cache))
    finally:
        for process in spinners:
            process.kill()
            process.wait()
    assert rates["source"] == "probe (loaded)", rates
    assert solver in ("direct", "gram", "spectral")
    assert not cache.exists()


@pytest.mark.parametrize("cache", ["/proc/nytro_no_such_dir/rates.txt", "/dev/null/rates.txt", "off"])
def test_an_unusable_cache_never_fails_a_fit(cache):
    rates, solver = run_unpinned(cache, refresh=True)
    assert probed(rates)
    assert solver in ("direct", "gram", "spectral")


def test_the_choice_follows_the_rates(unpinned_after):
    # The same problem, three sets of rates, each making one solver the cheapest by a
    # wide margin in the cost model's terms.
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2000, 4))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(2000)
    fits = {}
    for name, (flops, bytes_, fresh) in {"direct": (1e7, 1e10, 1e10), "spectral": (1e14, 1e8, 1e8),
                                         "gram": (1e9, 1e11, 1e7)}.items():
        nytro.set_machine_rates(flops, bytes=bytes_, fresh_bytes=fresh)
        est = nytro.NytroRegressor(n_centers=100, max_iter=500, n_threads=1, random_state=0).fit(X, y)
        assert est.solver_ == name
        fits[name] = est
    # The same model whichever the solver.
    reference = fits["direct"].predict(X[:200])
    for est in fits.values():
        np.testing.assert_allclose(est.predict(X[:200]), reference, rtol=0, atol=1e-6 * np.abs(reference).max())


@pytest.mark.parametrize("method", ["cg", "hybrid"])
def test_auto_prices_the_early_stopped_path(method, unpinned_after):
    # Rates at which forming A^T A (2000 x 100 kernel: 2-4e7 flops at 1 GFLOP/s, 22-40 ms)
    # costs as much as 200-360 passes over K_nm (110 us each): the full path of 500
    # products goes to gram, a path expected to end 50 iterations after a best near
    # iteration 100 (150 products) to direct.
    rng = np.random.default_rng(2)
    X = rng.standard_normal((2500, 4))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(2500)
    nytro.set_machine_rates(1e9, bytes=1.6e10, fresh_bytes=1e11)
    chosen = {}
    for patience in (50, None):
        est = nytro.NytroRegressor(n_centers=100, method=method, max_iter=500, n_iter_no_change=patience,
                                   n_threads=1, random_state=0).fit(X, y)
        assert est.rank_ == 100
        chosen[patience] = est.solver_
    assert chosen == {50: "direct", None: "gram"}
