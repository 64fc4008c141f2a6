"""Signals: SIGTERM is handled like Ctrl-C at any moment of a
local or a Ray run (frame in hand finished or rolled back, pools closed, shared memory unlinked,
run.json recording the stop, one line, resumable to the same outputs); a process group killed
outright leaves shared memory that the next run removes; a Ctrl-C whose exception a library
swallows still stops the run."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.outputs import output_bytes, table
from helpers.paths import TINY_SEGMENT
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
    deadline = time.monotonic() + 300  # a run started at low priority on a machine loaded 5x over is slow
    while time.monotonic() < deadline and proc.poll() is None:
        seen = journal.read_text().count("\n") if journal.exists() else 0
        if seen >= lines:
            if seen >= total:
                pytest.fail(f"the test process only looked when {seen} of {total} frames were journaled: "
                            f"the machine was too busy to signal mid-run")
            return
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
        pytest.fail(f"the run had journaled fewer than {lines} frames after 300 s: the machine was too busy")
    pytest.fail(f"the run ended (exit {proc.poll()}) before {lines} frames were journaled")


def wait_until_it_handles(proc: subprocess.Popen, sig: signal.Signals, seconds: float = 120.0) -> None:
    """Until the process has a handler for `sig` (its /proc status's caught-signal mask), so a signal
    sent now lands in detect's code, not in the interpreter's own start-up (which a loaded machine
    can stretch past any fixed sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        status = Path(f"/proc/{proc.pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught >> (int(sig) - 1) & 1:
            return
        time.sleep(0.005)
    pytest.fail(f"the process did not handle {sig.name} within {seconds:g} s (exit {proc.poll()})")


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
    _, err = proc.communicate(timeout=300)  # a hang guard: a lost signal fails on the exit code below
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
    wait_until_it_handles(proc, signal.SIGTERM)  # detect's guard is up: Python is importing the command's modules
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


@pytest.fixture
def ctrl_c_raises():
    """SIGINT handled as in a terminal (Python's own handler) for the test, whatever the test runner set."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def run_in_process(out: Path, source: Path, model: Path) -> tuple[int, str]:
    code, _, err = run_cli(["run", source, "--model", model, "--quiet", "--no-eval", "--no-report", "--batch-size", "2",
                            "--render", "threads", "--out", out])
    return code, err


@pytest.mark.slow
def test_a_ctrl_c_while_tensorflow_reads_the_shapes_of_the_next_image_stops_the_run(
        tiny_v2_path, stub_dynamic_dir, tmp_path, monkeypatch, ctrl_c_raises, load_each_model_once):
    """TensorFlow's C++ calls `TensorShape.__len__` to read a dataset iterator's output shapes and
    clears whatever it raises: a Ctrl-C whose handler ran there vanished, and the run went on to its
    last image, exit 0, silent (at some of these reads TensorFlow then overran a buffer and the
    process aborted). The signal is raised here at one of those reads, on the run's second image."""
    from tensorflow.python.framework.tensor_shape import TensorShape

    original, reads = TensorShape.__len__, []

    def signalled_len(self: TensorShape) -> int:
        if sys._getframe(1).f_code.co_name == "iterator_get_next" and threading.current_thread() is threading.main_thread():
            reads.append(self)
            if len(reads) == 20:
                signal.raise_signal(signal.SIGINT)  # its handler runs on this call's return, inside TensorFlow
        return original(self)

    monkeypatch.setattr(TensorShape, "__len__", signalled_len)
    out = tmp_path / "out"
    assert run_in_process(out, tiny_v2_path, stub_dynamic_dir) == (130, MESSAGES[signal.SIGINT][1] + "\n")
    assert len(reads) >= 20  # the signal was sent
    assert json.loads((out / "run.json").read_text())["stopped_by"] == "SIGINT"
    assert (out / TINY_SEGMENT / ".detect" / "journal.jsonl").read_text().count("\n") < 15
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the command's handler is gone


def test_a_ctrl_c_a_library_swallowed_while_the_model_loaded_stops_the_run_before_its_first_image(
        tiny_v2_path, stub_dynamic_dir, tmp_path, monkeypatch, ctrl_c_raises, load_each_model_once):
    import detect.engine.local_engine

    load = detect.engine.local_engine.load_model

    def swallowing_load(*args, **kwargs):
        model = load(*args, **kwargs)
        try:
            signal.raise_signal(signal.SIGINT)
            time.sleep(0)  # the KeyboardInterrupt is raised here at the latest
        except KeyboardInterrupt:
            pass  # as TensorFlow's C++ does with an exception raised in the Python it calls
        return model

    monkeypatch.setattr(detect.engine.local_engine, "load_model", swallowing_load)
    out = tmp_path / "out"
    assert run_in_process(out, tiny_v2_path, stub_dynamic_dir) == (130, MESSAGES[signal.SIGINT][1] + "\n")
    assert json.loads((out / "run.json").read_text())["stopped_by"] == "SIGINT"
    assert not (out / TINY_SEGMENT).exists()


def test_a_ctrl_c_a_library_swallowed_still_ends_the_command_as_interrupted(tmp_path, monkeypatch, ctrl_c_raises):
    def command(*_args: object) -> int:
        try:
            signal.raise_signal(signal.SIGINT)
            time.sleep(0)
        except KeyboardInterrupt:
            pass  # a library's `__del__` or C++ callback
        return 0

    monkeypatch.setattr("detect.cli.info_and_model.cmd_model", command)
    err = io.StringIO()
    assert main(["model", str(tmp_path)], stdout=io.StringIO(), stderr=err) == 130
    assert err.getvalue() == "detect: interrupted; rerun the command to start again\n"


def test_an_ignored_ctrl_c_stays_ignored_during_a_command_and_the_handlers_come_back_after_it(tmp_path, monkeypatch):
    def command(*_args: object) -> int:
        signal.raise_signal(signal.SIGINT)
        time.sleep(0)  # a handler that raises does so here at the latest
        return 0

    monkeypatch.setattr("detect.cli.info_and_model.cmd_model", command)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    codes = {}
    for ctrl_c in (signal.default_int_handler, signal.SIG_IGN):  # SIG_IGN: a background job of a shell
        signal.signal(signal.SIGINT, ctrl_c)
        try:
            codes[ctrl_c] = main(["model", str(tmp_path)], stdout=io.StringIO(), stderr=io.StringIO())
            assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == (ctrl_c, before[1])
        finally:
            signal.signal(signal.SIGINT, before[0])
    assert codes == {signal.default_int_handler: 130, signal.SIG_IGN: 0}
