"""Output threads run at a lower priority than the model's (Linux per-thread nice)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from detect.engine.tuning import BACKGROUND_NICE, lower_thread_priority

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def _in_thread(before: int | None = None) -> tuple[bool, int]:
    out: list[tuple[bool, int]] = []

    def run() -> None:
        tid = threading.get_native_id()
        if before is not None:
            os.setpriority(os.PRIO_PROCESS, tid, before)
        applied = lower_thread_priority()
        out.append((applied, os.getpriority(os.PRIO_PROCESS, tid)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out[0]


def test_lowers_only_the_calling_thread() -> None:
    main_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    if main_nice >= BACKGROUND_NICE:
        pytest.skip(f"this test process already runs at nice {main_nice}")
    assert _in_thread() == (True, BACKGROUND_NICE)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_nice


def test_never_raises_a_thread_that_is_already_lower() -> None:
    assert _in_thread(before=BACKGROUND_NICE + 5) == (False, BACKGROUND_NICE + 5)
