"""Signals: SIGTERM is handled like Ctrl-C at any moment of a
local or a Ray run (frame in hand finished or rolled back, pools closed, shared memory unlinked,
run.json recording the stop, one line, resumable to the same outputs); a process group killed
outright leaves shared memory that the next run removes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.outputs import output_bytes, table
from helpers.processes import IMAGES, MESSAGES, SEGMENT, ours, run_clean, start, write_segment

from detect.cli import main
from detect.engine import shm


@pytest.fixture(scope="module")
def segment(real_camera_frames, tmp_path_factory) -> Path:
    return write_segment(real_camera_frames, tmp_path_factory.mktemp("signals"))


@pytest.fixture(scope="module")
def clean_run(segment, stub_dynamic_dir, tmp_path_factory) -> Path:
    return run_clean(segment, stub_dynamic_dir, tmp_path_factory.mktemp("clean"))


def wait_for_lines(proc: subprocess.Popen, journal: Path, lines: int, total: int) -> None:
    """Return once `lines` frames are journaled, with the run still under way (a signal must land
    mid-run); fail clearly when the machine was too busy for that."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        seen = journal.read_text().count("\n") if journal.exists() else 0
        if seen >= lines:
            if seen >= total:
                pytest.fail(f"the test process only looked when {seen} of {total} frames were journaled: "
                            f"the machine was too busy to signal mid-run")
            return
        time.sleep(0.02)
    pytest.fail(f"the run ended (exit {proc.poll()}) before {lines} frames were journaled")


def signal_mid_run(args: list[str], journal: Path, lines: int, sig: signal.Signals, attempts: int = 3) -> subprocess.Popen:
    """Start `detect args` and send `sig` once `lines` frames are journaled, the run still under way.

    On a loaded machine the test process can lose the CPU between reading the journal and
    signalling, long enough for the run to end first. Popen then sends nothing (it does not signal
    a process it has reaped), so that attempt says nothing about how a run handles a signal: it is
    made again on a fresh OUT. A signal that was sent is never retried."""
    out = journal.parents[2]
    for _ in range(attempts):
        proc = start(args)
        wait_for_lines(proc, journal, lines, IMAGES)
        proc.send_signal(sig)
        if proc.returncode is None:  # sent: the run was still going
            return proc
        shutil.rmtree(out)
    pytest.fail(f"the run ended before the test process could signal it, {attempts} times: the machine was too busy")


@pytest.mark.signals
@pytest.mark.parametrize("sig, lines", [(signal.SIGTERM, 2), (signal.SIGINT, 14), (signal.SIGTERM, 29),
                                        (signal.SIGINT, 40)])
def test_a_signal_mid_run_is_recorded_and_resume_gives_the_clean_outputs(segment, clean_run, stub_dynamic_dir,
                                                                          tmp_path, sig, lines):
    out = tmp_path / "out"
    args = ["run", str(segment), "--model", str(stub_dynamic_dir), "--quiet", "--no-eval", "--no-report",
            "--batch-size", "2", "--out", str(out), "--workers", "2", "--render", "processes"]
    proc = signal_mid_run(args, out / SEGMENT / ".detect" / "journal.jsonl", lines, sig)
    _, err = proc.communicate(timeout=120)
    code, message = MESSAGES[sig]
    run_file = (out / "run.json").read_text() if (out / "run.json").exists() else None
    assert (proc.returncode, err.strip().splitlines()) == (code, [message]), (err, run_file)  # nothing else
    assert json.loads((out / "run.json").read_text())["stopped_by"] == sig.name
    assert ours(proc.pid) == []  # slots and semaphores unlinked on the way out
    assert main([*args, "--resume"]) == 0
    assert json.loads((out / "run.json").read_text())["stopped_by"] is None
    clean, resumed = output_bytes(clean_run / SEGMENT), output_bytes(out / SEGMENT)
    assert clean.keys() == resumed.keys() and [k for k in clean if clean[k] != resumed[k]] == []
    assert table(out / SEGMENT).num_rows == table(clean_run / SEGMENT).num_rows


@pytest.mark.signals
def test_sigterm_while_starting_is_one_line(segment, stub_dynamic_dir, tmp_path):
    proc = start(["run", str(segment), "--model", str(stub_dynamic_dir), "--out", str(tmp_path / "out")])
    time.sleep(0.3)  # Python is importing the command's modules
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert err.strip().splitlines()[-1] in ("detect: interrupted while starting; nothing was written",
                                            MESSAGES[signal.SIGTERM][1])


@pytest.mark.signals
def test_a_group_killed_outright_leaves_shared_memory_that_the_next_run_removes(segment, stub_dynamic_dir, tmp_path):
    out = tmp_path / "out"
    args = ["segment", str(segment), "--model", str(stub_dynamic_dir), "--quiet", "--no-eval", "--no-report",
            "--batch-size", "2", "--out", str(out), "--workers", "2", "--render", "processes"]
    proc = start(args, start_new_session=True)
    wait_for_lines(proc, out / SEGMENT / ".detect" / "journal.jsonl", 6, IMAGES)
    os.killpg(proc.pid, signal.SIGKILL)  # the parent, its render processes and multiprocessing's tracker
    # Not reaped yet: while the killed parent is a zombie its pid is taken, so a run that starts in
    # another test now (pytest-xdist) leaves its names alone. The resume below comes after the reaping.
    time.sleep(0.5)
    left = ours(proc.pid)
    assert any(n.startswith(f"detect-{proc.pid}-") for n in left) and any(n.startswith("sem.") for n in left), left
    proc.wait()
    assert main([*args, "--resume"]) == 0
    assert ours(proc.pid) == []


def test_the_sweep_leaves_live_processes_and_other_names_alone(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    names = [f"detect-{dead_pid}-0-ab", f"sem.detect-{dead_pid}-xy", f"detect-{os.getpid()}-1-cd", "psm_1234",
             "sem.mp-abcd", "detect-notapid-1"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert sorted(shm.sweep_stale(tmp_path)) == sorted(names[:2])
    assert sorted(os.listdir(tmp_path)) == sorted(names[2:])
