"""Real models exported to ONNX with tf2onnx (the CenterNet and the SSDLite, in the TF Object Detection API
contract) find on the real Waymo frame the boxes their SavedModels find: every box scoring 0.3 or more has
a twin (same camera and class, IoU >= 0.98, score within 0.02) in the other run, both ways."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.models import onnx_export
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.core.boxes import box_iou

SHOWN = 0.3
pytestmark = pytest.mark.slow  # real models (their fixtures are asked for by name, so conftest cannot see them)


@pytest.fixture(scope="module")
def centernet_onnx(coco_model) -> Path:
    return onnx_export(coco_model, "centernet")


@pytest.fixture(scope="module")
def ssd_onnx(ssd_model) -> Path:
    return onnx_export(ssd_model, "ssdlite")


def table(model: Path, frame: Path, out: Path, runtime: str) -> list[dict]:
    assert main(["segment", str(frame), "--model", str(model), "--out", str(out), "--quiet", "--no-gif", "--no-png",
                 "--no-eval", "--no-report", "--runtime", runtime]) == 0
    manifest = json.loads((out / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["model"]["runtime"]["name"] == ("openvino" if runtime == "auto" else runtime)
    return pq.read_table(out / REAL_SEGMENT / "detections.parquet").to_pylist()


def unmatched(ours: list[dict], theirs: list[dict]) -> list[dict]:
    """Rows of `ours` scoring >= SHOWN with no twin in `theirs`."""
    lonely = []
    for row in (r for r in ours if r["score"] >= SHOWN):
        candidates = [t for t in theirs if (t["key.camera_name"], t["class_id"]) == (row["key.camera_name"], row["class_id"])
                      and abs(t["score"] - row["score"]) <= 0.02]
        boxes = np.array([[t["xmin"], t["ymin"], t["xmax"], t["ymax"]] for t in candidates], np.float32).reshape(-1, 4)
        box = np.array([[row["xmin"], row["ymin"], row["xmax"], row["ymax"]]], np.float32)
        if not candidates or box_iou(box, boxes).max() < 0.98:
            lonely.append(row)
    return lonely


@pytest.mark.parametrize("name", ["centernet", "ssdlite"])
def test_the_onnx_export_finds_the_saved_model_boxes_on_the_real_frame(name, request, real_frame_path, tmp_path):
    saved_model = request.getfixturevalue("coco_model" if name == "centernet" else "ssd_model")
    exported = request.getfixturevalue("centernet_onnx" if name == "centernet" else "ssd_onnx")
    reference = table(saved_model, real_frame_path, tmp_path / "saved_model", "tensorflow")
    onnx_rows = table(exported, real_frame_path, tmp_path / "onnx", "auto")
    assert sum(r["score"] >= SHOWN for r in reference) >= 10
    assert unmatched(reference, onnx_rows) == [] and unmatched(onnx_rows, reference) == []
    manifest = json.loads((tmp_path / "onnx" / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["model"]["format"] == "onnx" and manifest["model"]["source"]["layout"] == "tf_od_api"
