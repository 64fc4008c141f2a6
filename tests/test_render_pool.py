"""Render processes fed through shared memory: same bytes as one render thread, failures reach the
main thread, slots are reused and cleaned up, the bench's scaling table reads right."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.outputs import output_bytes
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.core.errors import OutputError, UsageError
from detect.core.records import Detections
from detect.engine import render_pool
from detect.engine.local import process_segment
from detect.engine.render_pool import FrameSlots, WorkerDied, check_shm_room
from detect.engine.spec import SegmentSettings
from detect.model.facts import ModelFacts
from detect.tools.bench_scaling import StageScaling, scaling_lines
from detect.waymo.sources import resolve_one

FACTS = ModelFacts.from_json({"path": "/models/fake", "threshold": 0.5, "classes": None, "batch_size": 4})


class BoxDetector:
    """Three labeled boxes an image, so frames, chips, GIFs and the table all have content."""

    batch_size = 4

    def __call__(self, images: np.ndarray, sizes=None) -> list[Detections]:
        out = []
        for width, height in sizes:
            xyxy = np.array([[w0 * width, h0 * height, w1 * width, h1 * height]
                             for w0, h0, w1, h1 in ((0.1, 0.1, 0.5, 0.6), (0.4, 0.3, 0.9, 0.9), (0.0, 0.7, 0.2, 1.0))],
                            np.float32)
            out.append(Detections(xyxy, np.array([0.91, 0.72, 0.55], np.float32), np.array([3, 1, 8], np.int32),
                                  ("car", "person", "truck")))
        return out


def run(tiny_v2_path: Path, out: Path, **settings):
    return process_segment(resolve_one(str(tiny_v2_path)), out, BoxDetector(), SegmentSettings(**settings),
                           model_facts=FACTS)


@pytest.mark.slow
@pytest.mark.parametrize("frame_format", ["png", "jpg"])
def test_render_processes_write_the_same_bytes_as_one_render_thread(tiny_v2_path, tmp_path, frame_format):
    one = run(tiny_v2_path, tmp_path / "thread", render="threads", workers=1, frame_format=frame_format)
    many = run(tiny_v2_path, tmp_path / "processes", render="processes", workers=2, frame_format=frame_format)
    assert (one.images_processed, one.failures) == (many.images_processed, many.failures) == (15, ())
    a, b = output_bytes(tmp_path / "thread" / TINY_SEGMENT), output_bytes(tmp_path / "processes" / TINY_SEGMENT)
    names = set(a)
    assert "detections.parquet" in names and "mosaic.gif" in names and sum(n.endswith(frame_format) for n in names) == 15
    assert a.keys() == b.keys()
    assert [n for n in a if a[n] != b[n]] == []


@pytest.mark.slow
def test_two_render_threads_write_the_same_bytes_as_one(tiny_v2_path, tmp_path):
    run(tiny_v2_path, tmp_path / "one", render="threads", workers=1)
    run(tiny_v2_path, tmp_path / "two", render="threads", workers=2)
    assert output_bytes(tmp_path / "one" / TINY_SEGMENT) == output_bytes(tmp_path / "two" / TINY_SEGMENT)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_a_frame_a_worker_cannot_write_is_reported_and_the_others_are_written(tiny_v2_path, tmp_path, mode):
    first = run(tiny_v2_path, tmp_path / "out", render="threads", workers=1, gif=False)
    blocked = sorted((tmp_path / "out" / TINY_SEGMENT / "frames").rglob("*.png"))[3]
    blocked.unlink()
    blocked.mkdir()  # a directory where the worker must write the frame
    (blocked / "keep").write_text("user file")
    report = run(tiny_v2_path, tmp_path / "out", render=mode, workers=2, gif=False, mode="overwrite")
    assert first.images_processed == 15
    assert report.images_processed == 14
    [failure] = report.failures
    assert failure.stage == "render" and failure.key.frame_timestamp_micros == int(blocked.stem)
    assert "Is a directory" in failure.error or "directory" in failure.error.lower()
    assert (blocked / "keep").read_text() == "user file"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_render_process_that_dies_stops_the_segment_with_one_line_and_the_next_run_starts_afresh(
        tiny_v2_path, tmp_path):
    pool = render_pool.process_pool(2)
    with pytest.raises(concurrent.futures.process.BrokenProcessPool):
        pool.submit(os._exit, 3).result()  # a worker killed mid-run
    with pytest.raises(WorkerDied, match=r"^a render process ended abruptly \(killed or out of memory\?\); "
                                         r"the frames it held are not written: rerun with --resume \(in `detect "
                                         r"run`: --retry-failed\), or with --render threads$"):
        run(tiny_v2_path, tmp_path / "out", render="processes", workers=2, gif=False)
    assert isinstance(WorkerDied("x"), OutputError)  # the CLI prints it as one line, exit 1
    report = run(tiny_v2_path, tmp_path / "out", render="processes", workers=2, gif=False, mode="resume")
    assert report.images_processed + report.images_resumed == 15 and report.failures == ()


def test_auto_uses_processes_for_two_or_more_workers_and_a_thread_for_one():
    assert SegmentSettings(workers=1).render_mode == "threads"
    assert SegmentSettings(workers=2).render_mode == "processes"
    assert SegmentSettings(workers=4, render="threads").render_mode == "threads"
    assert SegmentSettings(workers=1, render="processes").render_mode == "processes"


def test_unknown_render_mode_is_refused(capsys):
    with pytest.raises(UsageError, match=r"^render must be one of auto, threads, processes, got 'gpu'$"):
        SegmentSettings(render="gpu")
    assert main(["segment", "x.parquet", "--render", "gpu"]) == 2
    assert "argument --render: invalid choice: 'gpu'" in capsys.readouterr().err


def test_the_manifest_says_how_frames_were_rendered(tiny_v2_path, tmp_path):
    import json

    run(tiny_v2_path, tmp_path, render="auto", workers=2, gif=False)
    engine = json.loads((tmp_path / TINY_SEGMENT / "manifest.json").read_text())["engine"]
    assert engine == {"name": "local", "render": "processes", "workers": 2}


def test_slots_are_reused_grown_and_unlinked():
    slots = FrameSlots(2)
    small, big = np.full((16, 16, 3), 7, np.uint8), np.full((2000, 1500, 3), 9, np.uint8)
    a = slots.put(small)
    assert np.ndarray(small.shape, np.uint8, buffer=a.buf).tolist() == small.tolist()
    slots.release(a)
    b = slots.put(small)
    assert b.name == a.name  # reused, not recreated
    c = slots.put(big)  # the other slot, created at the size it needs
    assert c.size >= big.nbytes and np.array_equal(np.ndarray(big.shape, np.uint8, buffer=c.buf), big)
    slots.release(b)
    slots.release(c)
    names = [b.name, c.name]
    slots.close()
    if Path("/dev/shm").is_dir():
        assert not any((Path("/dev/shm") / n.lstrip("/")).exists() for n in names)


def test_a_full_dev_shm_is_refused_before_any_frame_is_written(tmp_path):
    with pytest.raises(OutputError, match=r"too little for render processes \(~\d+ MB a frame slot\): use --render "
                                          r"threads or fewer --workers, or give the container more shared memory"):
        check_shm_room(1 << 60, tmp_path)


def test_render_processes_do_not_import_tensorflow():
    code = "import sys, detect.engine.render_pool; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_scaling_table_names_every_stage_and_flags_the_lowest_ratio():
    rows = [StageScaling("PNG frame (fpng)", "render processes", 60.0, 114.0, 14.0, 1.9),
            StageScaling("drawing", "render processes", 300.0, 480.0, 3.0, 1.6)]
    text = "\n".join(scaling_lines(rows))
    assert "PNG frame (fpng)" in text and "1.90" in text
    assert "lowest ratio 1.60 (drawing) (target >= 1.8 for every stage: MISSED)" in text
    rows[1] = StageScaling("drawing", "render processes", 300.0, 570.0, 3.0, 1.9)
    assert "lowest ratio 1.90 (PNG frame (fpng)) (target >= 1.8 for every stage: met)" in "\n".join(scaling_lines(rows))


def test_the_16_core_prediction_divides_each_stage_by_its_efficiency_and_names_the_bound():
    from detect.tools.bench_predict import OUTPUT_SETS, predict
    from detect.tools.bench_scaling import DECODE, STAGES

    rows = [StageScaling(DECODE, "tf.data threads", 70.0, 133.0, 14.0, 1.9)]  # efficiency 0.95
    rows += [StageScaling(name, "render processes", 100.0, 200.0, 10.0, 2.0) for name, _, _ in STAGES]  # efficiency 1
    table_only, png, default, _ = predict(rows, main_ms=4.0, cores=16)
    assert table_only.core_ms == pytest.approx(14 / 0.95 + 4)
    assert table_only.rate == pytest.approx(250.0) and table_only.bound == "the main process (one core)"
    assert png.core_ms == pytest.approx(14 / 0.95 + 4 + 3 * 10)  # drawing, PNG, the mosaic tile kept with it
    assert len(OUTPUT_SETS["default: PNG + 5 GIFs + mosaic"]) == 5
    assert default.core_ms == pytest.approx(14 / 0.95 + 4 + 5 * 10)
    assert default.rate == pytest.approx(16000 / default.core_ms) and default.bound == "all cores busy"
    assert default.render_cores == pytest.approx(default.rate * 50 / 1000)


def test_segments_share_one_set_of_slots_and_workers_let_go_of_unlinked_ones(tiny_v2_path, tmp_path):
    from multiprocessing import shared_memory

    run(tiny_v2_path, tmp_path / "a", render="processes", workers=2, gif=False)
    slots = render_pool.frame_slots(2)
    run(tiny_v2_path, tmp_path / "b", render="processes", workers=2, gif=False)
    assert render_pool.frame_slots(2) is slots  # the second segment reused them

    old = shared_memory.SharedMemory(create=True, size=4096)
    new = shared_memory.SharedMemory(create=True, size=4096)
    try:
        render_pool.attach(old.name)
        old.unlink()  # the parent replaced it by a larger slot
        render_pool.attach(new.name)
        if render_pool.SHM_DIR.is_dir():
            assert old.name not in render_pool._attached and new.name in render_pool._attached
    finally:
        for name in (old.name, new.name):
            stale = render_pool._attached.pop(name, None)
            if stale is not None:
                stale.close()
        old.close()
        new.close()
        new.unlink()


@pytest.mark.slow
def test_render_processes_write_under_a_relative_out_after_the_caller_changed_directory(tiny_v2_path, tmp_path,
                                                                                        monkeypatch):
    """The pool outlives a run and its processes keep the directory they started in: a later run's
    relative --out must still land under the caller's working directory."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    monkeypatch.chdir(tmp_path / "first")
    run(tiny_v2_path, Path("out"), render="processes", workers=2, gif=False)
    monkeypatch.chdir(tmp_path / "second")
    run(tiny_v2_path, Path("out"), render="processes", workers=2, gif=False)
    first, second = (output_bytes(tmp_path / d / "out" / TINY_SEGMENT) for d in ("first", "second"))
    assert second.keys() == first.keys() and any("frames" in name for name in second)
