"""Runtimes: the split of each model kind, OpenVINO's detections against TensorFlow's, the cache,
the choice and its fallback line.

The rest of the suite runs on TensorFlow (tests/conftest.py sets DETECT_RUNTIME); here each test
names its runtime.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import REAL_SEGMENT, ROOT, SHARED_FRAME, TINY_V2_DIR
from helpers.tiny_models import build_conv_nms_model, matched

from detect.cli import main
from detect.core.errors import DependencyError, ModelError, UsageError
from detect.core.tf_env import import_tensorflow
from detect.model import formats
from detect.model.detector import Detector
from detect.model.runtimes import RUNTIME_ENV, default_runtime
from detect.model.runtimes.cache import ModelCache
from detect.model.runtimes.freeze import freeze
from detect.model.runtimes.parts import cached, tensorflow_parts
from detect.model.runtimes.split import CONTROL_FLOW_OPS, POSTPROCESS_OPS, SplitError, find_split, network_graph

pytest.importorskip("openvino", reason="OpenVINO is not installed: pip install openvino==2026.4.1")



def build_no_network_model(out: Path) -> Path:
    """A "real"-kind model without a convolution: fixed boxes from the image's mean."""
    tf = import_tensorflow()

    class Flat(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor):
            batch = tf.shape(input_tensor)[0]
            level = tf.reduce_mean(tf.cast(input_tensor, tf.float32), axis=[1, 2, 3]) / 255.0
            return {"detection_boxes": tf.tile(tf.constant([[[0.1, 0.1, 0.5, 0.5]]]), [batch, 1, 1]),
                    "detection_scores": level[:, None], "detection_classes": tf.ones([batch, 1]),
                    "num_detections": tf.ones([batch])}

    module = Flat()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve})
    (out / formats.SIDECAR).write_text(json.dumps({"kind": "real", "description": "no network (test)"}))
    return out


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_conv_nms_model(tmp_path_factory.mktemp("tiny") / "model")


def split_of(path: Path):
    frozen = freeze(formats.load(formats.locate(path)))
    outputs = [frozen.outputs[k] for k in ("detection_boxes", "detection_scores", "detection_classes", "num_detections")]
    return frozen, find_split(frozen.graph_def, frozen.model_input, outputs)


def network_ops(frozen, split) -> set[str]:
    tf = import_tensorflow()
    graph = network_graph(frozen.graph_def, split, tf.float32.as_datatype_enum,
                          [tf.float32.as_datatype_enum] * len(split.network_outputs))
    return {node.op for node in graph.node}


@pytest.mark.slow
def test_the_cut_finds_the_nms_of_a_keras_style_savedmodel(tiny_model):
    frozen, split = split_of(tiny_model)
    assert split.postprocess_ops == ("CombinedNonMaxSuppression",)
    ops = network_ops(frozen, split)
    assert "Conv2D" in ops and not ops & (POSTPROCESS_OPS | CONTROL_FLOW_OPS | {"ResizeBilinear", "VarHandleOp"})
    assert split.handoff == ()  # the NMS reads only the network's boxes and scores


def test_the_cut_of_a_tf1_frozen_graph_keeps_its_loops_in_tensorflow(person_pb, person_saved_model):
    for path in (person_pb, person_saved_model):  # the .pb itself, and wrapped in a TF2 function call
        frozen, split = split_of(path)
        assert {"NonMaxSuppressionV3", "TopKV2", "Enter", "Exit"} <= set(split.postprocess_ops), path
        assert split.network_input.endswith("FeatureExtractor/MobilenetV2/MobilenetV2/input:0")
        assert any("Postprocessor" in t for t in split.handoff)  # the images' true size, from the preprocessing loop
        ops = network_ops(frozen, split)
        assert not ops & (POSTPROCESS_OPS | CONTROL_FLOW_OPS | {"PartitionedCall", "StatefulPartitionedCall"})
        assert split.network_nodes > 400


def test_the_cut_of_centernet_is_its_top_k(coco_model):
    frozen, split = split_of(coco_model)
    assert split.postprocess_ops == ("TopKV2",)
    ops = network_ops(frozen, split)
    assert {"MaxPool", "Sigmoid"} <= ops and not ops & {"TopKV2", "Pad", "Assert"}  # letterbox stays in TF


def test_the_parts_around_the_network_are_cached_once_and_read_back_alike(tiny_model, tmp_path):
    tf = import_tensorflow()
    (tmp_path / "cache").mkdir()
    cache = ModelCache(tmp_path / "cache")
    loaded = formats.load(formats.locate(tiny_model))
    image = tf.constant(np.full((1, 40, 48, 3), 100, np.uint8))
    with cache.locked():
        assert not cached(cache)
        made = tensorflow_parts(tf, cache, loaded)
        assert cached(cache) and {p.name for p in (tmp_path / "cache").iterdir()} >= {"frozen.pb", "split.json"}
        read = tensorflow_parts(tf, cache, None)  # from the cache: the model is not needed again
    assert (read.split, read.frozen.model_input, read.frozen.outputs) == (made.split, made.frozen.model_input,
                                                                          made.frozen.outputs)
    for ours, theirs in zip(made.pre(image), read.pre(image), strict=True):
        assert np.array_equal(ours.numpy(), theirs.numpy())
    assert "Conv2D" in {node.op for node in made.network_graph(tf.float32).node}


def test_a_model_without_a_convolution_has_no_network_to_take(tmp_path):
    with pytest.raises(SplitError, match="no convolution between the input and the outputs"):
        split_of(build_no_network_model(tmp_path / "flat"))


@pytest.mark.parametrize("which", ["person", "coco"])
def test_openvino_and_tensorflow_find_the_same_boxes_on_the_real_frame(which, person_pb, coco_model,
                                                                       real_images):
    path = person_pb if which == "person" else coco_model
    by_shape: dict[tuple[int, ...], list[str]] = {}
    for name, image in real_images.items():
        by_shape.setdefault(image.shape, []).append(name)
    found = {}
    for runtime in ("tensorflow", "openvino"):
        detector = Detector(path, threshold=0.25, runtime=runtime, batch_size=4)
        assert detector.runtime.name == runtime
        found[runtime] = {}
        for names in by_shape.values():
            found[runtime].update(zip(names, detector(np.stack([real_images[n] for n in names])), strict=True))
    boxes = 0
    for name in real_images:
        tf_boxes, ov_boxes = found["tensorflow"][name], found["openvino"][name]
        boxes += int((tf_boxes.scores >= 0.3).sum())
        assert matched(tf_boxes, ov_boxes) >= 0.98 and matched(ov_boxes, tf_boxes) >= 0.98, name
    assert boxes >= {"person": 3, "coco": 50}[which]  # the comparison is over real detections


@pytest.mark.slow  # converts networks to OpenVINO (`make test-fast` leaves it out)
def test_the_converted_network_is_cached_reused_and_renewed_when_the_model_changes(tmp_path):
    model = build_conv_nms_model(tmp_path / "model")
    images = np.random.default_rng(1).integers(0, 255, (3, 40, 60, 3), dtype=np.uint8)
    older = model / ".detect_cache" / "openvino-2025.0.0" / "0123456789abcdef"  # before an upgrade
    kept = model / ".detect_cache" / "notes"  # not ours to remove
    older.mkdir(parents=True)
    kept.mkdir()
    first = Detector(model, threshold=0.0, runtime="openvino", batch_size=2)
    facts = first.runtime.describe()
    folder = Path(facts["cache"])
    assert not facts["reused_cache"] and folder.parent.parent == model / ".detect_cache"
    assert folder.parent.name.startswith("openvino-2026.") and not older.parent.exists() and kept.is_dir()
    assert folder.name == formats.checksum(model)[:16]
    # Batch x the network's input size: two streams of half a batch each.
    assert {p.name for p in folder.glob("network-*.xml")} == {"network-1x32x32x3-float32.xml"}
    assert (facts["streams"], facts["hint"]) == (2, "THROUGHPUT")
    second = Detector(model, threshold=0.0, runtime="openvino", batch_size=2)
    assert second.runtime.describe()["reused_cache"]
    for a, b in zip(first(images), second(images), strict=True):
        np.testing.assert_array_equal(a.xyxy, b.xyxy)
    Detector(model, threshold=0.0, runtime="openvino", batch_size=3)  # another batch size: its own network
    assert len(list(folder.glob("network-*.xml"))) == 2

    tf = import_tensorflow()  # the same model retrained: other weights, other checksum
    build_conv_nms_model(tmp_path / "retrained", seed=5)
    shutil.rmtree(model / "variables")
    shutil.copytree(tmp_path / "retrained" / "variables", model / "variables")
    renewed = Detector(model, threshold=0.0, runtime="openvino", batch_size=2)
    facts = renewed.runtime.describe()
    assert not facts["reused_cache"] and Path(facts["cache"]) != folder and not folder.exists()
    reference = Detector(model, threshold=0.0, runtime="tensorflow", batch_size=2)
    assert tf is not None
    for a, b in zip(renewed(images), reference(images), strict=True):
        assert matched(b, a) >= 0.98


@pytest.mark.slow
def test_a_model_openvino_cannot_take_falls_back_with_one_line(tmp_path, capsys):
    model = build_no_network_model(tmp_path / "flat")
    detector = Detector(model, runtime="auto")
    assert detector.runtime.name == "tensorflow"
    assert detector.runtime_note == (f"note: model {model} cannot run on OpenVINO (no convolution between the input "
                                     "and the outputs: not a convolutional detector); running on TensorFlow")
    with pytest.raises(ModelError) as refused:
        Detector(model, runtime="openvino")
    assert str(refused.value) == (f"model {model} cannot run on OpenVINO: no convolution between the input and the "
                                  "outputs: not a convolutional detector (--runtime tensorflow runs it)")
    out = tmp_path / "out"
    source = str(SHARED_FRAME) if SHARED_FRAME.exists() else str(TINY_V2_DIR)
    assert main(["segment", source, "--model", str(model), "--out", str(out), "--runtime", "openvino", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"detect: error: {refused.value}"]
    assert not out.exists()  # refused before anything was written


def test_without_openvino_auto_says_so_and_openvino_is_an_error(tiny_model, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino now raises ImportError
    detector = Detector(tiny_model, runtime="auto")
    assert detector.runtime.name == "tensorflow"
    assert detector.runtime_note == ("note: OpenVINO is not installed: pip install openvino==2026.4.1 (or use "
                                     "--runtime tensorflow); running on TensorFlow")
    with pytest.raises(DependencyError, match="OpenVINO is not installed"):
        Detector(tiny_model, runtime="openvino")


@pytest.mark.slow
def test_auto_is_openvino_on_a_cpu_and_tensorflow_for_stubs_and_mirrored(tiny_model, stub_dynamic_dir, monkeypatch):
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    assert default_runtime() == "auto"
    assert Detector(tiny_model).runtime.name == "openvino"
    assert Detector(stub_dynamic_dir).runtime_note is None and Detector(stub_dynamic_dir).runtime.name == "tensorflow"
    mirrored = Detector(tiny_model, strategy="mirrored")
    assert (mirrored.runtime.name, mirrored.runtime_note) == ("tensorflow", None)
    with pytest.raises(UsageError, match="--strategy mirrored needs --runtime tensorflow"):
        Detector(tiny_model, strategy="mirrored", runtime="openvino")
    with pytest.raises(UsageError, match=r"unknown runtime 'onnx': expected one of auto, tensorflow, openvino"):
        Detector(tiny_model, runtime="onnx")
    monkeypatch.setenv(RUNTIME_ENV, "fastest")
    with pytest.raises(UsageError, match=r"DETECT_RUNTIME='fastest': expected one of auto, tensorflow, openvino"):
        Detector(tiny_model)


@pytest.mark.slow  # converts a network to OpenVINO (`make test-fast` leaves it out)
def test_detect_model_says_what_a_cpu_run_would_use_and_what_is_converted(tmp_path, stub_dynamic_dir, capsys,
                                                                           monkeypatch):
    from detect.model.runtimes import openvino as ov

    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    model = build_conv_nms_model(tmp_path / "model")
    folder = model / ".detect_cache" / f"openvino-{ov.version()}" / formats.checksum(model)[:16]

    def line(path: Path) -> str:
        assert main(["model", str(path)]) == 0
        return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("runtime"))

    assert line(model) == (f"runtime on a CPU: OpenVINO {ov.version()}; not converted yet: the first run converts "
                           f"the network (3-10 s) into {folder}")
    assert not folder.exists()  # only said, not made
    Detector(model, runtime="openvino", batch_size=2)  # two halves of one image
    Detector(model, runtime="openvino", batch_size=3)  # an odd batch: one request
    assert line(model) == (f"runtime on a CPU: OpenVINO {ov.version()}; network converted for inputs 1x32x32x3, "
                           f"3x32x32x3 (an even batch runs as two halves) in {folder}")
    assert main(["model", str(model), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["runtime_on_cpu"]
    assert plan == {"runtime": "openvino", "why": None, "version": ov.version(), "cache": str(folder),
                    "converted": [{"input_shape": [1, 32, 32, 3], "dtype": "float32"},
                                  {"input_shape": [3, 32, 32, 3], "dtype": "float32"}]}
    assert line(stub_dynamic_dir) == "runtime on a CPU: TensorFlow (a stub has no network to speed up)"
    monkeypatch.setattr(ov, "version", lambda: None)
    assert line(model) == "runtime on a CPU: TensorFlow (OpenVINO is not installed)"
    monkeypatch.setenv(RUNTIME_ENV, "tensorflow")
    assert line(model) == "runtime on a CPU: TensorFlow (DETECT_RUNTIME=tensorflow)"


@pytest.mark.slow
def test_the_manifest_and_the_summary_say_what_ran_the_model(tiny_model, tiny_v2_path, tmp_path, capsys):
    from helpers.paths import TINY_SEGMENT

    out = tmp_path / "out"
    assert main(["segment", str(tiny_v2_path), "--model", str(tiny_model), "--out", str(out), "--runtime", "openvino",
                 "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0
    runtime = json.loads((out / TINY_SEGMENT / "manifest.json").read_text())["model"]["runtime"]
    assert (runtime["name"], runtime["requested"], runtime["precision"]) == ("openvino", "openvino", "f32")
    assert runtime["version"] == "2026.4.1" and runtime["postprocess_in_tensorflow"] == ["CombinedNonMaxSuppression"]
    assert "; on OpenVINO 2026.4.1" in capsys.readouterr().out


def test_a_real_segment_evaluates_the_same_on_both_runtimes(coco_model, real_frame_path, tmp_path):
    results = {}
    for runtime in ("tensorflow", "openvino"):
        out = tmp_path / runtime
        assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out), "--quiet",
                     "--no-gif", "--no-png", "--no-report", "--runtime", runtime]) == 0
        levels = json.loads((out / REAL_SEGMENT / "eval.json").read_text())["levels"]
        results[runtime] = {(level, t["name"]): (t["ap50"], t["ap_waymo"], t["true_positives"], t["false_positives"])
                            for level, types in levels.items() for t in types}
    assert results["openvino"].keys() == results["tensorflow"].keys()
    for key, (ap50, ap_waymo, hits, false_alarms) in results["tensorflow"].items():
        assert results["openvino"][key] == (pytest.approx(ap50, abs=0.01), pytest.approx(ap_waymo, abs=0.01),
                                            hits, false_alarms), key


NO_TELEMETRY_SCRIPT = """
import json, sys
# A look-up or a packet towards any host, in this process or a forked one (OpenVINO's telemetry
# sends from a forked multiprocessing.Process): appended to a file the test reads. urllib3's import
# binds ::1 port 0 to probe for IPv6, which is not a contact.
REACHING_OUT = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
                "socket.sendto", "socket.sendmsg"}

def audit(event, args):
    if event in REACHING_OUT:
        with open(sys.argv[2], "a") as log:
            log.write(f"{event} {args!r:.200}\\n")

sys.addaudithook(audit)
import numpy as np
from detect.model.detector import Detector
detector = Detector(sys.argv[1], threshold=0.0, runtime="openvino", batch_size=2)
detector(np.zeros((2, 40, 60, 3), np.uint8))
print(json.dumps({"runtime": detector.runtime.name, "reused": detector.runtime.describe()["reused_cache"],
                  "telemetry": repr(sys.modules.get("openvino_telemetry", "never imported"))}))
"""


@pytest.mark.slow
def test_a_conversion_contacts_no_host_and_writes_nothing_in_home(tmp_path):
    """OpenVINO's converter would send usage telemetry to Google Analytics and write ~/intel."""
    model = build_conv_nms_model(tmp_path / "model")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT), "DETECT_RUNTIME": "openvino"}
    contacts = tmp_path / "contacts.log"
    done = subprocess.run([sys.executable, "-c", NO_TELEMETRY_SCRIPT, str(model), str(contacts)], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts == {"runtime": "openvino", "reused": False, "telemetry": "None"}
    assert not contacts.exists(), contacts.read_text()[:2000]
    assert not (home / "intel").exists()  # no ~/intel/openvino_ga_cid, ~/intel/stats
