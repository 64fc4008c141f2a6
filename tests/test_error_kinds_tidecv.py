"""TIDE's error kinds as `detect eval` computes them, equal to tidecv 1.0.1 (the authors' code, in
a side venv) on the same boxes: the real Waymo frame and a MOT17 clip, run with the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.paths import IN_CI, SHARED
from helpers.tide_reference import tidecv_error_kinds

from detect.cli import main

pytestmark = pytest.mark.slow
MOT17_CLIP = SHARED / "fixtures" / "mot17mini_v2" / "camera_image" / "mot17_05_frcnn.parquet"


def assert_equal_to_tidecv(out: Path, work: Path) -> dict:
    """eval.json's LEVEL_2 error kinds against tidecv on `detect export coco` of the same results:
    per type with labels, and the mean over those types (tidecv's own mean takes every category
    present, SIGN's detections without labels among them, at AP 0)."""
    assert main(["export", "coco", str(out), "--out", str(work), "--quiet"]) == 0
    report = json.loads((out / "eval.json").read_text())
    instances = json.loads((work / "instances.json").read_text())
    theirs = tidecv_error_kinds(work / "instances.json", work / "detections.json", work / "tide.json")
    ours = report["error_kinds"]["LEVEL_2"]
    labelled = sorted({str(a["category_id"]) for a in instances["annotations"]})
    ids = {c["name"]: str(c["id"]) for c in instances["categories"]}
    assert sorted(ids[name] for name in ours if name != "mean") == labelled
    for name, kinds in ours.items():
        expected = ({kind: sum(theirs[i][kind] for i in labelled) / len(labelled) for kind in kinds} if name == "mean"
                    else theirs[ids[name]])
        assert kinds == {kind: pytest.approx(max(0.0, value), abs=0.01) for kind, value in expected.items()}, name
    return ours


def test_the_error_kinds_of_the_real_frame_equal_tidecv(coco_model, real_frame_path, tmp_path):
    out = tmp_path / "run"
    assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0
    assert main(["eval", str(out), "--quiet"]) == 0
    mean = assert_equal_to_tidecv(out, tmp_path / "coco")["mean"]
    assert mean["classification"] > 0.1 and mean["localisation"] > 0.05  # the frame's two largest kinds
    report = json.loads((out / "eval.json").read_text())
    rows = {r["name"]: r for r in report["levels"]["LEVEL_2"]}
    confusion = report["confusion"]
    for k, name in enumerate(confusion["names"][:-1]):  # rows sum to the labels, the background row to the false alarms
        assert sum(confusion["matrix"][k]) == rows[name]["labels"]
        assert confusion["matrix"][-1][k] == rows[name]["false_positives"] or not rows[name]["labels"]
    assert sum(confusion["matrix"][-1][k] for k, n in enumerate(confusion["names"][:-1]) if rows[n]["labels"]) == sum(
        r["false_positives"] for r in report["levels"]["LEVEL_2"][:-1])


def test_the_error_kinds_of_a_mot17_clip_equal_tidecv(coco_model, tmp_path):
    if not MOT17_CLIP.is_file():
        if IN_CI:
            pytest.fail(f"CI=true but the MOT17 fixture is missing: {MOT17_CLIP}", pytrace=False)
        pytest.skip(f"the MOT17 fixture is not at {MOT17_CLIP} (it lives in ../shared, outside the repo)")
    out = tmp_path / "run"
    assert main(["run", str(MOT17_CLIP), "--model", str(coco_model), "--out", str(out), "--quiet", "--no-gif",
                 "--no-png", "--no-eval", "--no-report"]) == 0
    assert main(["eval", str(out), "--quiet"]) == 0
    assert list(assert_equal_to_tidecv(out, tmp_path / "coco")) == ["PEDESTRIAN", "mean"]
