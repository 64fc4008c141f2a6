"""One finder for the segments of a results folder: `detect eval`, `detect report` and `detect gif`
see the same segments, at any depth up to a bound, never through a symlink."""

from __future__ import annotations

import io
import json

import pytest
from helpers.cli import without_status
from helpers.results_folders import NESTED, TOP, segment_with_frame

from detect.cli import main
from detect.core.errors import InputError
from detect.evaluate.segment_results import find_segments
from detect.results.run_folder import find_segment_folders


def test_eval_report_and_gif_find_segments_nested_two_levels_deep(tmp_path):
    run = tmp_path / "run"
    top, nested = segment_with_frame(run, TOP), segment_with_frame(run / "training" / "shard_1", NESTED)
    assert main(["eval", str(run), "--quiet"]) == 0
    assert json.loads((run / "eval.json").read_text())["segments"] == [TOP, NESTED]
    assert (nested / "eval.json").is_file()  # each segment's own numbers, the nested one too
    out = io.StringIO()
    assert main(["report", str(run)], stdout=out) == 0
    assert (nested / "report.html").is_file()
    assert "./training/shard_1/1000000000000000002_000_000_000_000/report.html" in (run / "index.html").read_text()
    out = io.StringIO()
    assert main(["gif", str(run), "--width", "48"], stdout=out) == 0
    assert out.getvalue().splitlines() == [str(top / "FRONT.gif"), str(nested / "FRONT.gif")]


def test_symlinked_segments_are_left_out_with_a_note_by_every_command(tmp_path):
    run = tmp_path / "run"
    segment_with_frame(run, TOP)
    elsewhere = segment_with_frame(tmp_path / "elsewhere", NESTED)
    (run / "deeper").mkdir()
    (run / "deeper" / "linked").symlink_to(elsewhere)
    note = f"detect: note: {run / 'deeper' / 'linked'}: a symlink, not followed; left out"
    for command, code in (("eval", 0), ("report", 0), ("gif", 1)):  # gif: a segment left out is exit 1, as a busy one
        err = io.StringIO()
        assert main([command, str(run)], stdout=io.StringIO(), stderr=err) == code, command
        assert without_status(err.getvalue()).splitlines() == [note], command
    assert json.loads((run / "eval.json").read_text())["segments"] == [TOP]
    assert not (elsewhere / "report.html").exists() and not (elsewhere / "mosaic.gif").exists()


def test_the_search_is_bounded_and_says_where_it_stopped(tmp_path):
    run = tmp_path / "run"
    deep = segment_with_frame(run / "a" / "b" / "c" / "d", TOP)  # 5 levels down
    with pytest.raises(InputError) as err:
        find_segments(run)
    assert str(err.value) == (f"{run}: no segment results here (no folder with a manifest.json up to 4 levels down; "
                              f"{run}: looked for segments 4 levels deep, no further)")
    assert find_segment_folders(run, max_depth=5).folders == [deep]
    for n in range(5):
        (run / f"empty_{n}").mkdir()
    found = find_segment_folders(run, max_depth=5, max_folders=3)
    assert (found.folders, found.skipped) == (
        [], [f"{run}: stopped looking for segments after 3 folders; give the run folder itself"])


def test_a_missing_folder_is_one_line_for_every_command(tmp_path):
    missing = tmp_path / "nope"
    for command in ("eval", "report", "gif"):
        err = io.StringIO()
        assert main([command, str(missing)], stderr=err) == 2
        assert without_status(err.getvalue()) == f"detect: error: {missing}: no such results directory\n", command

