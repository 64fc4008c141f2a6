"""ONNX detectors of the three layouts run on OpenVINO: small graphs with known outputs (built with the
`onnx` helper API) decode to known pixels in both Waymo camera shapes, with their metadata's names."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.onnx_graphs import boxes_labels_scores_model, ultralytics_head, ultralytics_model
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.model.detector import Detector
from detect.model.onnx.decode import letterbox
from detect.model.sidecar import SIDECAR

NAMES = {0: "person", 1: "car", 2: "bicycle"}  # not COCO's order: labels must come from these names
# Ultralytics' letterbox of a 1920-wide frame into 640x640 scales it by 1/3 and centres it: the 1920x1280
# cameras' 427 rows start (640 - 426.67) / 2 - 0.1 -> 106 rows down, the 1920x886 cameras' 295 rows 172.
TOP = {1280: 106, 886: 172}


@pytest.fixture(autouse=True)
def _auto_runtime(monkeypatch):
    monkeypatch.setenv("DETECT_RUNTIME", "auto")  # the suite's default (tensorflow) cannot run ONNX


def frames(height: int, count: int = 1, value: tuple[int, int, int] = (60, 60, 60)) -> np.ndarray:
    return np.broadcast_to(np.array(value, np.uint8), (count, height, 1920, 3)).copy()


def near(box, expected, tolerance: float = 4.0) -> bool:
    return bool(np.all(np.abs(np.asarray(box) - np.asarray(expected)) <= tolerance))


@pytest.fixture
def yolo(tmp_path):
    """A car (0.9, with a 0.6 duplicate NMS removes), a person (0.4) and a bicycle (0.2), in network pixels."""
    head = ultralytics_head([(200, 356, 200, 100, 1, 0.9), (202, 357, 200, 100, 1, 0.6),
                             (500, 300, 30, 90, 0, 0.4), (100, 200, 60, 60, 2, 0.2)], classes=len(NAMES))
    return ultralytics_model(tmp_path / "yolo.onnx", NAMES, head)


@pytest.mark.parametrize("height", [1280, 886])
def test_ultralytics_boxes_land_on_the_frame_pixels_through_the_letterbox(yolo, height):
    detector = Detector(yolo, threshold=0.3, nms_iou=0.7)
    found = detector(frames(height))[0]
    top = TOP[height]
    assert found.labels == ("car", "person")
    assert list(found.class_ids) == [3, 1]
    assert found.scores == pytest.approx([0.9, 0.4])
    assert near(found.xyxy[0], [100 * 3, (306 - top) * 3, 300 * 3, (406 - top) * 3])
    assert near(found.xyxy[1], [485 * 3, (255 - top) * 3, 515 * 3, (345 - top) * 3])


def test_ultralytics_score_floor_keeps_what_the_threshold_would_not_draw(yolo):
    found = Detector(yolo, threshold=0.05, nms_iou=0.7)(frames(1280))[0]
    assert found.labels == ("car", "person", "bicycle")
    assert near(found.xyxy[2], [70 * 3, (170 - 106) * 3, 130 * 3, (230 - 106) * 3])
    assert Detector(yolo, threshold=0.05, nms_iou=None)(frames(1280))[0].labels.count("car") == 2


def test_ultralytics_input_is_letterboxed_on_grey_rgb_over_255(tmp_path):
    """Probes read the network input: a red frame is 1.0 in channel 0 and 0 in channel 2 inside the
    letterbox, and the padding above it is grey 114 / 255."""
    head = ultralytics_head([(320, 320, 40, 40, 0, 0.0), (320, 320, 40, 40, 2, 0.0), (100, 320, 40, 40, 1, 0.0)], 3)
    model = ultralytics_model(tmp_path / "probe.onnx", NAMES, head,
                              probes=[(0, 320, 320, 0, 0), (0, 0, 0, 1, 2), (2, 320, 320, 2, 1)])
    found = Detector(model, threshold=0.01)(frames(1280, value=(255, 0, 0)))[0]
    assert dict(zip(found.labels, found.scores.tolist())) == pytest.approx({"person": 1.0, "bicycle": 114 / 255})


def test_a_dynamic_ultralytics_export_is_letterboxed_to_its_imgsz(tmp_path):
    head = ultralytics_head([(200, 356, 200, 100, 1, 0.9)], classes=3)
    model = ultralytics_model(tmp_path / "dyn.onnx", NAMES, head, dynamic=True)
    found = Detector(model, threshold=0.3)(frames(886, count=3))
    assert [d.labels for d in found] == [("car",)] * 3
    assert all(near(d.xyxy[0], [300, (306 - 172) * 3, 900, (406 - 172) * 3]) for d in found)


@pytest.mark.parametrize("height", [1280, 886])
def test_torchvision_boxes_are_pixels_of_the_image_it_was_given(tmp_path, height):
    boxes = np.array([[100, 200, 400, 600], [1500, 300, 1900, 800]], np.float32)
    model = boxes_labels_scores_model(tmp_path / "tv.onnx", boxes, np.array([3, 1]), np.array([0.8, 0.7]))
    found = Detector(model, threshold=0.5)(frames(height, count=2))
    for detections in found:
        assert detections.labels == ("car", "person")
        assert near(detections.xyxy[0], [100, 200, 400, 600])
        assert near(detections.xyxy[1], [1500, 300, 1900, min(800, height)])


@pytest.mark.parametrize("height", [1280, 886])
def test_rt_detr_boxes_follow_the_sizes_it_is_given_and_map_back_from_the_stretch(tmp_path, height):
    normalized = np.array([[[0.25, 0.5, 0.5, 0.75]]], np.float32)
    model = boxes_labels_scores_model(tmp_path / "rtdetr.onnx", normalized, np.array([[2]]), np.array([[0.9]]),
                                      input_shape=(1, 3, 640, 640), sizes_input=True)
    (tmp_path / SIDECAR).write_text(json.dumps({"kind": "real", "onnx": {"labels": "coco80"}}))
    found = Detector(model, threshold=0.5)(frames(height, count=2))
    assert [d.labels for d in found] == [("car",), ("car",)]  # index 2 of COCO's 80
    assert all(near(d.xyxy[0], [480, 0.5 * height, 960, 0.75 * height]) for d in found)


def test_a_batch_of_any_size_gives_each_image_its_own_boxes(tmp_path):
    boxes = np.array([[[0.1, 0.1, 0.2, 0.3]]], np.float32)
    model = boxes_labels_scores_model(tmp_path / "b.onnx", boxes, np.array([[1]]), np.array([[0.9]]),
                                      input_shape=(None, 3, 320, 320), sizes_input=True)
    detector = Detector(model, threshold=0.5, batch_size=4)
    assert detector.info.batch_size is None and detector.batch_size == 4
    found = detector(frames(886, count=6))
    assert len(found) == 6 and all(near(d.xyxy[0], [192, 88.6, 384, 265.8]) for d in found)


def test_letterbox_geometry_is_ultralytics(yolo):
    wide = letterbox(1920, 1280, 640, 640)
    assert (wide.inner_width, wide.inner_height, wide.top, wide.left, wide.pad_y) == (640, 427, 106, 0, 106)
    side = letterbox(1920, 886, 640, 640)
    assert (side.inner_width, side.inner_height, side.top, side.pad_y) == (640, 295, 172, 172)
    tall = letterbox(480, 640, 640, 640)
    assert (tall.inner_width, tall.inner_height, tall.left, tall.pad_x, tall.gain_x) == (480, 640, 80, 80, 1.0)


@pytest.mark.slow
def test_a_run_on_the_real_frame_tables_the_boxes_above_the_floor_and_draws_those_above_the_threshold(
        yolo, real_frame_path, tmp_path):
    """`detect segment --model FILE.onnx` with the model's defaults (native frames, threshold 0.25, NMS 0.7):
    the table keeps the bicycle (0.2, above the 0.05 floor), the frames and the counts draw car and person."""
    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--model", str(yolo), "--out", str(out), "--quiet", "--no-gif",
                 "--no-eval", "--no-report"]) == 0
    rows = pq.read_table(out / REAL_SEGMENT / "detections.parquet").to_pylist()
    manifest = json.loads((out / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["model"]["format"] == "onnx" and manifest["model"]["runtime"]["name"] == "openvino"
    assert (manifest["settings"]["input_size"], manifest["model"]["nms_iou"], manifest["model"]["threshold"]) == (
        "native", 0.7, 0.25)
    assert manifest["counts"]["detections"] == 15 and manifest["counts"]["drawn"] == 10  # 5 images: 3 kept, 2 drawn
    for camera, height in ((1, 1280), (4, 886)):  # FRONT, SIDE_LEFT
        boxes = {r["label"]: (r["xmin"], r["ymin"], r["xmax"], r["ymax"]) for r in rows if r["key.camera_name"] == camera}
        assert sorted(boxes) == ["bicycle", "car", "person"]
        assert near(boxes["car"], [300, (306 - TOP[height]) * 3, 900, (406 - TOP[height]) * 3])
