"""Under CI=true a skip fails the run unless its reason is on the allow-list; elsewhere a skip stays a skip."""

from __future__ import annotations

import pytest

TESTS = '''
import pytest

def test_without_a_browser():
    pytest.skip("Debian's chromium is not installed: apt-get install chromium")

@pytest.fixture
def model():
    pytest.skip("the person model is not installed")

def test_with_a_model(model):
    pass

def test_as_root():
    pytest.skip("root writes into read-only directories")

@pytest.mark.xfail(reason="known")
def test_expected_to_fail():
    assert False

def test_that_runs():
    pass
'''


@pytest.mark.parametrize("ci", ["true", ""])
def test_under_ci_an_unlisted_skip_fails_and_a_listed_one_stays_a_skip(pytester, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_crafted=TESTS)
    result = pytester.runpytest_inprocess("-p", "helpers.ci_skips", "-p", "no:cacheprovider", "-rA")
    if ci:
        result.assert_outcomes(passed=1, skipped=1, failed=1, errors=1, xfailed=1)
        result.stdout.fnmatch_lines([
            "SKIPPED * root writes into read-only directories",
            "ERROR test_crafted.py::test_with_a_model - CI=true: skipped (the person model is not installed)*",
            "FAILED test_crafted.py::test_without_a_browser - CI=true: skipped (Debian's chromium is not installed: "
            "apt-get install chromium); a skip that is not on the allow-list (tests/helpers/ci_skips.py) fails the run",
        ])
    else:
        result.assert_outcomes(passed=1, skipped=3, xfailed=1)


@pytest.mark.slow
def test_under_ci_a_module_skipped_at_import_fails_the_run(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_crafted='import pytest\npytest.importorskip("no_such_module_here")\n\ndef test_x():\n    pass\n')
    result = pytester.runpytest_inprocess("-p", "helpers.ci_skips", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*CI=true: skipped (could not import 'no_such_module_here'*"])
