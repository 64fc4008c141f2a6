"""Debian's Chromium driven by Playwright, for the tests that render the pages in a real browser."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# A browser test skips without Chromium (a developer's machine); under CI=true that skip fails the run.
needs_chromium = pytest.mark.skipif(not CHROMIUM.is_file(),
                                    reason="Debian's chromium is not installed: apt-get install chromium")


@contextlib.contextmanager
def chromium(*args: str) -> Iterator[Any]:
    """A headless Chromium (Playwright's `Browser`), closed on the way out; `args`: more command-line flags."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install playwright")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", *args])
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def phone_page() -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page 390 px wide, and the console errors it logs."""
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        yield page, errors
