"""A pytest plugin (registered by tests/conftest.py): under CI=true a skipped test fails the run unless
its reason is on `ALLOWED`, so a browser, a model or a download that CI failed to set up cannot pass
silently as a skip."""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

# The reasons (their beginnings) CI may skip for: what CI's machine is, or a tool CI is not meant to have.
ALLOWED = (
    "root writes into read-only directories",  # CI runs as root
    "this test process already runs at nice",  # a runner that starts the suite at a low priority
    "no trackers venv",  # the third-party tracker the docs compare against lives in a venv of its own
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unlisted_skip(report: pytest.TestReport | pytest.CollectReport) -> str | None:
    """The reason of `report`'s skip when it is not on `ALLOWED`; None when it is, or is no skip (an
    expected failure reports as skipped too)."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    return None if reason.startswith(ALLOWED) else reason


def _fail_unlisted(report: pytest.TestReport | pytest.CollectReport) -> None:
    if in_ci() and (reason := unlisted_skip(report)) is not None:
        report.outcome = "failed"
        report.longrepr = (f"CI=true: skipped ({reason}); a skip that is not on the allow-list "
                           "(tests/helpers/ci_skips.py) fails the run")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, None]:
    outcome = yield
    _fail_unlisted(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    _fail_unlisted(outcome.get_result())
