"""`detect run --engine ray`: the same files and detections as the local engine, on a small local Ray."""

import json
import logging
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.onnx_graphs import ultralytics_head, ultralytics_model
from helpers.outputs import output_bytes
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT
from helpers.processes import MESSAGES, SEGMENT, ours, run_clean, start, write_segment

from detect.cli import main

# Ray Data's own DataContext copies touch its deprecated fields; nothing here sets them.
pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")]

BROKEN_ERROR = ("not a readable Parquet file (Parquet magic bytes not found in footer. "
                "Either the file is corrupted or this is not a parquet file.)")


@pytest.fixture(scope="module")
def ray_local():
    """One small local Ray for the module: 2 CPUs and a 200 MB object store (not 30% of RAM)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'waymo-detect[ray]'")
    pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install 'waymo-detect[ray]'")
    ray.init(num_cpus=2, object_store_memory=200 * 1024**2, include_dashboard=False,
             logging_level=logging.WARNING, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, real_frame_path, tiny_v2_path) -> Path:
    """Two small segments (the real frame as v1, the tiny v2 file) and a broken third."""
    folder = tmp_path_factory.mktemp("ray_in")
    shutil.copy(real_frame_path, folder / "real.tfrecord")
    shutil.copy(tiny_v2_path, folder / tiny_v2_path.name)
    (folder / "broken.parquet").write_bytes(b"not a parquet file")
    return folder


@pytest.fixture(scope="module")
def local_out(inputs, stub_dynamic_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local_out")
    assert run(inputs, "--out", out, "--quiet", model=stub_dynamic_dir) == 1  # the broken segment fails
    return out


def run(*args, model, engine="local"):
    return main(["run", *map(str, args), "--model", str(model), "--engine", engine])


def files(out: Path) -> dict[str, Path]:
    return {str(p.relative_to(out)): p for p in sorted(out.rglob("*")) if p.is_file() and p.name != "run.json"}


def run_entries(out: Path) -> dict[str, dict]:
    return {Path(e["path"]).name: e for e in json.loads((out / "run.json").read_text())["segments"]}


def with_track_ids(out: Path) -> None:
    """Ray draws a segment's frames before its table is tracked, so a tracked segment's frames carry
    no track ids there (the run notes it); `detect redraw` draws them, as the local engine does."""
    assert main(["redraw", str(out), "--no-eval", "--no-report", "--quiet"]) == 0


def test_ray_writes_what_the_local_engine_writes(ray_local, inputs, local_out, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "ray_out"
    capsys.readouterr()
    assert run(inputs, "--out", out, model=stub_dynamic_dir, engine="ray") == 1
    captured = capsys.readouterr()
    broken = inputs / "broken.parquet"
    assert f"detect: segment failed: {broken}: {BROKEN_ERROR}" in captured.err.splitlines()
    assert any(line.startswith("3 segments: 2 done, 0 with failed frames, 0 skipped, 1 failed; 20 images")
               for line in captured.out.splitlines())
    assert captured.out.splitlines()[-1] == f"report: {out / 'index.html'}"  # evaluated and reported, as locally

    ray_files, local_files = files(out), files(local_out)
    assert ray_files.keys() == local_files.keys()
    for segment in (REAL_SEGMENT, TINY_SEGMENT):
        ray_table = pq.read_table(out / segment / "detections.parquet")
        assert ray_table.equals(pq.read_table(local_out / segment / "detections.parquet"))
        assert ray_table.num_rows == {REAL_SEGMENT: 30, TINY_SEGMENT: 90}[segment]
        ray_manifest = json.loads((out / segment / "manifest.json").read_text())
        local_manifest = json.loads((local_out / segment / "manifest.json").read_text())
        assert ray_manifest.keys() == local_manifest.keys()
        assert ray_manifest["engine"]["name"] == "ray" and local_manifest["engine"]["name"] == "local"
        for key in ("status", "counts", "settings", "outputs", "input", "failures"):
            assert ray_manifest[key] == local_manifest[key], key
    # Same pixels: the frames and the animations rebuilt from them are byte-identical, once the
    # tracked segment's frames are redrawn with their ids (see `with_track_ids`). Ray says so; the
    # tiny segment's 96x64 frames have no room for an id chip and its boxes stand still (no trail),
    # so only the untracked real frame's pictures are compared before the redraw.
    assert f"{TINY_SEGMENT}: frames drawn without track ids; `detect redraw` draws them" in captured.out + captured.err
    pictures = [name for name in ray_files if name.endswith(".gif") or "/frames/" in name]
    assert len(pictures) == 5 + 6 + 15 + 6
    assert [n for n in pictures if n.startswith(f"{REAL_SEGMENT}/")
            and ray_files[n].read_bytes() != local_files[n].read_bytes()] == []
    with_track_ids(out)
    assert [n for n in pictures if ray_files[n].read_bytes() != local_files[n].read_bytes()] == []

    entries = run_entries(out)
    assert (entries["broken.parquet"]["status"], entries["broken.parquet"]["error"]) == ("failed", f"{broken}: {BROKEN_ERROR}")
    assert entries["real.tfrecord"]["status"] == entries[f"{TINY_SEGMENT}.parquet"]["status"] == "done"
    assert json.loads((out / "run.json").read_text())["engine"] == "ray"


def test_ray_skips_complete_segments_and_resumes_a_local_journal(ray_local, inputs, local_out, stub_dynamic_dir, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(local_out, out)
    tiny = out / TINY_SEGMENT
    journal = tiny / ".detect" / "journal.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:7]) + '{"t": 1, "c"')  # killed
    for name in ("manifest.json", "detections.parquet", "mosaic.gif", "FRONT.gif"):
        (tiny / name).unlink()
    real_manifest = (out / REAL_SEGMENT / "manifest.json").read_bytes()

    assert run(inputs, "--out", out, "--quiet", model=stub_dynamic_dir, engine="ray") == 1  # broken: not retried
    entries = run_entries(out)
    assert entries["real.tfrecord"]["note"] == "already complete"
    assert entries["broken.parquet"]["note"].endswith("(not retried; use --retry-failed)")
    assert (out / REAL_SEGMENT / "manifest.json").read_bytes() == real_manifest
    counts = json.loads((tiny / "manifest.json").read_text())["counts"]
    assert (counts["images_resumed"], counts["images_processed"]) == (7, 8)
    assert pq.read_table(tiny / "detections.parquet").equals(pq.read_table(local_out / TINY_SEGMENT / "detections.parquet"))
    with_track_ids(out)
    for name in ("mosaic.gif", "FRONT.gif"):
        assert (tiny / name).read_bytes() == (local_out / TINY_SEGMENT / name).read_bytes()


def test_ray_refuses_what_it_cannot_do(ray_local, inputs, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert run(inputs, "--out", out, "--ray-actors", "2", model=stub_dynamic_dir, engine="ray") == 2
    assert without_status(capsys.readouterr().err).strip() == (
        "detect: error: --ray-actors 2: the detector actors reserve 1.5 CPUs and reading, decoding and "
        "drawing need 1.25 more; this cluster has 2")
    assert run(inputs, "--out", out, "--no-png", model=stub_dynamic_dir, engine="ray") == 2
    assert without_status(capsys.readouterr().err).strip() == (
        "detect: error: --engine ray builds animations from the annotated frames: drop --no-png, or add --no-gif")


def test_without_ray_the_message_says_how_to_install_it(inputs, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    assert main(["run", str(inputs), "--out", str(tmp_path), "--engine", "ray"]) == 2
    assert capsys.readouterr().err.strip() == "detect: error: --engine ray needs Ray: pip install 'waymo-detect[ray]'"


def test_a_read_task_turns_a_file_that_breaks_into_a_row(tiny_v2_path, tmp_path):
    from detect.engine.ray_stages import WorkItem, read_frames
    from detect.waymo.selection import FrameFilter
    from detect.waymo.sources import resolve_one

    path = tmp_path / "gone.parquet"
    shutil.copy(tiny_v2_path, path)
    item = WorkItem.for_source(resolve_one(str(path)), TINY_SEGMENT, FrameFilter(), done={(1600000000000000, 1)})
    batches = list(read_frames({"item": np.array([item.to_json()], dtype=object)}))
    rows = [(int(t), int(c)) for b in batches for t, c in zip(b["key.frame_timestamp_micros"], b["key.camera_name"], strict=True)]
    assert len(rows) == 14 and (1600000000000000, 1) not in rows and all(not s for b in batches for s in b["stage"])
    path.write_bytes(b"truncated")
    [batch] = list(read_frames({"item": np.array([item.to_json()], dtype=object)}))
    assert list(batch["stage"]) == ["read"] and list(batch["source"]) == [str(path)]
    assert batch["error"][0] == f"{path}: {BROKEN_ERROR}"


def test_ray_keeps_hostile_names_under_out_and_reports_duplicates_like_local(ray_local, stub_dynamic_dir, tmp_path):
    """Hostile segment names, one segment in two files, a duplicated key: both engines agree."""
    import io

    from PIL import Image

    from detect.core.names import segment_dir_name
    from detect.core.records import CameraFrame
    from detect.tools.synthetic import write_camera_image_parquet

    def jpeg(color):
        out = io.BytesIO()
        Image.new("RGB", (96, 64), color).save(out, "JPEG")
        return out.getvalue()

    def frames(name, color):
        rows = [CameraFrame(name, 1_000_000 + i * 100_000, c, jpeg(color)) for i in range(2) for c in (1, 2)]
        return rows + [CameraFrame(name, 1_000_000, 1, jpeg((0, 0, 0)))]  # a duplicate key

    folder = tmp_path / "in"
    write_camera_image_parquet(folder / "a.parquet", frames("../../escape", (255, 0, 0)))
    write_camera_image_parquet(folder / "b.parquet", frames("../../escape", (0, 255, 0)))  # same name, other file
    write_camera_image_parquet(folder / "c.parquet", frames("/etc", (0, 0, 255)))
    outs = {engine: tmp_path / "work" / engine for engine in ("local", "ray")}
    for engine, out in outs.items():
        assert run(folder, "--out", out, "--quiet", "--no-eval", "--no-report", model=stub_dynamic_dir, engine=engine) == 1
        assert sorted(p.name for p in out.iterdir()) == sorted([".detect", "run.json", segment_dir_name("../../escape"),
                                                                 segment_dir_name("/etc")])  # .detect: the run's lock
        entries = run_entries(out)
        assert [entries[n]["status"] for n in ("a.parquet", "b.parquet", "c.parquet")] == [
            "done_with_failures", "failed", "done_with_failures"]
        assert entries["b.parquet"]["error"].endswith("also comes from " + str(folder / "a.parquet") + " in this run; "
                                                      f"both would write {segment_dir_name('../../escape')}/: "
                                                      "run them one at a time")
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["local", "ray"]
    with_track_ids(outs["ray"])
    local_files, ray_files = files(outs["local"]), files(outs["ray"])
    assert local_files.keys() == ray_files.keys()
    assert [n for n in local_files if n.endswith((".png", ".gif")) and
            local_files[n].read_bytes() != ray_files[n].read_bytes()] == []
    for name in ("../../escape", "/etc"):
        manifests = [json.loads((out / segment_dir_name(name) / "manifest.json").read_text()) for out in outs.values()]
        assert manifests[0]["failures"] == manifests[1]["failures"] and len(manifests[0]["failures"]) == 1
        assert manifests[0]["counts"] == manifests[1]["counts"]


def test_ray_and_local_give_the_same_detections_with_the_real_person_model(ray_local, real_frame_path, person_pb,
                                                                          tmp_path):
    """The real frozen graph from PyPI, straight from its .pb, on both engines."""
    pb = person_pb
    tables = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        assert run(real_frame_path, "--out", out, "--quiet", "--no-gif", model=pb, engine=engine) == 0
        tables[engine] = pq.read_table(out / REAL_SEGMENT / "detections.parquet")
    assert tables["local"].num_rows >= 3
    assert tables["local"].column("class_id").to_pylist() == tables["ray"].column("class_id").to_pylist()
    for column in ("score", "xmin", "ymin", "xmax", "ymax"):
        assert np.allclose(tables["local"].column(column).to_numpy(), tables["ray"].column(column).to_numpy(), atol=1e-4)


def test_ray_and_local_give_the_same_detections_with_the_coco_model(ray_local, real_frame_path, tmp_path):
    """The 80-class CenterNet (converted from npm), its sidecar defaults and NMS, on both engines,
    with the network in OpenVINO (the Ray actors read the network the driver converted)."""
    model = Path(__file__).resolve().parents[1] / "models" / "centernet_mobilenetv3_coco"
    if not (model / "saved_model.pb").is_file():
        pytest.fail("models/centernet_mobilenetv3_coco is missing: `make coco-model` (run by `make test`) sets it up")
    tables, manifests = {}, {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        assert run(real_frame_path, "--out", out, "--quiet", "--no-gif", "--runtime", "openvino", model=model,
                   engine=engine) == 0
        tables[engine] = pq.read_table(out / REAL_SEGMENT / "detections.parquet")
        manifests[engine] = json.loads((out / REAL_SEGMENT / "manifest.json").read_text())
    assert tables["local"].num_rows >= 100 and len(set(tables["local"].column("class_id").to_pylist())) >= 5
    assert tables["local"].column("class_id").to_pylist() == tables["ray"].column("class_id").to_pylist()
    for column in ("score", "xmin", "ymin", "xmax", "ymax"):
        assert np.allclose(tables["local"].column(column).to_numpy(), tables["ray"].column(column).to_numpy(), atol=1e-3)
    # the input size the model's sidecar brings ('native' for a model converted before any-size graphs)
    default_size = json.loads((model / "detect_model.json").read_text()).get("defaults", {}).get("input_size", "native")
    for m in manifests.values():
        assert (m["model"]["nms_iou"], m["settings"]["input_size"]) == (0.7, default_size)
        assert m["model"]["runtime"]["name"] == "openvino"


def test_an_onnx_model_gives_the_same_tiled_boxes_with_ray(ray_local, real_frame_path, tmp_path):
    """An Ultralytics-layout ONNX on OpenVINO in the Ray actors, with --tile: the local engine's boxes."""
    head = ultralytics_head([(200, 356, 200, 100, 1, 0.9), (500, 300, 30, 90, 0, 0.4)], classes=2)
    model = ultralytics_model(tmp_path / "yolo.onnx", {0: "person", 1: "car"}, head)
    tables = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        assert run(real_frame_path, "--out", out, "--quiet", "--no-gif", "--no-report", "--runtime", "auto", "--tile",
                   "960", model=model, engine=engine) == 0
        tables[engine] = pq.read_table(out / REAL_SEGMENT / "detections.parquet")
    assert tables["local"].num_rows >= 10 and set(tables["local"].column("label").to_pylist()) == {"car", "person"}
    assert tables["local"].column("class_id").to_pylist() == tables["ray"].column("class_id").to_pylist()
    for column in ("score", "xmin", "ymin", "xmax", "ymax"):
        assert np.allclose(tables["local"].column(column).to_numpy(), tables["ray"].column(column).to_numpy(), atol=1e-3)


def test_tiles_give_the_same_boxes_and_pictures_with_ray(ray_local, tiny_v2_path, stub_dynamic_dir, tmp_path):
    """--tile with both engines: the same merged boxes, the same frames (96x64 images, 64-px tiles)."""
    outs = {engine: tmp_path / engine for engine in ("local", "ray")}
    for engine, out in outs.items():
        assert run(tiny_v2_path, "--out", out, "--quiet", "--tile", "64", "--no-gif", "--no-report", model=stub_dynamic_dir,
                   engine=engine) == 0
    local, ray = (pq.read_table(out / TINY_SEGMENT / "detections.parquet") for out in outs.values())
    assert local.num_rows > 0 and ray.equals(local)
    untiled = tmp_path / "untiled"
    assert run(tiny_v2_path, "--out", untiled, "--quiet", "--no-gif", "--no-report", model=stub_dynamic_dir) == 0
    assert not pq.read_table(untiled / TINY_SEGMENT / "detections.parquet").equals(local)  # the tiles did something
    with_track_ids(outs["ray"])
    frames = sorted((outs["local"] / TINY_SEGMENT / "frames").rglob("*.png"))
    assert frames and all(f.read_bytes() == (outs["ray"] / f.relative_to(outs["local"])).read_bytes() for f in frames)


@pytest.mark.signals
def test_sigterm_stops_a_ray_run_with_one_line_and_resume_finishes_it(real_camera_frames, stub_dynamic_dir, tmp_path):
    """Beside the Ray tests, not in test_signals.py: pytest-xdist runs it as a unit of its own
    (helpers.xdist_units.OWN_UNIT_TESTS) while the other worker runs this file's in-process Ray,
    which it does not use; the run and its resume start their own cluster, as a user's do."""
    segment = write_segment(real_camera_frames, tmp_path)
    clean_run = run_clean(segment, stub_dynamic_dir, tmp_path / "clean")
    out = tmp_path / "out"
    args = ["run", str(segment), "--model", str(stub_dynamic_dir), "--quiet", "--no-eval", "--no-report",
            "--batch-size", "2", "--out", str(out), "--engine", "ray"]
    proc = start(args)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and not list(out.glob(f"{SEGMENT}/frames/*/*.png")):
        time.sleep(0.1)
    assert proc.poll() is None, "the Ray run ended before a frame was written"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=180)
    assert (proc.returncode, err.strip().splitlines()[-1:]) == (143, [MESSAGES[signal.SIGTERM][1]]), err
    assert json.loads((out / "run.json").read_text())["stopped_by"] == "SIGTERM"
    assert ours(proc.pid) == []
    # The resume, in a process of its own as a user runs it: a quiet Ray run prints nothing (not Ray's
    # token-authentication warning, its actor-restart advice, nor a deprecation warning).
    resume = start([*args, "--resume"], stdout=subprocess.PIPE)
    printed = resume.communicate(timeout=300)
    assert (resume.returncode, *printed) == (0, "", "")
    # Ray draws its frames before the table is tracked: after `detect redraw` they show the ids too
    assert main(["redraw", str(out / SEGMENT), "--quiet", "--no-eval", "--no-report"]) == 0
    clean, resumed = output_bytes(clean_run / SEGMENT), output_bytes(out / SEGMENT)
    assert clean.keys() == resumed.keys() and [k for k in clean if clean[k] != resumed[k]] == []
