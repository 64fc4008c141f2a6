"""`detect eval PARENT` pools distinct segments of one model and settings: the same segment in two
folders, or runs with other models or settings, are refused with one line unless --allow-mixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.results_folders import BOX_A, PERSON, T0, dets, labels, segment_folder

from detect.cli import main
from detect.core.cameras import CameraName
from detect.core.records import FrameKey


def segment(parent: Path, name: str = "seg", model: dict | None = None, settings: dict | None = None) -> Path:
    """A segment's results under `parent` (one image, one hit) with these manifest facts."""
    directory = segment_folder(parent, {FrameKey(name, T0, CameraName.FRONT): (labels((BOX_A, 2, 1)),
                                                                             dets((BOX_A, 0.9, PERSON)))}, name=name)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["model"] |= {"sha256": "a" * 64, "nms_iou": 0.7, "score_floor": 0.05} | (model or {})
    manifest["settings"] |= {"input_size": "fit:960x640", "tile": None} | (settings or {})
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def test_the_same_segment_in_two_folders_is_not_pooled(tmp_path, capsys):
    segment(tmp_path / "untiled")
    segment(tmp_path / "tiled", settings={"tile": {"size": 512, "overlap": 0.2}})
    segment(tmp_path / "again")
    assert main(["eval", str(tmp_path), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"detect: error: {tmp_path}: segment seg is in 3 folders, again/seg, tiled/seg, untiled/seg: pooled, it "
        f"would count 3 times; evaluate one of them, or pass --allow-mixed\n")
    assert not (tmp_path / "eval.json").exists()


def test_segments_run_with_other_settings_are_not_pooled(tmp_path, capsys):
    segment(tmp_path / "a", "seg_a")
    segment(tmp_path / "b", "seg_b", settings={"tile": {"size": 512, "overlap": 0.2}, "input_size": "native"})
    assert main(["eval", str(tmp_path), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        f"detect: error: {tmp_path}: its segments ran with different models or settings (input size fit:960x640 "
        f"vs native; tile none vs 512 (overlap 0.2): a/seg_a vs b/seg_b); evaluate each run's folder on its own, or "
        f"pass --allow-mixed\n")


def test_segments_of_another_model_are_not_pooled(tmp_path, capsys):
    segment(tmp_path, "seg_a")
    segment(tmp_path, "seg_b", model={"sha256": "b" * 64})
    assert main(["export", "coco", str(tmp_path), "--out", str(tmp_path / "coco")]) == 2
    assert f"(model {'a' * 12} vs {'b' * 12}: seg_a vs seg_b)" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "export"])
def test_allow_mixed_pools_them_anyway(tmp_path, command):
    segment(tmp_path / "untiled")
    segment(tmp_path / "tiled", settings={"tile": {"size": 512, "overlap": 0.2}})
    args = ["eval", str(tmp_path)] if command == "eval" else ["export", "coco", str(tmp_path)]
    assert main([*args, "--quiet", "--allow-mixed"]) == 0
    if command == "eval":
        report = json.loads((tmp_path / "eval.json").read_text())
        pedestrian = next(r for r in report["levels"]["LEVEL_2"] if r["name"] == "PEDESTRIAN")
        assert (pedestrian["labels"], pedestrian["true_positives"]) == (2, 2)  # counted twice, as asked
    else:
        assert len(json.loads((tmp_path / "instances.json").read_text())["annotations"]) == 2


@pytest.mark.slow
def test_one_run_of_distinct_segments_and_one_settings_is_pooled(tmp_path):
    segment(tmp_path, "seg_a")
    segment(tmp_path, "seg_b", settings={"cameras": ["FRONT"], "draw": {"threshold": 0.4}})  # a subset, a threshold
    assert main(["eval", str(tmp_path), "--quiet"]) == 0
    assert json.loads((tmp_path / "eval.json").read_text())["segments"] == ["seg_a", "seg_b"]


def test_a_run_whose_folder_mixes_settings_ends_with_a_note_not_an_error(tmp_path):
    from detect.cli.followup import follow_up

    segment(tmp_path, "seg_a")
    segment(tmp_path, "seg_b", settings={"input_size": "native"})
    after = follow_up(tmp_path, evaluate=True, report=False, class_map=None, protocol="coco", pooled=True)
    assert after.notes[0].startswith(f"not evaluated: {tmp_path}: its segments ran with different models or settings")
