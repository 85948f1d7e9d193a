"""Print the skips and xfails of pytest JUnit XML reports; fail on a skip CI must not have.

Usage::

    python -m pytest tests -q --junitxml=report.xml
    python tools/check_skips.py report.xml [more.xml ...]

Every skipped and xfailed test of the reports is printed, grouped by its reason with a
count. A skip passes only when the same test ran in another of the reports given (a check
that needs an environment of its own, run by a pytest call of its own), or when its reason
is in ALLOWED below: a reason that legitimately skips on a CI machine (a property of the
build or the machine that CI does not choose, or data that are absent by configuration),
each with why. Any other skip (a package missing from the test extra, say) makes the exit
status 1, so that CI cannot silently stop running a test. Exit status 2: a report that
cannot be read or holds no test. Expected failures (xfail) are printed, never fatal: they
are marked as such in the tests, with their reason.
"""
from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class Allowed:
    reason: str                                  # the skip's reason, exactly as the test gives it
    why: str                                     # why CI may legitimately hit it
    when: Optional[Callable[[], bool]] = None    # allowed only where this holds (None: always)


def _no_data() -> bool:
    return not os.environ.get("NYTRO_DATA")


_KIT_UNSET = "NYTRO_DATA is not set to the NYTRO data kit folder (see docs/user_guide/reproducing.md)"

ALLOWED = (
    Allowed("a native build has no variants to choose from",
            "the -march=native build (CI's native stage) has no dispatched variants"),
    Allowed("one variant runs here", "a native build, or a CPU that runs only the baseline variant"),
    Allowed("needs two CPUs to restrict to one", "a machine (or cgroup) with one CPU"),
    Allowed("needs a BLAS pool of 2 threads or more to see it shrink", "a machine (or cgroup) with one CPU"),
    Allowed("SIGINT to a child needs POSIX signals", "Windows"),
    Allowed("glibc's malloc", "a Linux without glibc (musl)"),
    Allowed(_KIT_UNSET, "the paper's data sets are not part of CI unless NYTRO_DATA names them", _no_data),
    Allowed("NYTRO_DATA does not hold insurance_coil2000", "the data sets are absent: NYTRO_DATA unset", _no_data),
    Allowed("YearPredictionMSD.txt is not in the data kit (see its README)",
            "the data kit leaves YearPredictionMSD out (its README says why)"),
)


def _cases(path):
    """The ids of the report's test cases that ran (no <skipped> element), and (test id,
    kind, reason) of each skipped or xfailed one (pytest writes the reason as the message
    of its <skipped> element)."""
    cases = list(ET.parse(path).getroot().iter("testcase"))
    if not cases:
        raise ValueError("it holds no test case: did pytest run any test?")
    ran, found = set(), []
    for case in cases:
        name = "::".join(part for part in (case.get("classname"), case.get("name")) if part)
        skips = case.findall("skipped")
        if not skips:
            ran.add(name)
        for skipped in skips:
            kind = "xfail" if skipped.get("type") == "pytest.xfail" else "skipped"
            found.append((name, kind, skipped.get("message") or ""))
    return ran, found


def _allowed(reason: str) -> Optional[Allowed]:
    for entry in ALLOWED:
        if entry.reason == reason and (entry.when is None or entry.when()):
            return entry
    return None


def check(paths, out=sys.stdout) -> int:
    """Print the skips and xfails of the reports at `paths`; the exit status (see the
    module's docstring)."""
    groups = defaultdict(list)
    ran, skips = set(), []
    for path in paths:
        try:
            ran_here, found = _cases(path)
        except (OSError, ET.ParseError, ValueError) as error:
            print(f"check_skips: cannot use {path}: {error}", file=out)
            return 2
        ran |= ran_here
        skips += found
    for name, kind, reason in skips:
        # A test skipped in one report and run in another (a check that needs its own
        # environment, run in a pytest call of its own) was not left out.
        groups["ran elsewhere" if kind == "skipped" and name in ran else kind, reason].append(name)
    total = len(ran | {name for name, _, _ in skips})
    refused = 0
    for (kind, reason), names in sorted(groups.items(), key=lambda item: (item[0][0], -len(item[1]), item[0][1])):
        if kind == "xfail":
            verdict = "expected failure"
        elif kind == "ran elsewhere":
            verdict = "run in another of the reports"
        else:
            entry = _allowed(reason)
            verdict = f"allowed: {entry.why}" if entry else "NOT ALLOWED in CI"
            refused += 0 if entry else len(names)
        print(f"{kind} x{len(names)}: {reason or '(no reason given)'}  [{verdict}]", file=out)
        for name in names[:5]:
            print(f"    {name}", file=out)
        if len(names) > 5:
            print(f"    ... and {len(names) - 5} more", file=out)
    skipped = sum(len(n) for (kind, _), n in groups.items() if kind == "skipped")
    xfailed = sum(len(n) for (kind, _), n in groups.items() if kind == "xfail")
    print(f"check_skips: {total} tests, {skipped} skipped ({refused} not allowed), {xfailed} xfailed", file=out)
    if refused:
        print("check_skips: a test CI must run was skipped: install what its reason names (the test extra), "
              "or add the reason to ALLOWED in tools/check_skips.py with why CI may skip it", file=out)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("reports", nargs="+", help="pytest --junitxml report(s)")
    return check(parser.parse_args(argv).reports)


if __name__ == "__main__":
    sys.exit(main())
