"""Hostile and broken inputs: nothing escapes OUT, one bad frame or segment never stops a run,
every error is one line with the documented exit code."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.frames import frames, jpeg
from PIL import Image

from detect.cli import main
from detect.core.errors import OutputError
from detect.core.names import segment_dir_name
from detect.core.records import CameraFrame
from detect.model.facts import ModelFacts
from detect.results.layout import SegmentLock
from detect.tools.synthetic import write_camera_image_parquet

T0 = 1_000_000
# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


def bomb(width: int = 13000, height: int = 13000) -> bytes:
    """A small valid JPEG whose header (SOF0) claims `width` x `height`."""
    data = bytearray(jpeg(16, 16))
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 7] = height.to_bytes(2, "big")
    data[sof + 7:sof + 9] = width.to_bytes(2, "big")
    return bytes(data)


def segment(args: list[str], model: Path, err: io.StringIO | None = None, out: io.StringIO | None = None,
            report: bool = False) -> int:
    """`detect segment ARGS --model MODEL --quiet`; without the report (its charts cost most of a
    stub-model run) unless the test is about everything the command writes."""
    flags = [] if report else ["--no-report"]
    return main(["segment", *map(str, args), "--model", str(model), "--quiet", *flags], stdout=out, stderr=err)


def manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# --- output paths -------------------------------------------------------------------------

HOSTILE = ["..", ".", "", "/", "a/b", "../../escape", "x" * 300, "line\nbreak", "nul\x00byte", ".hidden", "-rf"]
QUICK = {"..", "/", "line\nbreak", "x" * 300}  # in `make test-fast`; every name runs in `make test`


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow) for n in HOSTILE])
def test_hostile_segment_names_write_only_under_out_even_with_overwrite(name, stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "in" / "seg.parquet", frames(name, jpeg(), jpeg()))
    out = tmp_path / "work" / "out"
    sentinel = tmp_path / "work" / "keep-me"
    sentinel.mkdir(parents=True)
    (sentinel / "file").write_text("mine")
    before = tree(tmp_path)
    assert segment([source, "--out", out], stub_dynamic_dir, report=True) == 0
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir, report=True) == 0
    written = tree(tmp_path) - before
    assert written and all(p == "work/out" or p.startswith("work/out/") for p in written)
    directory = out / segment_dir_name(name)
    assert [p.name for p in out.iterdir()] == [directory.name]
    assert directory.name.startswith("renamed-")
    assert (sentinel / "file").read_text() == "mine"
    table = pq.read_table(directory / "detections.parquet")
    assert set(table.column("key.segment_context_name").to_pylist()) == {name}  # the data keeps the real name
    assert manifest(directory)["segment_context_name"] == name


def test_waymo_names_are_their_own_directories():
    real = "1024360143612057520_3580_000_3600_000"
    assert segment_dir_name(real) == real
    assert segment_dir_name("../x") != segment_dir_name("..x")
    assert segment_dir_name("../x") == segment_dir_name("../x")


def test_a_symlink_planted_at_the_segment_directory_is_refused(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    out = tmp_path / "out"
    out.mkdir()
    (out / "seg_a").symlink_to(outside)
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"detect: error: {out / 'seg_a'}: resolves to {outside.resolve()}, outside the output directory")
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]


def test_overwrite_refuses_a_directory_detect_did_not_write(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    theirs = tmp_path / "out" / "seg_a"
    theirs.mkdir(parents=True)
    (theirs / "thesis.tex").write_text("x")
    assert segment([source, "--out", tmp_path / "out", "--overwrite"], stub_dynamic_dir) == 2
    assert capsys.readouterr().err == (
        f"detect: error: {theirs} exists but was not written by detect (no .detect/settings.json); refusing to "
        f"delete anything in it: move it away or choose another --out\n")
    assert (theirs / "thesis.tex").read_text() == "x"
    assert segment([source, "--out", tmp_path / "out", "--resume"], stub_dynamic_dir) == 2
    assert "exists but was not written by detect; refusing to resume into it" in capsys.readouterr().err


@pytest.mark.slow
def test_overwrite_deletes_only_what_detect_wrote_and_refuses_symlinks(stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(), jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out], stub_dynamic_dir, report=True) == 0
    directory = out / "seg_a"
    (directory / "notes.txt").write_text("mine")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "1.png").write_text("not ours")
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir, report=True) == 0
    assert (directory / "notes.txt").read_text() == "mine"
    assert (directory / "frames" / "FRONT" / f"{T0}.png").is_file()
    (directory / "frames" / "SIDE_LEFT").symlink_to(outside)  # a camera directory that leads out
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir) == 2  # refused, nothing deleted
    assert (outside / "1.png").read_text() == "not ours"
    assert (directory / "frames" / "FRONT" / f"{T0}.png").is_file()


@pytest.mark.slow
def test_a_second_process_on_the_same_segment_directory_is_refused(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out], stub_dynamic_dir) == 0
    with SegmentLock(out / "seg_a"):  # flock: a second open file description conflicts, even in-process
        assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir) == 2
        assert capsys.readouterr().err == (
            f"detect: error: {out / 'seg_a'} is being written by another detect process (pid {os.getpid()}); "
            f"wait for it to finish or choose another --out\n")
    assert (out / "seg_a" / "manifest.json").is_file()  # --overwrite did not run under the live writer
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir) == 0


@pytest.mark.slow
@pytest.mark.parametrize("content", ["", "{not json", "[1, 2]"])
def test_a_corrupt_settings_file_never_disables_the_resume_check(content, stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out], stub_dynamic_dir) == 0
    settings = out / "seg_a" / ".detect" / "settings.json"
    settings.write_text(content)
    assert segment([source, "--out", out, "--resume", "--threshold", "0.9"], stub_dynamic_dir) == 2
    err = capsys.readouterr().err
    reason = "is empty" if not content else "is corrupt (not a JSON object)" if content.startswith("[") else "is unreadable"
    assert err.startswith(f"detect: error: {settings} {reason}")
    assert err.endswith("cannot check the earlier run's settings; use --overwrite to start again\n")


def test_bookkeeping_files_are_written_atomically(tmp_path, monkeypatch):
    from detect.results import journal

    journal.save_settings(tmp_path, {"a": 1})
    monkeypatch.setattr(json, "dumps", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OSError):
        journal.save_settings(tmp_path, {"a": 2})
    assert journal.load_settings(tmp_path) == {"a": 1}
    assert sorted(p.name for p in (tmp_path / ".detect").iterdir()) == ["settings.json"]


# --- broken frames ---------------------------------------------------------------------------

@pytest.mark.slow
def test_duplicate_keys_in_a_v2_file_keep_the_first_and_report_the_rest(stub_dynamic_dir, tmp_path, capsys):
    rows = frames("seg_a", jpeg(color=(255, 0, 0)), jpeg())
    rows.append(CameraFrame("seg_a", T0, 1, jpeg(color=(0, 0, 255))))  # FRONT at T0 again
    source = write_camera_image_parquet(tmp_path / "seg.parquet", rows)
    assert segment([source, "--out", tmp_path / "out"], stub_dynamic_dir) == 1
    directory = tmp_path / "out" / "seg_a"
    m = manifest(directory)
    assert m["counts"]["images_planned"] == 4 and m["counts"]["images_processed"] == 4
    assert [(f["camera"], f["stage"], f["error"]) for f in m["failures"]] == [
        ("FRONT", "read", "duplicate image: this (timestamp, camera) key appears again at position 4 of the file; "
                          "the first one is used")]
    with Image.open(directory / "frames" / "FRONT" / f"{T0}.png") as png:
        assert png.getpixel((48, 8))[0] > 200  # the red first image, not the blue duplicate
    assert (directory / "FRONT.gif").is_file() and (directory / "mosaic.gif").is_file()


def test_repeated_frames_and_cameras_in_a_tfrecord_are_reported_not_fatal(stub_dynamic_dir, tmp_path):
    import tensorflow as tf

    from detect.waymo.tfrecord import waymo_protos

    dataset_pb2 = waymo_protos("test")
    path = tmp_path / "seg.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for ts, cameras in ((T0, (1, 1, 2)), (T0 + 100_000, (1, 2)), (T0 + 100_000, (1, 2))):
            frame = dataset_pb2.Frame(timestamp_micros=ts)
            frame.context.name = "seg_v1"
            for camera in cameras:
                frame.images.add(name=camera, image=jpeg())
            writer.write(frame.SerializeToString())
    assert segment([path, "--out", tmp_path / "out"], stub_dynamic_dir) == 1
    m = manifest(tmp_path / "out" / "seg_v1")
    assert m["counts"]["images_processed"] == 4
    assert sorted((f["key.frame_timestamp_micros"], f["camera"]) for f in m["failures"]) == [
        (T0, "FRONT"), (T0 + 100_000, "FRONT"), (T0 + 100_000, "FRONT_LEFT")]


@pytest.mark.slow
def test_images_of_another_size_within_a_camera_are_letterboxed_into_its_animations(stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(96, 64), jpeg(96, 80), jpeg(64, 64)))
    assert segment([source, "--out", tmp_path / "out", "--mp4"], stub_dynamic_dir) == 0
    directory = tmp_path / "out" / "seg_a"
    with Image.open(directory / "FRONT.gif") as gif:
        assert gif.n_frames == 3 and gif.size == (96, 64)
    assert (directory / "FRONT.mp4").stat().st_size > 0 and (directory / "mosaic.gif").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(("image", "message"), [
    (jpeg(1, 1), "image is 1x1: each side must be 16-16384 pixels; not decoded"),
    (bomb(1, 65500), "image is 1x65500: each side must be 16-16384 pixels; not decoded"),
    (bomb(), "image is 13000x13000 (169,000,000 pixels), over the limit of 16,777,216 (--max-pixels); not decoded"),
])
def test_tiny_huge_and_bomb_images_are_frame_failures(image, message, stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(), image))
    assert segment([source, "--out", tmp_path / "out", "--mp4"], stub_dynamic_dir) == 1
    m = manifest(tmp_path / "out" / "seg_a")
    assert [(f["stage"], f["error"]) for f in m["failures"]] == [("decode", message)]
    assert m["counts"]["images_processed"] == 3
    assert m["settings"]["max_pixels"] == 16_777_216


@pytest.mark.slow
def test_max_pixels_raises_the_limit(stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(200, 100)))
    assert segment([source, "--out", tmp_path / "a", "--max-pixels", "19999"], stub_dynamic_dir) == 1
    assert segment([source, "--out", tmp_path / "b", "--max-pixels", "20000"], stub_dynamic_dir) == 0


def test_detect_info_flags_images_over_the_pixel_limit(tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", bomb()))
    assert main(["info", str(source)]) == 0
    out = capsys.readouterr().out
    assert "  FRONT            1 images  13000x13000 (over the 16,777,216-pixel limit: skipped)" in out


@pytest.mark.slow
@pytest.mark.parametrize("width", ["16", "17"])
def test_very_small_animation_widths_work(width, stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(), jpeg()))
    assert segment([source, "--out", tmp_path / "out", "--gif-width", width, "--mp4"], stub_dynamic_dir) == 0
    with Image.open(tmp_path / "out" / "seg_a" / "FRONT.gif") as gif:
        assert gif.width == int(width)


# --- flags ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--batch-size", "1000", "argument --batch-size: must be between 1 and 256, got 1000"),
    ("--workers", "100", "argument --workers: must be between 1 and 64, got 100"),
    ("--gif-width", "8", "argument --gif-width: must be between 16 and 7,680, got 8"),
    ("--max-pixels", "12", "argument --max-pixels: must be between 256 and 268,435,456, got 12"),
])
def test_flags_that_size_memory_have_bounds(flag, value, message, capsys):
    assert main(["segment", "x.parquet", flag, value]) == 2
    assert capsys.readouterr().err.endswith(f"detect segment: error: {message}\n")


def test_input_size_help_says_width_by_height(capsys):
    assert main(["segment", "--help"]) == 0
    assert "WxH (width x height)" in " ".join(capsys.readouterr().out.split())


# --- output errors and exit codes ----------------------------------------------------------

def test_out_that_is_a_file_is_one_line_and_exit_2(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    (tmp_path / "out").write_text("a file")
    assert segment([source, "--out", tmp_path / "out"], stub_dynamic_dir) == 2
    printed = without_status(capsys.readouterr().err)
    assert printed == f"detect: error: {tmp_path / 'out'}: cannot create the output directory (File exists)\n"
    assert main(["run", str(source), "--out", str(tmp_path / "out"), "--model", str(stub_dynamic_dir)]) == 2
    printed = without_status(capsys.readouterr().err)
    assert printed == f"detect: error: {tmp_path / 'out'}: cannot create the output directory (File exists)\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_out_is_one_line_and_exit_2(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    (tmp_path / "out").mkdir(mode=0o555)
    assert segment([source, "--out", tmp_path / "out"], stub_dynamic_dir) == 2
    assert capsys.readouterr().err.startswith(f"detect: error: {tmp_path / 'out' / 'seg_a'}: cannot create")


@pytest.mark.slow
def test_a_full_disk_ends_with_one_line_and_keeps_the_journal(stub_dynamic_dir, tmp_path, capsys, monkeypatch):
    import detect.engine.lifecycle

    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(), jpeg()))
    table_path = tmp_path / "out" / "seg_a" / "detections.parquet"

    def full(path, results, track=None, context=None):
        raise OSError(28, "No space left on device", str(table_path))

    monkeypatch.setattr(detect.engine.lifecycle, "write_table", full)
    assert segment([source, "--out", tmp_path / "out"], stub_dynamic_dir) == 2
    assert capsys.readouterr().err == f"detect: error: {table_path}: No space left on device\n"
    journal = (tmp_path / "out" / "seg_a" / ".detect" / "journal.jsonl").read_text().splitlines()
    assert len(journal) == 4  # every finished frame is kept for --resume
    monkeypatch.undo()
    assert segment([source, "--out", tmp_path / "out", "--resume"], stub_dynamic_dir) == 0


def test_an_unexpected_error_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    import detect.cli.app
    import detect.cli.info_and_model

    def broken(*args):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(detect.cli.info_and_model, "segment_info", broken)
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    assert main(["info", str(source)]) == 2
    assert capsys.readouterr().err == ("detect: error: unexpected RuntimeError: boom (rerun with --debug for the "
                                       "traceback, and please report it)\n")
    # --debug lets TensorFlow's own log lines through for the rest of the process (its log level is
    # read once, at import): not here, so the tests that run after this one in the same worker stay quiet
    monkeypatch.setattr(detect.cli.app, "set_verbose", lambda verbose: None)
    with pytest.raises(RuntimeError):
        main(["info", str(source), "--debug"])


def test_missing_waymo_protos_say_what_to_install(monkeypatch, real_frame_path, capsys):
    monkeypatch.setitem(sys.modules, "waymo_open_dataset", None)  # import fails as if not installed
    assert main(["info", str(real_frame_path)]) == 2
    assert capsys.readouterr().err == (
        f"detect: error: {real_frame_path}: reading v1 TFRecords needs Waymo's protos, which are not installed: "
        f"pip install --no-deps waymo-open-dataset-tf-2-12-0==1.6.7 (--no-deps: the package pins an old "
        f"TensorFlow; only its protos are used)\n")


# --- detect run ----------------------------------------------------------------------------

def run(args: list, model: Path) -> int:
    """`detect run ARGS --model MODEL --quiet`, without the reports: these tests are about run.json."""
    return main(["run", *map(str, args), "--model", str(model), "--quiet", "--no-report"])


@pytest.mark.slow
def test_two_files_of_one_segment_never_overwrite_each_other(stub_dynamic_dir, tmp_path):
    a = write_camera_image_parquet(tmp_path / "in" / "a.parquet", frames("seg_a", jpeg(color=(255, 0, 0))))
    b = write_camera_image_parquet(tmp_path / "in" / "b.parquet", frames("seg_a", jpeg(color=(0, 0, 255))))
    out = tmp_path / "out"
    assert run([tmp_path / "in", "--out", out], stub_dynamic_dir) == 1
    entries = {Path(e["path"]).name: e for e in json.loads((out / "run.json").read_text())["segments"]}
    assert entries["a.parquet"]["status"] == "done"
    assert entries["b.parquet"]["status"] == "failed"
    assert entries["b.parquet"]["error"] == (f"{b}: segment seg_a also comes from {a} in this run; both would write "
                                             f"seg_a/: run them one at a time")
    assert manifest(out / "seg_a")["input"]["path"] == str(a)


@pytest.mark.slow
def test_any_failure_of_one_segment_is_recorded_and_the_others_go_on(stub_dynamic_dir, tmp_path, monkeypatch):
    import detect.engine.local_engine

    write_camera_image_parquet(tmp_path / "in" / "a.parquet", frames("seg_a", jpeg()))
    write_camera_image_parquet(tmp_path / "in" / "b.parquet", frames("seg_b", jpeg()))
    real = detect.engine.local_engine.process_segment

    def flaky(source, *args, **kwargs):
        if source.uri.endswith("a.parquet"):
            raise MemoryError("no memory for this one")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(detect.engine.local_engine, "process_segment", flaky)
    out = tmp_path / "out"
    assert run([tmp_path / "in", "--out", out], stub_dynamic_dir) == 1
    entries = {Path(e["path"]).name: e for e in json.loads((out / "run.json").read_text())["segments"]}
    assert entries["a.parquet"]["status"] == "failed"
    assert entries["a.parquet"]["error"] == "MemoryError: no memory for this one"
    assert entries["b.parquet"]["status"] == "done"


def test_run_json_is_written_when_a_run_is_interrupted(stub_dynamic_dir, tmp_path, monkeypatch, capsys):
    import detect.engine.local_engine

    write_camera_image_parquet(tmp_path / "in" / "a.parquet", frames("seg_a", jpeg()))
    write_camera_image_parquet(tmp_path / "in" / "b.parquet", frames("seg_b", jpeg()))
    real = detect.engine.local_engine.process_segment

    def interrupted(source, *args, **kwargs):
        if source.uri.endswith("b.parquet"):
            raise KeyboardInterrupt
        return real(source, *args, **kwargs)

    monkeypatch.setattr(detect.engine.local_engine, "process_segment", interrupted)
    out = tmp_path / "out"
    assert run([tmp_path / "in", "--out", out], stub_dynamic_dir) == 130
    entries = {Path(e["path"]).name: e["status"] for e in json.loads((out / "run.json").read_text())["segments"]}
    assert entries == {"a.parquet": "done"}


def test_a_lock_left_by_a_dead_process_does_not_block(tmp_path):
    lock = SegmentLock(tmp_path / "seg")
    lock.release()  # the kernel drops an flock when its process dies; release stands in for that
    with SegmentLock(tmp_path / "seg"):
        with pytest.raises(OutputError, match="is being written by another detect process"):
            SegmentLock(tmp_path / "seg")


# --- model outputs -------------------------------------------------------------------------

def test_invalid_model_rows_are_dropped_and_counted():
    import numpy as np

    from detect.model.contract import to_detections

    nan, inf = float("nan"), float("inf")
    boxes = np.array([[0.1, 0.1, 0.5, 0.5],   # kept
                      [nan, 0.0, 1.0, 1.0],   # NaN coordinate
                      [0.0, 0.0, inf, 1.0],   # infinite coordinate
                      [1.2, 1.3, 1.5, 1.6],   # outside the image: zero area once clipped
                      [0.2, 0.2, 0.4, 0.4],   # NaN score
                      [0.1, 0.1, 0.3, 0.3],   # NaN class
                      [0.1, 0.1, 0.2, 0.2],   # class 1.5
                      [0.3, 0.3, 0.3, 0.6],   # zero width
                      [0.1, 0.1, 0.2, 0.2]],  # past num_detections: not looked at
                     np.float32)
    scores = np.array([0.9, 0.9, 0.9, 0.9, nan, 0.8, 0.7, 0.9, 0.9], np.float32)
    classes = np.array([3, 1, 1, 1, 1, nan, 1.5, 1, 1], np.float32)
    d = to_detections(boxes, scores, classes, 8, 200, 100, threshold=0.5)
    assert d.invalid == 7
    assert d.xyxy.tolist() == [[20.0, 10.0, 100.0, 50.0]] and d.labels == ("car",)
    everything = to_detections(boxes, scores, classes, nan, 200, 100, threshold=0.0)  # NaN count: every row
    assert len(everything) + everything.invalid == 9


def test_invalid_counts_reach_the_manifest_the_journal_and_a_warning(tmp_path):
    import numpy as np

    from detect.core.records import Detections
    from detect.engine.local import process_segment
    from detect.engine.spec import SegmentSettings
    from detect.engine.summary import invalid_boxes_warning
    from detect.waymo.sources import resolve_one

    class Fake:
        batch_size = 2

        def __call__(self, images, sizes=None):
            box = Detections(np.array([[1, 1, 5, 5]], np.float32), np.array([0.9], np.float32),
                             np.array([1], np.int32), ("person",), invalid=2)
            return [box] * len(images)

    source = resolve_one(str(write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))))
    settings = SegmentSettings(write_frames=False, gif=False)
    report = process_segment(source, tmp_path / "out", Fake(), settings, model_facts=ModelFacts.from_json({"path": "fake"}))
    assert report.invalid_boxes == 4
    m = manifest(tmp_path / "out" / "seg_a")
    assert m["counts"]["invalid_boxes"] == 4
    assert m["invalid_boxes"] == [
        {"key.frame_timestamp_micros": T0, "key.camera_name": 1, "camera": "FRONT", "invalid_boxes": 2},
        {"key.frame_timestamp_micros": T0, "key.camera_name": 2, "camera": "FRONT_LEFT", "invalid_boxes": 2}]
    assert invalid_boxes_warning(report) == (
        f"warning: seg_a: the model emitted 4 invalid boxes (NaN or infinite values, zero area inside the image, or a "
        f"class that is not a whole number); they were dropped and are counted per image in "
        f"{tmp_path / 'out' / 'seg_a' / 'manifest.json'}")
    from detect.results import journal

    done, _ = journal.load(tmp_path / "out" / "seg_a", "seg_a")
    assert sorted(r.detections.invalid for r in done.values()) == [2, 2]


def test_detect_gif_never_follows_a_symlink_out_of_the_results(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg(), jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out, "--no-gif"], stub_dynamic_dir) == 0
    outside = tmp_path / "outside"
    (outside / "frames" / "FRONT").mkdir(parents=True)
    (outside / "frames" / "FRONT" / f"{T0}.png").write_bytes((out / "seg_a" / "frames" / "FRONT" / f"{T0}.png").read_bytes())
    (out / "elsewhere").symlink_to(outside)
    capsys.readouterr()
    assert main(["gif", str(out)]) == 1  # the link is named and left out; the real segment is rebuilt
    assert f"{out / 'elsewhere'}: a symlink, not followed; left out" in capsys.readouterr().err
    assert sorted(p.name for p in outside.rglob("*")) == sorted(["FRONT", f"{T0}.png", "frames"])
    assert (out / "seg_a" / "FRONT.gif").is_file()


@pytest.mark.parametrize("name", ["run.json", "index.html", "frames", "Report", "a.b"])
def test_names_of_the_tools_own_files_and_folders_are_renamed(name):
    assert segment_dir_name(name).startswith("renamed-")


@pytest.mark.slow
def test_a_symlink_inside_a_segment_directory_is_refused(stub_dynamic_dir, tmp_path, capsys):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out], stub_dynamic_dir) == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lock").write_text("precious")
    shutil_state = out / "seg_a" / ".detect"
    shutil.rmtree(shutil_state)  # the bookkeeping and the mosaic's tiles
    shutil_state.symlink_to(outside)
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir) == 2
    assert capsys.readouterr().err == (f"detect: error: {shutil_state} is a symlink: detect writes only real folders and "
                                       f"files under --out; remove it or choose another --out\n")
    assert (outside / "lock").read_text() == "precious"


@pytest.mark.slow
def test_overwrite_keeps_a_users_hidden_tmp_files(stub_dynamic_dir, tmp_path):
    source = write_camera_image_parquet(tmp_path / "seg.parquet", frames("seg_a", jpeg()))
    out = tmp_path / "out"
    assert segment([source, "--out", out], stub_dynamic_dir, report=True) == 0
    (out / "seg_a" / ".notes.tmp").write_text("mine")
    (out / "seg_a" / ".FRONT.1a2b3c4d.tmp.gif").write_text("ours, half-written")
    assert segment([source, "--out", out, "--overwrite"], stub_dynamic_dir, report=True) == 0
    assert (out / "seg_a" / ".notes.tmp").read_text() == "mine"
    assert not (out / "seg_a" / ".FRONT.1a2b3c4d.tmp.gif").exists()


def test_names_that_differ_only_in_case_never_share_a_folder(stub_dynamic_dir, tmp_path):
    write_camera_image_parquet(tmp_path / "in" / "a.parquet", frames("Seg_A", jpeg()))
    write_camera_image_parquet(tmp_path / "in" / "b.parquet", frames("seg_a", jpeg()))
    assert run([tmp_path / "in", "--out", tmp_path / "out"], stub_dynamic_dir) == 1
    entries = {Path(e["path"]).name: e for e in json.loads((tmp_path / "out" / "run.json").read_text())["segments"]}
    assert entries["a.parquet"]["status"] == "done" and entries["b.parquet"]["status"] == "failed"
    assert "also comes from" in entries["b.parquet"]["error"]
