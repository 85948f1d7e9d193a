"""tools/check_skips.py on JUnit reports that pytest writes here (issue 47): a skip whose
reason CI allows passes, any other fails, xfails are listed but never fatal."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "check_skips.py"

_TESTS = '''
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="needs two CPUs to restrict to one")
def test_allowed_skip():
    pass

@pytest.mark.xfail(reason="a known defect")
def test_known_defect():
    assert False
'''


def _report(tmp_path, extra=""):
    """A JUnit report of a small test file run by pytest in a subprocess."""
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(_TESTS + extra))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's settings
    report = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                    "test_sample.py"], cwd=tmp_path, capture_output=True, check=False)
    return report


def _check(*args, env=None):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, env=env)


def test_allowed_skips_and_xfails_pass_and_are_listed(tmp_path):
    done = _check(_report(tmp_path))
    assert done.returncode == 0, done.stdout
    assert "skipped x1: needs two CPUs to restrict to one  [allowed:" in done.stdout
    assert "xfail x1: a known defect  [expected failure]" in done.stdout
    assert "3 tests, 1 skipped (0 not allowed), 1 xfailed" in done.stdout


def test_a_missing_package_fails_with_its_reason(tmp_path):
    extra = '''
def test_needs_a_package():
    pytest.importorskip("a_package_that_is_not_installed")
'''
    done = _check(_report(tmp_path, extra))
    assert done.returncode == 1, done.stdout
    assert "could not import 'a_package_that_is_not_installed'" in done.stdout
    assert "NOT ALLOWED in CI" in done.stdout
    assert "install what its reason names (the test extra)" in done.stdout


def test_the_data_kit_skip_is_allowed_only_without_nytro_data(tmp_path):
    sys.path.insert(0, str(TOOL.parent))
    try:
        import check_skips
    finally:
        sys.path.remove(str(TOOL.parent))
    kit = next(entry.reason for entry in check_skips.ALLOWED if entry.when is check_skips._no_data)
    extra = f'''
@pytest.mark.skipif(True, reason={kit!r})
def test_on_the_kit():
    pass
'''
    report = _report(tmp_path, extra)
    env = {k: v for k, v in os.environ.items() if k != "NYTRO_DATA"}
    assert _check(report, env=env).returncode == 0
    assert _check(report, env={**env, "NYTRO_DATA": str(tmp_path)}).returncode == 1


@pytest.mark.parametrize("content", [None, "<testsuites></testsuites>", "not xml"])
def test_an_unreadable_or_empty_report_is_an_error(tmp_path, content):
    report = tmp_path / "report.xml"
    if content is not None:
        report.write_text(content)
    done = _check(report)
    assert done.returncode == 2 and "cannot use" in done.stdout


def test_a_skip_run_in_another_report_passes(tmp_path):
    """A check that needs an environment of its own (SCIPY_ARRAY_API=1 for scikit-learn's
    array API check) is skipped by the main run and run by a call of its own: given both
    reports, the skip is no missing test; given the main one alone, it is."""
    extra = '''
import os

def test_needs_its_environment():
    if not os.environ.get("NYTRO_TEST_OWN_RUN"):
        pytest.skip("NYTRO_TEST_OWN_RUN is not set")
'''
    main = _report(tmp_path, extra)
    own = main.rename(tmp_path / "main.xml").with_name("own.xml")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={own}",
                    "test_sample.py", "-k", "needs_its_environment"], cwd=tmp_path, capture_output=True,
                   env={**os.environ, "NYTRO_TEST_OWN_RUN": "1"}, check=False)
    assert _check(tmp_path / "main.xml").returncode == 1
    done = _check(tmp_path / "main.xml", own)
    assert done.returncode == 0, done.stdout
    assert "ran elsewhere x1: NYTRO_TEST_OWN_RUN is not set  [run in another of the reports]" in done.stdout
