"""The glibc tuning that keeps frame-sized buffers mapped between frames (in fresh processes:
malloc settings are process-wide)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc-only tuning"
)

# A worker thread allocates and frees one frame's worth of buffers per iteration, as the render
# pool does; page faults after the first iteration mean the memory went back to the kernel.
PROBE = """
import json, resource, sys, threading
import numpy as np
from detect.engine.tuning import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "tuned" else None
faults = []
def work():
    for _ in range(6):
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        frame = np.ones((1280, 1920, 3), np.uint8)
        drawn = frame.copy()
        encoded = bytes(np.ones(3_300_000, np.uint8))
        del frame, drawn, encoded
        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
thread = threading.Thread(target=work)
thread.start()
thread.join()
print(json.dumps({"applied": applied, "faults": faults}))
"""


def _probe(mode: str, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True, text=True,
                         env=environ | env)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_freed_frame_buffers_are_reused_without_page_faults() -> None:
    frame_pages = 1280 * 1920 * 3 // 4096
    untuned = _probe("plain")
    tuned = _probe("tuned")
    # Without the tuning every iteration faults in at least a frame's worth of fresh pages ...
    assert min(untuned["faults"][1:]) > frame_pages
    # ... with it, only the first one does.
    assert tuned["applied"] is True
    assert max(tuned["faults"][1:]) < frame_pages // 20


def test_leaves_a_users_own_glibc_settings_alone() -> None:
    assert _probe("tuned", MALLOC_TOP_PAD_="0")["applied"] is False
