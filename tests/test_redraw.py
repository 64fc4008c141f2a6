"""`detect redraw`: a run redrawn at a new threshold equals a fresh run at it (frames, animations,
table, eval), without the model; it refuses a source file gone or changed, a busy segment, and
`--resume` with a new threshold names it."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT, TINY_V2

from detect.cli import main
from detect.results.layout import SegmentLock


def segment(source, model, out, *flags) -> int:
    return main(["segment", str(source), "--model", str(model), "--out", str(out), "--quiet", "--mp4", *flags])


PLOTS = ("pr_curves.png", "thresholds.png", "range_bands.png")  # the evaluation's


def outputs(seg, plots: bool = False) -> dict[str, bytes]:
    """Every file a run draws or tabulates, by relative path (the manifest, eval and pages aside;
    the evaluation's plots when asked). tracking.parquet and images.parquet are eval's, as eval.json:
    the tracks and the per-image counts follow the threshold, so a redraw with --no-eval leaves the old ones."""
    files = sorted(p for p in seg.rglob("*") if p.is_file() and not {".detect", "report"} & set(p.parts)
                   and p.suffix in (".png", ".jpg", ".gif", ".mp4", ".parquet")
                   and p.name not in ("tracking.parquet", "images.parquet")
                   and (plots or p.name not in PLOTS))
    return {str(p.relative_to(seg)): p.read_bytes() for p in files}


def scores(seg) -> dict:
    evaluation = json.loads((seg / "eval.json").read_text())
    evaluation.pop("computed_from", None)
    return evaluation


# Every test here redraws a run made for it (a full pipeline, twice): `make test`, not `make test-fast`.
pytestmark = pytest.mark.slow


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
    assert " ".join(line.strip() for line in out.splitlines()).startswith(
        f"{TINY_SEGMENT}: 15 images redrawn at 0.6 (frames, GIFs, MP4s, mosaic) in ")
    assert " ".join(line.strip() for line in err.splitlines()[:2]).startswith(f"detect: redrawing {low} ...")
    # wrapped under 100 characters, as every summary (a path outside the working directory stays whole)
    assert len(out.splitlines()) > 2 and max(len(line) for line in out.splitlines() if not line.startswith("report: ")) < 100
    redrawn = outputs(low, plots=True)
    assert sorted(redrawn) == sorted(outputs(fresh, plots=True))
    for name, data in outputs(fresh, plots=True).items():
        assert redrawn[name] == data, f"{name} differs from a fresh run's"
    assert scores(low) == scores(fresh)
    manifest = json.loads((low / "manifest.json").read_text())
    assert manifest["settings"]["draw"]["threshold"] == 0.6 and manifest["status"] == "complete"
    assert manifest["redraw"]["threshold"] == 0.6 and manifest["redraw"]["images"] == 15
    fresh_counts = json.loads((fresh / "manifest.json").read_text())["counts"]
    assert manifest["counts"] == fresh_counts  # the boxes drawn at 0.6, as the run index counts them
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
    assert capsys.readouterr().out.startswith(f"{TINY_SEGMENT}: 15 images redrawn at 0.6 (")
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

    monkeypatch.setattr(redraw, "redraw_pixels", crash)  # the pixels stage, as the command calls it
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


def edit_manifest(seg, **changes) -> None:
    manifest = json.loads((seg / "manifest.json").read_text())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        place = manifest
        for part in path:
            place = place[part]
        place[last] = value
    (seg / "manifest.json").write_text(json.dumps(manifest))


def redraw_error(seg, capsys, *flags) -> str:
    assert main(["redraw", str(seg), "--no-eval", "--no-report", "--quiet", *flags]) != 0
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_a_folder_detect_did_not_write_or_a_run_that_did_not_finish_is_refused(low, capsys):
    edit_manifest(low, status="failed")
    assert redraw_error(low, capsys) == (f"detect: error: {low}: the run did not finish (status failed); finish it "
                                         f"with --resume before redrawing")
    (low / ".detect" / "settings.json").unlink()
    assert redraw_error(low, capsys) == (f"detect: error: {low}: not written by detect (no .detect/settings.json); "
                                         f"nothing to redraw")


def test_a_manifest_without_source_or_settings_and_a_folder_without_journal_are_refused(low, capsys):
    edit_manifest(low, settings__draw="?")
    assert redraw_error(low, capsys) == (f"detect: error: {low / 'manifest.json'}: records no drawing settings; "
                                         f"cannot redraw")
    edit_manifest(low, input__path=None)
    assert redraw_error(low, capsys) == f"detect: error: {low / 'manifest.json'}: names no source file; cannot redraw"
    edit_manifest(low, input__path=str(TINY_V2), settings__draw={"threshold": 0.2})
    (low / ".detect" / "journal.jsonl").unlink()
    assert redraw_error(low, capsys) == (f"detect: error: {low}: no journal of the frames the run finished "
                                         f"(.detect/journal.jsonl); cannot redraw")


def test_a_manifest_whose_settings_cannot_be_read_back_is_refused(low, capsys):
    edit_manifest(low, settings__gif_width="wide")
    assert redraw_error(low, capsys).startswith(f"detect: error: {low / 'manifest.json'}: its settings cannot be "
                                                f"read back (")


def test_a_source_that_is_now_a_folder_or_another_segment_is_refused(low, tmp_path, real_frame_path, capsys):
    edit_manifest(low, input__path=str(tmp_path))
    assert redraw_error(low, capsys) == (f"detect: error: {low}: cannot redraw: its source file {tmp_path} is no "
                                         f"longer a file")
    edit_manifest(low, input__path=str(real_frame_path), input__fingerprint=None)
    assert redraw_error(low, capsys) == (f"detect: error: {low}: cannot redraw: its source file {real_frame_path} "
                                         f"has changed since the run (it holds segment {REAL_SEGMENT})")


def test_an_unfinished_redraw_is_named_when_a_resume_is_asked():
    from pathlib import Path

    from detect.engine.lifecycle import resume_refusal
    seg = Path("out/seg")
    assert resume_refusal(seg, {"draw_threshold": 0.6, "redraw": "unfinished"}, {"draw_threshold": 0.6}) == (
        "out/seg: a redraw of it did not finish; `detect redraw out/seg` finishes it, or use --overwrite to run the "
        "model again")
    assert resume_refusal(seg, {"draw_threshold": 0.6, "draw": "auto"}, {"draw_threshold": 0.5, "draw": "errors"}) == (
        "out/seg was drawn with other settings (draw 'auto' -> 'errors'; draw_threshold 0.6 -> 0.5); `detect redraw "
        "out/seg --draw errors --threshold 0.5` redraws it without the model; use --overwrite to run the model again")


def test_source_problems_read_as_the_end_of_a_sentence(tmp_path):
    from detect.waymo.source_check import SourceFingerprint, source_problem, take_fingerprint
    path = tmp_path / "seg.parquet"
    path.write_bytes(b"x" * (3 << 20))
    recorded = take_fingerprint(str(path))
    assert recorded is not None and source_problem(str(path), recorded) is None
    assert SourceFingerprint.from_json(recorded.to_json()) == recorded
    assert SourceFingerprint.from_json({"size": True, "sampled_sha256": "0" * 64}) is None
    middle = bytearray(path.read_bytes())
    middle[3 << 19] = ord("y")  # the middle is not sampled: a check, not a proof
    path.write_bytes(bytes(middle))
    assert source_problem(str(path), recorded) is None
    path.write_bytes(b"y" + bytes(middle[1:]))
    assert source_problem(str(path), recorded) == "has changed since the run (same size, other bytes)"
    assert source_problem(str(path), None) is None
    assert source_problem("nosuch://bucket/seg.parquet", recorded) == "cannot be reached"


def test_a_redraw_keeps_the_tracker_detect_track_set_unless_the_threshold_changes(low, capsys):
    assert main(["track", str(low), "--threshold", "0.9", "--lost-seconds", "2"]) == 0
    params = json.loads((low / "manifest.json").read_text())["tracking"]["params"]
    assert params["high_score"] == 0.9 and params["lost_seconds"] == 2
    assert main(["redraw", str(low), "--no-eval", "--no-report", "--quiet"]) == 0
    assert json.loads((low / "manifest.json").read_text())["tracking"]["params"] == params
    assert main(["redraw", str(low), "--threshold", "0.6", "--no-eval", "--no-report", "--quiet"]) == 0
    params = json.loads((low / "manifest.json").read_text())["tracking"]["params"]
    assert params["high_score"] == 0.6 and params["lost_seconds"] == 2  # the lost buffer kept


def test_errors_asked_of_a_run_without_labels_are_refused(low, capsys):
    edit_manifest(low, input__labels=None)
    assert redraw_error(low, capsys, "--draw", "errors") == (f"detect: error: {low}: --draw errors asks for labels, "
                                                             f"but the run had none; cannot redraw")


def test_in_a_run_folder_a_segment_that_cannot_be_redrawn_is_left_out_with_a_note(runs, tmp_path, capsys):
    run = tmp_path / "run"
    for name in ("a", "b"):
        shutil.copytree(runs[0], run / name)
    with SegmentLock(run / "b"):
        assert main(["redraw", str(run), "--threshold", "0.6", "--no-eval", "--no-report"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith(f"{TINY_SEGMENT}: 15 images redrawn at 0.6 (") and out.count("redrawn") == 1  # a only
    assert err.splitlines()[-1].startswith(f"detect: note: {run / 'b'} is being written by another detect process")
    assert err.splitlines()[-1].endswith("; left out")
