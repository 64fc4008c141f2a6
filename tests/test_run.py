"""`detect run` with the local engine: many segments, rerun skips, broken segments, --retry-failed, --shard."""

import json
import shutil
from pathlib import Path

import pytest
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT

from detect.cli import main
from detect.tools.synthetic import repeat_frames, write_camera_image_parquet, write_frames_tfrecord

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")

BROKEN_ERROR = ("not a readable Parquet file (Parquet magic bytes not found in footer. "
                "Either the file is corrupted or this is not a parquet file.)")


@pytest.fixture
def inputs(tmp_path, real_frame_path, tiny_v2_path) -> Path:
    """A folder holding two small segments: the real frame (v1) and the tiny v2 file."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(real_frame_path, folder / "real.tfrecord")
    shutil.copy(tiny_v2_path, folder / tiny_v2_path.name)
    return folder


def run(*args, model, out=None, err=None):
    """`detect run` without its closing evaluation and report (tests of those live in test_errors.py)."""
    return main(["run", *map(str, args), "--model", str(model), "--no-eval", "--no-report"], stdout=out, stderr=err)


def run_file(out: Path, name: str = "run.json") -> dict:
    return json.loads((out / name).read_text())


def statuses(out: Path, name: str = "run.json") -> dict[str, str]:
    return {Path(e["path"]).name: e["status"] for e in run_file(out, name)["segments"]}


def manifest(segment_dir: Path) -> dict:
    return json.loads((segment_dir / "manifest.json").read_text())


def test_run_writes_both_segments_and_a_rerun_skips_them(inputs, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert run(inputs, "--out", out, model=stub_dynamic_dir) == 0
    for segment, fmt in ((REAL_SEGMENT, "v1"), (TINY_SEGMENT, "v2")):
        m = manifest(out / segment)
        assert (m["status"], m["input"]["format"], m["engine"]["name"]) == ("complete", fmt, "local")
        assert (out / segment / "detections.parquet").is_file() and (out / segment / "mosaic.gif").is_file()
    assert statuses(out) == {"real.tfrecord": "done", f"{TINY_SEGMENT}.parquet": "done"}
    from PIL import Image

    from detect.render.draw import WATERMARK_COLOR

    with Image.open(out / REAL_SEGMENT / "frames" / "FRONT" / "1553735853462203.png") as png:
        assert png.getpixel((2, 1277)) == WATERMARK_COLOR  # stub frames say so, as with detect segment
    assert run_file(out)["this_run"] | {"seconds": 0, "images_per_second": 0} == {
        "done": 2, "done_with_failures": 0, "skipped": 0, "failed": 0, "images": 20, "detections": 120,
        "seconds": 0, "images_per_second": 0}
    first = capsys.readouterr().out.splitlines()
    assert first[0] == "model: stub model (fixed boxes, not a detector), dynamic batch; knows COCO label map;"
    assert first[1].startswith("  sha256 ")  # the model is named above the table, in lines under 100 characters
    # The boxes the errors drawing shows (5 an image of the 6 the table keeps: the bicycle scores below
    # the threshold; the stop sign, a type without labels here, is drawn grey, not judged), as the pages count them.
    drawn = manifest(out / REAL_SEGMENT)["counts"]["drawn"]
    assert drawn == 25 and first[3].split() == [REAL_SEGMENT, "done", "5", str(drawn), first[3].split()[-1]]
    assert first[-1].startswith("2 segments: 2 done, 0 with failed frames, 0 skipped, 0 failed; 20 images in ")

    written = {p: p.stat().st_mtime_ns for p in out.rglob("*")
               if p.is_file() and p.name != "run.json" and p.relative_to(out).parts[0] != ".detect"}  # not the run lock
    assert run(inputs, "--out", out, model=stub_dynamic_dir) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[1:-1:2]] == [[REAL_SEGMENT, "skipped"], [TINY_SEGMENT, "skipped"]]
    assert lines[-1].startswith("2 segments: 0 done, 0 with failed frames, 2 skipped, 0 failed; 0 images in ")
    assert {p: p.stat().st_mtime_ns for p in written} == written  # nothing was touched
    assert statuses(out) == {"real.tfrecord": "done", f"{TINY_SEGMENT}.parquet": "done"}
    assert run_file(out)["this_run"]["skipped"] == 2


def test_a_broken_segment_is_reported_and_the_others_complete(inputs, stub_dynamic_dir, tmp_path, capsys):
    broken = inputs / "broken.parquet"
    broken.write_bytes(b"not a parquet file")
    out = tmp_path / "out"
    assert run(inputs, "--out", out, model=stub_dynamic_dir) == 1
    captured = capsys.readouterr()
    assert f"detect: segment failed: {broken}: {BROKEN_ERROR}" in captured.err.splitlines()
    assert "2 segments: 2 done" not in captured.out
    assert captured.out.splitlines()[-1].startswith("3 segments: 2 done, 0 with failed frames, 0 skipped, 1 failed; 20 images")
    entries = {Path(e["path"]).name: e for e in run_file(out)["segments"]}
    assert entries["broken.parquet"]["status"] == "failed"
    assert entries["broken.parquet"]["error"] == f"{broken}: {BROKEN_ERROR}"
    assert entries["broken.parquet"]["segment_context_name"] is None
    assert entries["real.tfrecord"]["status"] == entries[f"{TINY_SEGMENT}.parquet"]["status"] == "done"

    # A rerun does not try the broken file again unless asked to; the run file keeps its error.
    assert run(inputs, "--out", out, model=stub_dynamic_dir) == 1
    assert f"{broken}: {BROKEN_ERROR} (not retried; use --retry-failed)" in capsys.readouterr().out
    assert run_file(out)["this_run"] | {"seconds": 0, "images_per_second": 0} == {
        "done": 0, "done_with_failures": 0, "skipped": 2, "failed": 1, "images": 0, "detections": 0,
        "seconds": 0, "images_per_second": 0}
    assert {e["path"]: e.get("error") for e in run_file(out)["segments"]}[str(broken)] == f"{broken}: {BROKEN_ERROR}"

    assert run(inputs, "--out", out, "--retry-failed", model=stub_dynamic_dir) == 1
    captured = capsys.readouterr()
    assert f"detect: segment failed: {broken}: {BROKEN_ERROR}" in captured.err.splitlines()
    assert "not retried" not in captured.out


@pytest.mark.slow
def test_retry_failed_runs_only_the_failed_frames_again(real_camera_frames, stub_dynamic_dir, tmp_path, capsys):
    frames = repeat_frames(real_camera_frames, 2, segment_context_name="seg")
    frames[3] = type(frames[3])("seg", frames[3].frame_timestamp_micros, frames[3].camera_name, frames[3].jpeg[:2000])
    folder = tmp_path / "in"
    write_camera_image_parquet(folder / "seg.parquet", frames)
    out = tmp_path / "out"
    args = (folder, "--out", out, "--no-gif", "--quiet")
    assert run(*args, model=stub_dynamic_dir) == 1
    assert statuses(out) == {"seg.parquet": "done_with_failures"}
    assert manifest(out / "seg")["counts"]["images_processed"] == 9

    assert run(*args, model=stub_dynamic_dir) == 1  # carried over, not retried
    assert run_file(out)["segments"][0]["note"] == "1 failed frames (not retried; use --retry-failed)"
    assert manifest(out / "seg")["counts"]["images_processed"] == 9

    assert run(*args, "--retry-failed", model=stub_dynamic_dir) == 1  # the bad JPEG fails again
    counts = manifest(out / "seg")["counts"]
    assert (counts["images_resumed"], counts["images_processed"], counts["images_failed"]) == (9, 0, 1)
    assert statuses(out) == {"seg.parquet": "done_with_failures"}


def test_shards_together_cover_every_segment_exactly_once(inputs, real_camera_frames, stub_dynamic_dir, tmp_path):
    write_frames_tfrecord(inputs / "third.tfrecord", repeat_frames(real_camera_frames, 1, segment_context_name="third"))
    out = tmp_path / "out"
    for shard in ("0/2", "1/2"):
        assert run(inputs, "--out", out, "--shard", shard, "--no-png", "--no-gif", "--quiet", model=stub_dynamic_dir) == 0
    shards = [set(statuses(out, f"run-shard-{i}-of-2.json")) for i in (0, 1)]
    assert shards[0].isdisjoint(shards[1])
    assert shards[0] | shards[1] == {"real.tfrecord", f"{TINY_SEGMENT}.parquet", "third.tfrecord"}
    assert sorted(len(s) for s in shards) == [1, 2]
    assert not (out / "run.json").exists()
    assert {p.name for p in out.iterdir() if p.is_dir()} == {".detect", REAL_SEGMENT, TINY_SEGMENT, "third"}


@pytest.mark.parametrize(("shard", "message"), [
    ("1", "--shard '1': expected I/N, e.g. 0/4"),
    ("a/2", "--shard 'a/2': expected I/N, e.g. 0/4"),
    ("1/2/3", "--shard '1/2/3': expected I/N, e.g. 0/4"),
    ("2/2", "--shard '2/2': need 0 <= I < N"),
    ("-1/2", "--shard '-1/2': need 0 <= I < N"),
    ("0/0", "--shard '0/0': need 0 <= I < N"),
])
def test_shard_parse_errors(shard, message, inputs, tmp_path, capsys):
    assert main(["run", str(inputs), "--out", str(tmp_path / "out"), f"--shard={shard}"]) == 2
    assert capsys.readouterr().err.strip() == f"detect: error: {message}"


def test_load_each_model_once_loads_a_spec_once_and_again_when_its_files_change(stub_dynamic_dir, tiny_v2_path, tmp_path,
                                                                                  monkeypatch):
    """The conftest fixture this file uses: a second run with the same model and flags reuses the loaded
    model; a model whose files changed is loaded again."""
    import shutil

    import detect.engine.loading
    from detect.model.formats import SIDECAR

    model = shutil.copytree(stub_dynamic_dir, tmp_path / "model")  # a path no other test has loaded
    loads = []
    real = detect.engine.loading.load_model
    monkeypatch.setattr(detect.engine.loading, "load_model", lambda spec, *a, **k: loads.append(spec) or real(spec, *a, **k))
    flags = ["--model", str(model), "--quiet", "--no-gif", "--no-png", "--no-eval", "--no-report"]
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path / "a"), *flags]) == 0
    assert main(["run", str(tiny_v2_path), "--out", str(tmp_path / "b"), *flags]) == 0
    assert len(loads) == 1
    sidecar = model / SIDECAR
    sidecar.write_text(sidecar.read_text() + " ")  # same content, other size: loaded again
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path / "c"), *flags]) == 0
    assert len(loads) == 2
