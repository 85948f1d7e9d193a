"""Ctrl-C stops a long fit promptly (docs/design.md, "Contracts": check for Ctrl-C between
iterations), and verbose=1 reports progress on stderr.

The interrupt tests run the fit in a child interpreter, so that a core that ignores the
signal costs a killed child rather than a hung test run."""
from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from nytro import KRLSRegressor, LandweberRegressor, NystromKRLSRegressor, NytroRegressor

# LandweberRegressor's defaults are the paper's (step 1/n, 500 iterations), whose path is
# still falling at its end on these small problems: its ConvergenceWarning is tested in
# test_path_cut_warning.py, and is beside the point here.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# The child announces "started" from inside the C++ loop (the progress callback runs
# between iterations) or, for the estimator, just before fit. The problems are small
# but 10**7 iterations of them take minutes, so only the signal can end them early.
# SIGINT is re-armed explicitly: a child started from a background job inherits it ignored.
CHILD = textwrap.dedent("""
    import signal, sys
    import numpy as np
    import nytro
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = np.random.RandomState(0)
    X = rng.standard_normal((2000, 3))
    y = np.sin(X[:, 0])
    announced = []
    def progress(stage, done, total):
        if not announced:
            announced.append(stage)
            print("started", flush=True)
    {call}
    print("finished", flush=True)
""")

LONG_CALLS = {
    "nytro_path direct": "nytro.nytro_path(X, y, X[:100], 1.0, max_iter=10**7, solver='direct', progress=progress)",
    "nytro_path gram": "nytro.nytro_path(X, y, X[:100], 1.0, max_iter=10**7, solver='gram', progress=progress)",
    "nytro_path hold-out": ("nytro.nytro_path(X[:1500], y[:1500], X[:100], 1.0, X_val=X[1500:], y_val=y[1500:], "
                            "max_iter=10**7, progress=progress)"),
    "landweber_path": "nytro.landweber_path(X[:500], y[:500], 1.0, max_iter=10**7, progress=progress)",
    "NytroRegressor.fit": ("print('started', flush=True); "
                           "nytro.NytroRegressor(n_centers=100, method='cg', max_iter=10**7, "
                           "validation_fraction=None).fit(X, y)"),
}

SIGNAL_AFTER = 1.0  # seconds of running before Ctrl-C
STOP_WITHIN = 2.0  # seconds from Ctrl-C to the child's exit, interpreter shutdown included


def _wait_for_line(stream, timeout):
    """The next line of `stream`, or None if none comes within `timeout` seconds."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else None


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX signals")
@pytest.mark.parametrize("call", list(LONG_CALLS))
def test_ctrl_c_stops_a_long_fit(call):
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(call=LONG_CALLS[call])],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _wait_for_line(child.stdout, timeout=60)
        if line != "started\n":
            pytest.fail(f"child did not start: {line!r}, stderr: {child.stderr.read() if line == '' else ''}")
        time.sleep(SIGNAL_AFTER)
        assert child.poll() is None, "the fit ended before the signal: make it longer"
        child.send_signal(signal.SIGINT)
        sent = time.monotonic()
        try:
            out, err = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            pytest.fail(f"{call}: still running 30 s after Ctrl-C")
        elapsed = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert "finished" not in out
    assert child.returncode != 0
    assert "KeyboardInterrupt" in err, err
    assert elapsed < STOP_WITHIN, f"{call}: exited {elapsed:.2f} s after Ctrl-C"


@pytest.mark.parametrize("cls, params", [
    (NytroRegressor, {"n_centers": 20, "max_iter": 200}),
    (LandweberRegressor, {"max_iter": 200}),
    (NystromKRLSRegressor, {"n_centers": 20}),
    (KRLSRegressor, {}),
])
def test_verbose_prints_progress_to_stderr(cls, params, capsys):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((300, 2))
    y = np.sin(X[:, 0])

    cls(verbose=1, random_state=0, **params).fit(X, y)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines, "verbose=1 printed nothing"
    # "[NytroRegressor] <stage> done/total", the last one of a stage when it completes
    pattern = re.compile(rf"\[{cls.__name__}\] [\w ]+ (\d+)/(\d+)")
    for line in lines:
        match = pattern.fullmatch(line)
        assert match, f"unexpected progress line {line!r}"
        assert 0 <= int(match[1]) <= int(match[2])
    assert any(m[1] == m[2] for m in map(pattern.fullmatch, lines))

    cls(verbose=0, random_state=0, **params).fit(X, y)
    assert capsys.readouterr() == ("", "")
