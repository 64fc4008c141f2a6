"""A run folder never mixes settings, labels of another segment are named as
such, `--bootstrap` is bounded like the other sizing flags, and an interrupt advises `--resume`
only to the commands that take it. Each ends with correct output or one line, no "unexpected"."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers.cli import run_cli
from helpers.paths import TINY_SEGMENT, TINY_V2_DIR

from detect.cli import main
from detect.core.signals import Terminated
from detect.waymo.schema import SEGMENT, TIMESTAMP

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


@pytest.mark.parametrize("replicates", ["100001", "100000000", "1000000000000"])
def test_a_bootstrap_beyond_a_hundred_thousand_is_a_usage_error_naming_the_range(tmp_path, replicates):
    code, _, err = run_cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c"),
                            "--bootstrap", replicates])
    assert code == 2
    assert f"argument --bootstrap: must be between 0 and 100,000, got {replicates}" in err
    assert "unexpected" not in err
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("command", ["compare", "model"])
@pytest.mark.parametrize(("stop", "code", "line"), [
    (KeyboardInterrupt, 130, "detect: interrupted; rerun the command to start again\n"),
    (Terminated, 143, "detect: terminated (SIGTERM); rerun the command to start again\n"),
])
def test_an_interrupted_command_without_resume_does_not_advise_resume(tmp_path, monkeypatch, command, stop, code,
                                                                      line):
    def stopped(*_args: object) -> int:
        raise stop()

    module = "detect.cli.compare" if command == "compare" else "detect.cli.info_and_model"
    monkeypatch.setattr(f"{module}.cmd_{command}", stopped)
    argv = (["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c")]
            if command == "compare" else ["model", str(tmp_path)])
    assert run_cli(argv) == (code, "", line)


def test_an_interrupted_run_still_advises_resume(tmp_path, monkeypatch):
    def stopped(*_args: object) -> int:
        raise KeyboardInterrupt()

    monkeypatch.setattr("detect.cli.segment_and_run.cmd_run", stopped)
    assert run_cli(["run", str(tmp_path), "--out", str(tmp_path / "o")]) == (
        130, "", "detect: interrupted; rerun with --resume to continue where it stopped\n")


def run_args(segment: Path, model: Path, out: Path, *extra: str) -> list[str]:
    return ["run", str(segment), "--model", str(model), "--out", str(out), "--no-eval", "--no-report",
            "--no-gif", *extra]


@pytest.mark.slow
@pytest.mark.parametrize(("first", "again", "change"), [
    (("--tile", "128"), ("--tile", "256"), "tile {'edge_px': 8, 'nms_iou': 0.5, 'overlap': 0.2, 'size': 128} -> "
                                           "{'size': 256, 'overlap': 0.2, 'nms_iou': 0.5, 'edge_px': 8}"),
    ((), ("--threshold", "0.3"), "draw_threshold 0.5 -> 0.3"),
    ((), ("--classes", "person"), "classes None -> [1]"),
])
def test_a_completed_segment_with_other_settings_refuses_the_run_before_the_model_loads(
        tiny_v2_path, stub_dynamic_dir, tmp_path, first, again, change):
    """A rerun asking other settings of a finished segment is a usage error of the whole run (exit 2,
    one line, decided before the disk estimate and the model): no segment is marked failed for it and
    nothing on disk changes; --overwrite redoes it, and then the same settings skip it."""
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, *first))[0] == 0
    segment_dir = tmp_path / TINY_SEGMENT
    before = {p: p.read_bytes() for p in sorted((tmp_path).rglob("*")) if p.is_file()}
    out, err = io.StringIO(), io.StringIO()
    code = main(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, *again), stdout=out, stderr=err)
    if change.startswith("draw_threshold"):  # the drawing alone: `detect redraw` redraws it without the model
        refusal = (f"{segment_dir} was drawn with other settings ({change}); `detect redraw {segment_dir} --threshold "
                   f"0.3` redraws it without the model; use --overwrite to run the model again")
    else:
        refusal = f"{segment_dir} was written with other settings ({change}); use --overwrite to start again"
    assert (code, out.getvalue(), err.getvalue()) == (2, "", f"detect: error: {refusal}\n")
    assert {p: p.read_bytes() for p in sorted((tmp_path).rglob("*")) if p.is_file()} == before  # run.json too
    run_file = json.loads((tmp_path / "run.json").read_text())
    assert run_file["this_run"]["failed"] == 0
    assert [s["status"] for s in run_file["segments"]] == ["done"]
    # Refused again on a rerun; redone with --overwrite; then the same settings skip it.
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, *again))[0] == 2
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, *again, "--overwrite"))[0] == 0
    code, out, err = run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, *again))
    assert (code, err) == (0, "")


def test_a_completed_segment_rerun_with_the_same_settings_is_still_skipped(tiny_v2_path, stub_dynamic_dir, tmp_path):
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, "--tile", "128"))[0] == 0
    code, out, err = run_cli(run_args(tiny_v2_path, stub_dynamic_dir, tmp_path, "--tile", "128"))
    assert (code, err) == (0, "")
    assert "already complete" in out
    assert json.loads((tmp_path / "run.json").read_text())["this_run"]["skipped"] == 1


def relabeled(tmp_path: Path, *, segment: str = TINY_SEGMENT, shift: int = 0) -> Path:
    """The tiny segment's camera_box file, its rows moved to `segment` and `shift` microseconds later."""
    table = pq.read_table(TINY_V2_DIR / "camera_box" / f"{TINY_SEGMENT}.parquet")
    table = table.set_column(table.schema.get_field_index(SEGMENT), SEGMENT,
                             pa.array([segment] * len(table), table.schema.field(SEGMENT).type))
    stamps = pc.add(table.column(TIMESTAMP), pa.scalar(shift, table.schema.field(TIMESTAMP).type))
    table = table.set_column(table.schema.get_field_index(TIMESTAMP), TIMESTAMP, stamps)
    path = tmp_path / "labels" / f"{segment}.parquet"
    path.parent.mkdir(exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.fixture
def results(tiny_v2_path, stub_dynamic_dir, tmp_path) -> Path:
    out = tmp_path / "results"
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, out, "--quiet"))[0] == 0
    return out


@pytest.mark.slow
def test_eval_with_another_segments_labels_names_the_segment_they_hold(results, tmp_path):
    other = relabeled(tmp_path, segment="other_segment_0000")
    code, out, err = run_cli(["eval", str(results), "--gt", str(other)])
    assert (code, out) == (2, "")
    assert err == (f"detect: error: camera_box file {other} holds the labels of segment other_segment_0000, not of "
                   f"{TINY_SEGMENT}; name the segment's own labels with --gt PATH\n")
    assert not (results / TINY_SEGMENT / "eval.json").exists()


@pytest.mark.slow
def test_eval_with_labels_at_other_timestamps_says_so(results, tmp_path):
    shifted = relabeled(tmp_path, shift=1)
    code, out, err = run_cli(["eval", str(results), "--gt", str(shifted)])
    assert (code, out) == (2, "")
    assert err.startswith(f"detect: error: camera_box file {shifted} labels ")
    assert err.endswith(f"image(s) of segment {TINY_SEGMENT}, none of them one this run processed (other timestamps "
                        f"or cameras); name the segment's own labels with --gt PATH\n")
    assert "empty" not in err


@pytest.mark.slow
def test_compare_with_another_segments_labels_notes_it(results, tmp_path):
    other = relabeled(tmp_path, segment="other_segment_0000")
    code, out, err = run_cli(["compare", str(results), str(results), "--out", str(tmp_path / "c"), "--gt", str(other),
                              "--bootstrap", "10"])
    assert code == 0, err
    note = f"camera_box file {other} holds the labels of segment other_segment_0000, not of {TINY_SEGMENT}"
    assert f"A: {note}: agreement only for it" in out + err
    assert "no labels: agreement only" in out
    assert "unexpected" not in err


@pytest.mark.slow
def test_a_run_writes_nothing_in_home_outside_its_cache(tiny_v2_path, stub_dynamic_dir, tmp_path):
    """matplotlib and Keras keep their state under ~/.cache/detect, not ~/.config, ~/.cache/matplotlib or ~/.keras."""
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "MPLCONFIGDIR", "KERAS_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(Path(__file__).resolve().parents[1]), DETECT_RUNTIME="tensorflow")
    done = subprocess.run([sys.executable, "-m", "detect.cli", "segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir),
                           "--out", str(tmp_path / "out"), "--quiet"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out").is_dir()
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert all(w == ".cache" or w.startswith(".cache/detect") for w in written), written
