"""`detect redraw`: a run redrawn at a new threshold equals a fresh run at it (frames, animations,
table, eval), without the model; it refuses a source file gone or changed, a busy segment, and
`--resume` with a new threshold names it."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import TINY_SEGMENT

from detect.cli import main
from detect.sinks.layout import SegmentLock


def segment(source, model, out, *flags) -> int:
    return main(["segment", str(source), "--model", str(model), "--out", str(out), "--quiet", "--mp4", *flags])


PLOTS = ("pr_curves.png", "thresholds.png")  # the evaluation's


def outputs(seg, plots: bool = False) -> dict[str, bytes]:
    """Every file a run draws or tabulates, by relative path (the manifest, eval and pages aside;
    the evaluation's plots when asked)."""
    files = sorted(p for p in seg.rglob("*") if p.is_file() and not {".detect", "report"} & set(p.parts)
                   and p.suffix in (".png", ".jpg", ".gif", ".mp4", ".parquet") and (plots or p.name not in PLOTS))
    return {str(p.relative_to(seg)): p.read_bytes() for p in files}


def scores(seg) -> dict:
    evaluation = json.loads((seg / "eval.json").read_text())
    evaluation.pop("computed_from", None)
    return evaluation


@pytest.fixture(scope="module")
def runs(tiny_v2_path, stub_dynamic_dir, tmp_path_factory):
    """A run at 0.2, and a fresh run at 0.6 to compare a redraw with."""
    root = tmp_path_factory.mktemp("redraw")
    assert segment(tiny_v2_path, stub_dynamic_dir, root / "low", "--threshold", "0.2") == 0
    assert segment(tiny_v2_path, stub_dynamic_dir, root / "high", "--threshold", "0.6") == 0
    return root / "low" / TINY_SEGMENT, root / "high" / TINY_SEGMENT


@pytest.fixture
def low(runs, tmp_path):
    """A fresh copy of the run at 0.2 for each test (it redraws or damages it)."""
    return shutil.copytree(runs[0], tmp_path / "out" / TINY_SEGMENT)


def test_a_redraw_at_a_new_threshold_writes_what_a_fresh_run_at_it_writes(runs, low, capsys):
    fresh = runs[1]
    before = outputs(low)
    assert before.keys() == outputs(fresh).keys() and before != outputs(fresh)
    assert main(["redraw", str(low), "--threshold", "0.6"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith(f"{TINY_SEGMENT}: 15 image(s) redrawn at threshold 0.6 (frames, GIFs, MP4s")
    assert err.splitlines()[0] == f"detect: redrawing {low} ..."
    redrawn = outputs(low, plots=True)
    assert sorted(redrawn) == sorted(outputs(fresh, plots=True))
    for name, data in outputs(fresh, plots=True).items():
        assert redrawn[name] == data, f"{name} differs from a fresh run's"
    assert scores(low) == scores(fresh)
    manifest = json.loads((low / "manifest.json").read_text())
    assert manifest["settings"]["draw"]["threshold"] == 0.6 and manifest["status"] == "complete"
    assert manifest["redraw"]["threshold"] == 0.6 and manifest["redraw"]["images"] == 15
    assert (low / "report.html").is_file()


def test_a_resume_at_the_redrawn_threshold_goes_on_and_at_another_names_detect_redraw(
        low, tiny_v2_path, stub_dynamic_dir, capsys):
    assert main(["redraw", str(low), "--threshold", "0.6", "--no-eval", "--no-report", "--quiet"]) == 0
    assert segment(tiny_v2_path, stub_dynamic_dir, low.parent, "--threshold", "0.6", "--resume") == 0
    capsys.readouterr()
    assert segment(tiny_v2_path, stub_dynamic_dir, low.parent, "--threshold", "0.4", "--resume") != 0
    err = capsys.readouterr().err.strip()
    assert err == (f"detect: error: {low} was drawn with other settings (draw_threshold 0.6 -> 0.4); "
                   f"`detect redraw {low} --threshold 0.4` redraws it without the model; "
                   f"use --overwrite to run the model again")


def test_a_run_folder_redraws_each_segment(runs, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(runs[0], run / TINY_SEGMENT)
    assert main(["redraw", str(run), "--threshold", "0.6", "--no-eval", "--no-report"]) == 0
    assert capsys.readouterr().out.startswith(f"{TINY_SEGMENT}: 15 image(s) redrawn at threshold 0.6")
    assert outputs(run / TINY_SEGMENT) == outputs(runs[1])


def test_a_source_file_gone_is_one_line(low, tmp_path, capsys):
    moved = tmp_path / "src" / "camera_image" / f"{TINY_SEGMENT}.parquet"
    manifest = json.loads((low / "manifest.json").read_text())
    manifest["input"]["path"] = str(moved)
    (low / "manifest.json").write_text(json.dumps(manifest))
    before = outputs(low)
    assert main(["redraw", str(low), "--threshold", "0.6"]) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"detect: error: {low}: cannot redraw: its source file {moved} is gone"
    assert outputs(low) == before


def test_a_source_file_changed_since_the_run_is_one_line(low, tiny_v2_path, tmp_path, capsys):
    copy = tmp_path / "src" / "camera_image" / f"{TINY_SEGMENT}.parquet"
    copy.parent.mkdir(parents=True)
    shutil.copy(tiny_v2_path, copy)
    manifest = json.loads((low / "manifest.json").read_text())
    manifest["input"]["path"] = str(copy)
    (low / "manifest.json").write_text(json.dumps(manifest))
    with open(copy, "ab") as handle:
        handle.write(b"\0" * 10)
    assert main(["redraw", str(low)]) != 0
    size = manifest["input"]["fingerprint"]["size"]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"detect: error: {low}: cannot redraw: its source file {copy} has changed since the run "
        f"({size:,} bytes then, {size + 10:,} now)")
    with open(copy, "r+b") as handle:  # same size, other bytes
        handle.truncate(size)
        handle.seek(size - 1)
        handle.write(b"\1")
    assert main(["redraw", str(low)]) != 0
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("has changed since the run (same size, other bytes)")


def test_a_segment_another_process_writes_is_left_alone(low, capsys):
    before = outputs(low)
    with SegmentLock(low):
        assert main(["redraw", str(low), "--threshold", "0.6"]) != 0
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"detect: error: {low} is being written by another detect process (pid ")
    assert outputs(low) == before


def test_a_crashed_redraw_says_redrawing_and_a_second_one_finishes_it(runs, low, monkeypatch, capsys):
    import detect.engine.redraw as redraw

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(redraw, "_redraw_pixels", crash)
    with pytest.raises(KeyboardInterrupt):
        redraw.redraw_segment(low, redraw.RedrawRequest(threshold=0.6))
    manifest = json.loads((low / "manifest.json").read_text())
    assert manifest["status"] == "redrawing" and manifest["settings"]["draw"]["threshold"] == 0.6
    settings = json.loads((low / ".detect" / "settings.json").read_text())
    assert settings["redraw"] == "unfinished"
    monkeypatch.undo()
    assert main(["redraw", str(low), "--no-eval", "--no-report", "--quiet"]) == 0
    assert outputs(low) == outputs(runs[1])
    assert json.loads((low / "manifest.json").read_text())["status"] == "complete"
    assert "redraw" not in json.loads((low / ".detect" / "settings.json").read_text())
