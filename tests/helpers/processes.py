"""`detect` as a process of its own, to signal mid-run: a segment long enough to stop, the run it
should resume to, the one line each signal prints, and the shared memory a process leaves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from detect.cli import main
from detect.engine import shm
from detect.tools.synthetic import repeat_frames, write_frames_tfrecord

ROOT = Path(__file__).resolve().parents[2]

SEGMENT = "stopped"
IMAGES = 100  # 20 frames of 5 cameras
MESSAGES = {
    signal.SIGTERM: (143, "detect: terminated (SIGTERM); what finished is kept: rerun with --resume to continue where "
                          "it stopped"),
    signal.SIGINT: (130, "detect: interrupted; rerun with --resume to continue where it stopped"),
}


def write_segment(real_camera_frames, folder: Path) -> Path:
    """The real frame's images repeated to 100 (20 frames of 5 cameras), as a v1 segment `stopped`.

    The last moment a test signals at (40) still leaves three fifths of the run, so the signal lands
    mid-run even on a loaded machine where the test process waits for a core while the run goes on
    (a signal that arrives after the run is complete is a no-op). The run is also started at a lower
    priority (`start`), so the test process gets a core first."""
    frames = repeat_frames(real_camera_frames, IMAGES // 5, segment_context_name=SEGMENT)
    return write_frames_tfrecord(folder / f"{SEGMENT}.tfrecord", frames)


def run_clean(segment: Path, model: Path, out: Path) -> Path:
    """The segment run uninterrupted, to compare a stopped and resumed run with."""
    assert main(["run", str(segment), "--model", str(model), "--quiet", "--no-eval", "--no-report",
                 "--batch-size", "2", "--out", str(out)]) == 0
    return out


def ours(pid: int) -> list[str]:
    """Shared-memory names of process `pid` still in /dev/shm."""
    if not shm.SHM_DIR.is_dir():
        return []
    return sorted(n for n in os.listdir(shm.SHM_DIR) if n.startswith((f"detect-{pid}-", f"sem.detect-{pid}-")))


def lower_priority() -> None:
    """`preexec_fn` for a run a test must catch mid-way (to signal or kill it): on a busy 2-core
    machine the run (a model thread, render processes) could otherwise keep the test process off
    the CPU until it has finished."""
    os.nice(10)


def _child_setup() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT
    # ignored: the command under test gets the default, as in a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    lower_priority()


def start(args: list[str], **popen) -> subprocess.Popen:
    """`detect ARGS` as a process of this interpreter, at a lower priority, SIGINT at its default, stderr piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    popen.setdefault("stdout", subprocess.DEVNULL)
    return subprocess.Popen([sys.executable, "-m", "detect.cli", *args], env=env,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_child_setup, **popen)
