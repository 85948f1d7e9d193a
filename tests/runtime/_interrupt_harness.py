"""Ctrl-C latency of a long call, measured in a child interpreter.

    from _interrupt_harness import interrupt_latency
    result = interrupt_latency("nytro.nystrom_factor(K, method='qr')",
                               setup="K = nytro.gaussian_kernel(X, X, 1.0)", stage="factor")
    assert result.interrupted and result.latency < 1.0, result

What it adds to a plain "send SIGINT, wait for the exit": the signal can be aimed at one
stage (sent once the call's progress callback first reports a stage whose name contains
`stage`, or `delay` seconds after the call began, for stages that report nothing), and the
latency is timed inside the child, from the signal's arrival to the KeyboardInterrupt
reaching Python, so that interpreter start-up and shutdown on a loaded machine do not count.
A child that ignores the signal is killed after `give_up` seconds and reported as such.
The child's line "interrupted" is read as it comes, not after the child's exit: a stage
that runs a LAPACK call on an abandoned worker (abandonable.hpp) reacts at once, but the
interpreter's exit can wait for that worker to finish (5-6 s for KOLS at n = 3000 under
load, past 30 s on a busier machine), which must not count as not reacting.

The call may use `progress` (a callback that announces the start), `X`, `y` (a seeded
problem of `n` rows and `d` features) and whatever `setup` defines; `nytro` and `np` are
imported.
"""
from __future__ import annotations

import select
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

_CHILD = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    import nytro
    # Re-armed explicitly: a child started from a background job inherits SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = np.random.RandomState(0)
    X = rng.standard_normal(({n}, {d}))
    y = np.sin(X[:, 0])
    STAGE = {stage!r}
    announced = []
    def progress(stage, done, total):
        if not announced and (STAGE is None or STAGE in stage):
            announced.append(stage)
            print("started", stage, flush=True)
    {setup}
    DELAY = {delay!r}
    if STAGE is None and DELAY is not None:
        print("started (delay)", flush=True)
    try:
        {call}
    except KeyboardInterrupt:
        # time.monotonic is CLOCK_MONOTONIC, one clock for the whole machine: the parent
        # compares it with the time it sent the signal.
        print("interrupted", time.monotonic(), flush=True)
        sys.exit(130)
    print("finished", flush=True)
""")


@dataclass
class InterruptResult:
    started: bool  # the stage (or the call, with delay) began before the signal
    interrupted: bool  # KeyboardInterrupt reached Python
    finished: bool  # the call ended normally before the signal took effect
    latency: float  # seconds from the signal to KeyboardInterrupt in the child (inf if never)
    exit_latency: float  # seconds from the signal to the child's exit, as seen by the parent (inf: killed)
    stderr: str


def _line(stream, timeout):
    """The next line of an unbuffered binary pipe, or None if none begins within `timeout`
    seconds ("" at its end). Unbuffered, so that select sees every line that has come: a
    buffered reader can hold the next line already while select waits on the pipe."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline().decode() if ready else None


def interrupt_latency(call: str, *, setup: str = "", stage: str | None = None, delay: float | None = None,
                      after: float = 0.3, n: int = 2000, d: int = 3, start_timeout: float = 120.0,
                      give_up: float = 30.0, exit_grace: float = 5.0) -> InterruptResult:
    """Run `call` in a child, send SIGINT `after` seconds after it reported `stage` (or
    `delay` seconds after it began, when stage is None), and time the interruption. A child
    that reacted is given `exit_grace` seconds to exit before it is killed (exit_latency is
    then inf)."""
    if sys.platform == "win32":  # pragma: no cover
        raise RuntimeError("SIGINT to a child needs POSIX signals")
    source = _CHILD.format(n=n, d=d, stage=stage, delay=delay,
                           setup=textwrap.indent(textwrap.dedent(setup), "    ").strip(),
                           call=call)
    child = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             bufsize=0)
    try:
        first = _line(child.stdout, start_timeout)
        if not first or not first.startswith("started"):
            err = child.communicate(timeout=give_up)[1].decode() if child.poll() is not None else ""
            return InterruptResult(False, False, bool(first and first.startswith("finished")), float("inf"),
                                   float("inf"), err)
        time.sleep((delay or 0.0) + after)
        # Timed before the signal: the child may take it, and stamp its reaction, before
        # send_signal returns here (a latency measured after it came out negative).
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        lines = []
        while time.monotonic() - sent < give_up:
            line = _line(child.stdout, give_up - (time.monotonic() - sent))
            if not line:  # timed out, or the child closed its output (it exited)
                break
            lines.append(line)
            if line.startswith(("interrupted", "finished")):
                break
        # Once the child said "interrupted" its exit may wait on an abandoned LAPACK worker
        # (see above), which is not what is measured: a short grace, then it is killed.
        reacted = bool(lines) and lines[-1].startswith(("interrupted", "finished"))
        try:
            child.wait(timeout=exit_grace if reacted else give_up)
            exit_latency = time.monotonic() - sent
        except subprocess.TimeoutExpired:
            child.kill()
            exit_latency = float("inf")
        rest, err = child.communicate()
        out, err = "".join(lines) + rest.decode(), err.decode()
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    interrupted = [line for line in out.splitlines() if line.startswith("interrupted")]
    latency = float("inf")
    if interrupted:
        latency = float(interrupted[0].split()[1]) - sent
    return InterruptResult(True, bool(interrupted), "finished" in out, latency, exit_latency, err)
