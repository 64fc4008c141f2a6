"""What `detect model` says of an ONNX file, and the ONNX files and options refused in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import without_status
from helpers.onnx_graphs import boxes_labels_scores_model, single_output_model, ultralytics_head, ultralytics_model

from detect.cli import main
from detect.core.errors import ModelError, UsageError
from detect.model.detector import Detector
from detect.model.sidecar import SIDECAR

NAMES = {0: "person", 1: "car", 2: "bicycle"}
KNOWN = ("it reads the TF Object Detection API's detection_boxes/detection_scores/detection_classes/num_detections, "
         "boxes/labels/scores, or an Ultralytics YOLOv8/11 detect head with its metadata (docs/models.md)")


@pytest.fixture(autouse=True)
def _auto_runtime(monkeypatch):
    monkeypatch.setenv("DETECT_RUNTIME", "auto")


@pytest.fixture
def yolo(tmp_path):
    return ultralytics_model(tmp_path / "yolo.onnx", NAMES, ultralytics_head([(200, 356, 200, 100, 1, 0.9)], 3))


def refusal(path) -> str:
    with pytest.raises(ModelError) as err:
        Detector(path)
    return str(err.value)


def test_detect_model_says_format_layout_input_classes_and_runtime(yolo, capsys):
    assert main(["model", str(yolo)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Ultralytics YOLO11n-test model (ONNX yolo.onnx) (real)",
        f"path: {yolo} (onnx)",
        "ONNX: made by detect-tests, opsets ai.onnx 17",
        "layout: Ultralytics YOLOv8/11 detect head (cx, cy, w, h + class scores; NMS by detect)",
        "  input: images float32 [1, 3, 640, 640] NCHW, RGB / 255,",
        "    letterboxed on grey 114 to 640x640 (Ultralytics' preprocessing, from the metadata)",
        "  boxes: cx, cy, w, h in network-input pixels (Ultralytics), mapped back through the letterbox",
        "  classes from: 3 names from the ONNX metadata's names",
        "defaults: input size native, threshold 0.25, NMS IoU 0.7",
        "runtime: OpenVINO 2026.4.1, reading the ONNX file itself (nothing converted; no TensorFlow runtime for ONNX)",
        "classes (3): 1 person, 2 bicycle, 3 car",
    ]
    assert main(["model", str(yolo), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "onnx" and data["source"]["layout"] == "ultralytics"
    assert data["classes"] == {"1": "person", "2": "bicycle", "3": "car"}


def test_a_torchvision_export_says_how_its_boxes_and_labels_are_read(tmp_path, capsys):
    model = boxes_labels_scores_model(tmp_path / "tv.onnx", np.zeros((1, 4)), np.array([1]), np.array([0.5]))
    assert main(["model", str(model)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "layout: boxes / labels / scores (torchvision, RT-DETR, D-FINE)"
    text = " ".join(line.strip() for line in lines)
    assert ("input: images float32 [3, ?, ?] CHW, RGB / 255, at the image's own size (from the graph; RGB / 255, the "
            "convention of the exporters detect knows (detect_model.json onnx.input changes it))") in text
    assert "boxes: xyxy in network-input pixels, as torchvision, RT-DETR and D-FINE export them" in text
    assert "classes from: COCO category ids (1-90)" in text


def test_a_file_that_is_not_onnx_is_refused(tmp_path, capsys):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\xff\xff not a protobuf")
    assert refusal(junk).startswith(f"model {junk} is not an ONNX model (")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert refusal(empty) == f"model {empty} is not an ONNX model (no graph, IR version or opset in it)"
    assert main(["model", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"detect: error: model {junk} is not an ONNX model (") and err.count("\n") == 1


def test_an_unknown_output_layout_names_the_outputs_found(tmp_path):
    end_to_end = single_output_model(tmp_path / "yolo26.onnx", "output0", (1, 300, 6))
    assert refusal(end_to_end) == (f"model {end_to_end}: an ONNX output layout detect does not know (outputs: output0 "
                                   f"float32 [1, 300, 6]); {KNOWN}")


def test_an_opset_openvino_refuses_is_one_line(tmp_path):
    model = ultralytics_model(tmp_path / "old.onnx", NAMES, ultralytics_head([], 3), opset=0)
    message = refusal(model)
    assert message.startswith(f"model {model}: OpenVINO 2026.4.1 cannot read this ONNX graph (opsets ai.onnx 0): ")
    assert "\n" not in message and message.endswith(": Unsupported operator version: Cast:0")
    custom = single_output_model(tmp_path / "custom.onnx", shape=(1, 7, 64), op="Foo", domain="com.example",
                                 metadata={"names": str(NAMES), "imgsz": "[640, 640]"})
    message = refusal(custom)
    assert message == (f"model {custom}: OpenVINO 2026.4.1 cannot read this ONNX graph (opsets ai.onnx 17, com.example "
                       f"1): No conversion rule found for operations: com.example.Foo")


@pytest.mark.parametrize(("shape", "expected"), [
    ((1, 3, 100000, 640), "input images float32 [1, 3, 100000, 640]: sides of 16-8192 pixels expected (an absurd shape)"),
    ((1, 3, 8, 640), "input images float32 [1, 3, 8, 640]: sides of 16-8192 pixels expected (an absurd shape)"),
    ((1, 5, 640, 640), "input images float32 [1, 5, 640, 640]: cannot tell where its 3 channels are (an image input "
                       "is [B, H, W, 3], [B, 3, H, W] or [3, H, W]; detect_model.json onnx.input.order names it)"),
    ((8, 3, 640, 640), "input images float32 [8, 3, 640, 640] has its batch fixed at 8; detect runs models whose batch "
                       "is 1 or any"),
])
def test_absurd_input_shapes_are_refused(tmp_path, shape, expected):
    model = boxes_labels_scores_model(tmp_path / "m.onnx", np.zeros((1, 1, 4)), np.array([[1]]), np.array([[0.5]]),
                                      input_shape=shape)
    assert refusal(model) == f"model {model}: {expected}"


def test_a_dimension_of_zero_is_refused(tmp_path):
    model = single_output_model(tmp_path / "zero.onnx", "output0", (1, 0, 6))
    assert refusal(model) == (f"model {model}: output0 float32 [1, 0, 6] has a dimension of 0; expected 1-10,000,000 "
                              f"(an absurd shape)")


@pytest.mark.parametrize(("names", "metadata", "expected"), [
    (NAMES, {"task": "segment"}, "an Ultralytics 'segment' model; detect reads Ultralytics detect heads only"),
    ({0: "vehicle", 1: "car", 2: "cyclist"}, {}, "class names 'vehicle', 'cyclist' in the ONNX metadata's names are not "
     "COCO's; detect keys classes by COCO name (rename them in detect_model.json onnx.names)"),
    ({0: "person", 1: "car"}, {}, "output output0 float32 [1, 7, 64]; an Ultralytics detect head with 2 classes gives "
     "[1, 6, N] (4 box rows + one a class)"),
])
def test_ultralytics_heads_detect_cannot_read_are_refused(tmp_path, names, metadata, expected):
    head = ultralytics_head([], 3)
    model = ultralytics_model(tmp_path / "y.onnx", names, head, metadata=metadata)
    assert refusal(model) == f"model {model}: {expected}"


def test_class_names_can_be_renamed_in_the_sidecar(tmp_path):
    head = ultralytics_head([(200, 356, 200, 100, 0, 0.9)], 3)
    model = ultralytics_model(tmp_path / "y.onnx", {0: "vehicle", 1: "pedestrian", 2: "cyclist"}, head)
    (tmp_path / SIDECAR).write_text(json.dumps({"kind": "real", "onnx": {"names": ["car", "person", "bicycle"]}}))
    assert Detector(model)(np.zeros((1, 640, 640, 3), np.uint8))[0].labels == ("car",)


def test_the_tensorflow_runtime_and_mirrored_strategy_are_refused(yolo, real_frame_path, tmp_path, capsys):
    with pytest.raises(UsageError) as err:
        Detector(yolo, runtime="tensorflow")
    assert str(err.value) == (f"model {yolo} is ONNX, which runs on OpenVINO only: runtime tensorflow (--runtime or "
                              f"$DETECT_RUNTIME) cannot run it; use --runtime auto or openvino")
    with pytest.raises(UsageError, match=r"is ONNX, which runs on OpenVINO in one CPU process: --strategy mirrored is "
                                         r"TensorFlow's$"):
        Detector(yolo, strategy="mirrored")
    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--model", str(yolo), "--runtime", "tensorflow", "--out", str(out)]) == 2
    assert without_status(capsys.readouterr().err) == f"detect: error: {err.value}\n"


def test_ray_gpu_actors_run_an_onnx_model_on_openvino_and_other_models_on_tensorflow() -> None:
    """GPU actors take TensorFlow when the runtime is auto, except for an ONNX model (OpenVINO only);
    a runtime asked for by name is kept either way."""
    from detect.engine.ray import actor_runtime
    from detect.engine.spec import ModelSpec

    assert actor_runtime(ModelSpec(path=Path("m/model.onnx")), gpus=True) == "auto"
    assert actor_runtime(ModelSpec(path=Path("m/saved")), gpus=True) == "tensorflow"
    assert actor_runtime(ModelSpec(path=None), gpus=True) == "tensorflow"
    assert actor_runtime(ModelSpec(path=Path("m/saved")), gpus=False) == "auto"
    assert actor_runtime(ModelSpec(path=Path("m/saved"), runtime="openvino"), gpus=True) == "openvino"


def test_ray_gpu_actors_take_an_onnx_model_named_by_the_environment_to_openvino(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --model, $DETECT_MODEL names the model the actors load: an ONNX file there keeps auto."""
    from detect.engine.ray import actor_runtime
    from detect.engine.spec import ModelSpec

    monkeypatch.setenv("DETECT_MODEL", "m/model.onnx")
    assert actor_runtime(ModelSpec(path=None), gpus=True) == "auto"
