"""`detect export coco`: images with their sizes and source frames, every labeled type in
instances.json, and `--images` copying the original JPEGs out of the input file."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import without_status
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT
from helpers.results_folders import BOX_A, BOX_B, ELSEWHERE, PERSON, dets, key, labels, segment_folder

from detect.cli import main
from detect.core.records import WaymoType
from detect.waymo.readers import iter_frames

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")

VEHICLE, PEDESTRIAN, CYCLIST = int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN), int(WaymoType.CYCLIST)


def export(results: Path, out: Path, *extra: str) -> tuple[dict, list, str]:
    """instances.json, detections.json and what was printed on stderr."""
    err = io.StringIO()
    assert main(["export", "coco", str(results), "--out", str(out), *extra], stdout=io.StringIO(), stderr=err) == 0
    return (json.loads((out / "instances.json").read_text()), json.loads((out / "detections.json").read_text()),
            without_status(err.getvalue()))


def test_images_carry_their_size_their_source_frame_and_the_input_file(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, PEDESTRIAN, 1)), dets((BOX_A, 0.9, PERSON)))})
    manifest = json.loads((directory / "manifest.json").read_text())
    (directory / "manifest.json").write_text(json.dumps({**manifest, "input": {"path": "in/seg_eval.parquet"}}))
    instances, _, err = export(directory, tmp_path / "coco")
    assert instances["images"] == [{
        "id": instances["images"][0]["id"], "file_name": "images/seg_eval/FRONT/1000000.jpg", "width": 1920,
        "height": 1280, "segment_context_name": "seg_eval", "frame_timestamp_micros": 1_000_000, "camera_name": 1,
        "input_path": "in/seg_eval.parquet"}]
    assert err == "" and not (tmp_path / "coco" / "images").exists()  # without --images, names only


def test_instances_hold_every_labeled_type_and_detections_only_the_models(tmp_path):
    """A person model: its detections are PEDESTRIAN only, the labels keep their vehicles and cyclists."""
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, PEDESTRIAN, 1), (BOX_B, VEHICLE, 2), (ELSEWHERE, CYCLIST, 1)),
                                               dets((BOX_A, 0.9, PERSON), (BOX_B, 0.8, PERSON)))}, knows=[PERSON])
    instances, detections, _ = export(directory, tmp_path / "coco")
    assert [c["name"] for c in instances["categories"]] == ["VEHICLE", "PEDESTRIAN", "CYCLIST"]
    assert sorted(a["category_id"] for a in instances["annotations"]) == [VEHICLE, PEDESTRIAN, CYCLIST]
    assert {d["category_id"] for d in detections} == {PEDESTRIAN}
    assert instances["info"]["evaluated_category_ids"] == [PEDESTRIAN]  # what `detect eval` evaluates


def test_export_says_what_it_wrote_in_counts(tmp_path, monkeypatch):
    """One line: each file with what it holds (and, with --images, the JPEGs copied); none with --quiet."""
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, PEDESTRIAN, 1), (BOX_B, VEHICLE, 2)),
                                               dets((BOX_A, 0.9, PERSON), (BOX_B, 0.8, PERSON), (ELSEWHERE, 0.1, 13)))})
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["export", "coco", str(directory), "--out", str(tmp_path / "coco")], stdout=out) == 0
    assert out.getvalue() == ("wrote instances.json (1 image, 2 labels), detections.json (3 detections) in coco\n")
    out = io.StringIO()
    assert main(["export", "coco", str(directory), "--out", str(tmp_path / "coco"), "--quiet"], stdout=out) == 0
    assert out.getvalue() == ""
    from detect.cli.over_results import export_line
    from detect.evaluate.export import Exported

    written = [tmp_path / "c" / name for name in ("instances.json", "detections.json", "images")]
    assert export_line(Exported(written, [], 2, 0, 1, 2)) == (
        f"wrote instances.json (2 images, 0 labels), detections.json (1 detection), images/ (2 JPEGs copied) in "
        f"{tmp_path / 'c'}")


def test_results_without_their_journal_still_export_and_say_so(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, PEDESTRIAN, 1)), dets((BOX_A, 0.9, PERSON)))})
    shutil.rmtree(directory / ".detect")
    instances, _, err = export(directory, tmp_path / "coco")
    assert "width" not in instances["images"][0] and instances["images"][0]["file_name"] == "images/seg_eval/FRONT/1000000.jpg"
    assert err == ("detect: note: 1 image(s) of seg_eval have no recorded size (no .detect/journal.jsonl in the results): "
                   "their entries have no width and height; --images reads their sizes from the input files\n")


@pytest.mark.slow
@pytest.mark.parametrize("source", ["real_frame_path", "tiny_v2_path"])
def test_images_copies_the_original_jpegs_the_json_names(source, stub_dynamic_dir, tmp_path, request):
    """v1 and v2 inputs: each file_name, relative to the JSON, is the input's own JPEG, byte for byte;
    pycocotools-style readers load the JSON with every image's size."""
    from faster_coco_eval import COCO

    path = request.getfixturevalue(source)
    out = tmp_path / "out"
    assert main(["segment", str(path), "--out", str(out), "--model", str(stub_dynamic_dir), "--quiet", "--no-gif",
                 "--no-png", "--cameras", "FRONT", "SIDE_LEFT", "--no-eval", "--no-report"]) == 0
    segment = out / (REAL_SEGMENT if source == "real_frame_path" else TINY_SEGMENT)
    shutil.rmtree(segment / ".detect")  # sizes then come from the JPEG headers, so no note
    coco_dir = tmp_path / "coco"
    instances, _, err = export(segment, coco_dir, "--images", *gt_for(source, segment, tmp_path))
    assert err == ("detect: note: these results come from a stub model: its boxes are not detections, so the numbers "
                   "measure nothing\n")  # no word about sizes or images: all there
    originals = {f"{f.camera_name.name}/{f.frame_timestamp_micros}": f.jpeg for f in iter_frames(str(path))
                 if f.camera_name.name in ("FRONT", "SIDE_LEFT")}
    assert len(instances["images"]) == len(originals) > 0
    for image in instances["images"]:
        copied = (coco_dir / image["file_name"]).read_bytes()
        assert copied == originals["/".join(image["file_name"].split("/")[2:]).removesuffix(".jpg")]
        assert image["input_path"] == str(path)
    truth = COCO(str(coco_dir / "instances.json"))
    assert all(image["width"] >= 16 and image["height"] >= 16 for image in truth.imgs.values())
    from detect.evaluate.commands import export_coco

    again = export_coco(segment, tmp_path / "again", gt=(gt_for(source, segment, tmp_path) or [None, None])[1],
                        images=True)
    assert (again.images, again.copied) == (len(originals), len(originals))  # what the printed line counts


def gt_for(source: str, segment: Path, tmp_path: Path) -> list[str]:
    """The real frame has its labels; the tiny one (none) gets a camera_box file with a box per image."""
    if source == "real_frame_path":
        return []
    import pyarrow.parquet as pq
    from helpers.label_tables import camera_box

    from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP

    table = pq.read_table(segment / "detections.parquet", columns=[TIMESTAMP, CAMERA]).to_pylist()
    rows = [{SEGMENT: TINY_SEGMENT, TIMESTAMP: r[TIMESTAMP], CAMERA: r[CAMERA]} for r in table]
    return ["--gt", str(camera_box(tmp_path / "gt" / f"{TINY_SEGMENT}.parquet", rows))]


def test_images_from_a_missing_input_is_a_note_and_the_json_is_still_written(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, PEDESTRIAN, 1)), dets((BOX_A, 0.9, PERSON)))})
    manifest = json.loads((directory / "manifest.json").read_text())
    missing = tmp_path / "gone.tfrecord"
    (directory / "manifest.json").write_text(json.dumps({**manifest, "input": {"path": str(missing)}}))
    instances, _, err = export(directory, tmp_path / "coco", "--images")
    assert err.startswith(f"detect: note: {missing}: ") and err.endswith("; the images of seg_eval are not all written\n")
    assert err.count("\n") == 1 and instances["images"][0]["width"] == 1920  # the journal's size
    (directory / "manifest.json").write_text(json.dumps(manifest))
    _, _, err = export(directory, tmp_path / "coco", "--images")
    assert err == f"detect: note: {directory}: its manifest names no input file; the images of seg_eval are not written\n"


@pytest.mark.slow
def test_images_are_never_written_through_a_planted_link(real_frame_path, stub_dynamic_dir, tmp_path):
    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--out", str(out), "--model", str(stub_dynamic_dir), "--quiet",
                 "--no-gif", "--no-png", "--cameras", "FRONT", "--no-eval", "--no-report"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "coco").mkdir()
    (tmp_path / "coco" / "images").symlink_to(elsewhere)
    err = io.StringIO()
    assert main(["export", "coco", str(out), "--out", str(tmp_path / "coco"), "--images"], stderr=err) == 2
    printed = without_status(err.getvalue())
    assert printed == (f"detect: error: {tmp_path / 'coco' / 'images'} is a symlink: detect writes only real "
                              f"folders and files; remove it\n")
    assert list(elsewhere.iterdir()) == []
