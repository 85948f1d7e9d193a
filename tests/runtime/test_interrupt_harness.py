"""The Ctrl-C harness (tests/runtime/_interrupt_harness.py) on calls whose reaction is known: a
Python loop reacts at once, a child that ignores SIGINT is reported, not waited for."""
from __future__ import annotations

import sys

import pytest

from _interrupt_harness import interrupt_latency

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX signals")


def test_a_python_loop_is_interrupted_at_once():
    result = interrupt_latency("while True: time.sleep(0.01)", delay=0.2, n=10)
    assert result.started and result.interrupted and not result.finished, result
    assert 0 <= result.latency < 1.0, result
    assert result.exit_latency >= result.latency


def test_a_child_that_ignores_the_signal_is_killed_and_reported():
    result = interrupt_latency("signal.signal(signal.SIGINT, signal.SIG_IGN)\n    time.sleep(60)", delay=0.2,
                               n=10, give_up=1.0)
    assert result.started and not result.interrupted and result.latency == float("inf"), result


def test_the_signal_is_aimed_at_a_named_stage():
    # The path reports its iterations; the signal goes once they begin, and the core's
    # interruption point between iterations turns it into KeyboardInterrupt.
    result = interrupt_latency(
        "nytro.nytro_path(X, y, X[:100], 1.0, max_iter=10**7, solver='direct', progress=progress)",
        stage="", n=2000)
    assert result.started and result.interrupted, result
    assert result.latency < 2.0, result
