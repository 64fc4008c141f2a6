"""`detect compare` on tracked runs: both sides' HOTA, MOTA and IDF1 per type, as `detect eval` gives
them, with the paired block bootstrap that AP uses."""

from __future__ import annotations

import json

import pytest
from helpers.comparisons import LEFT, PED, TRACKED_FRAMES, compare, tracked_folder
from helpers.results_folders import PERSON, dets, key, labels, segment_folder

from detect.cli import main
from detect.compare.comparison import Change, TrackingComparison
from detect.compare.terminal import tracking_lines

LONG, SECOND = 20, 1_000_000  # 20 frames a second apart: 10 blocks of 2 s, enough for a verdict


@pytest.mark.slow
def test_a_side_that_swaps_ids_scores_lower_outside_the_noise_and_as_eval_scores_it(tmp_path):
    a, b = tracked_folder(tmp_path, "a", None, LONG, SECOND), tracked_folder(tmp_path, "b", 2, LONG, SECOND)
    report = compare(a, b, tmp_path / "out")
    rows = {r["metric"]: r for r in report["tracking"] if r["name"] == "PEDESTRIAN"}
    assert list(rows) == ["HOTA", "MOTA", "IDF1"]
    assert rows["HOTA"]["a"] == rows["MOTA"]["a"] == rows["IDF1"]["a"] == pytest.approx(1.0)
    # B: both objects switch ids at frames 2, 4, ..., 18: 18 switches on 40 labels
    assert rows["MOTA"]["b"] == pytest.approx(1 - 18 / 40)
    for metric, row in rows.items():
        assert row["difference"] == pytest.approx(row["b"] - row["a"]) and row["difference"] < 0, metric
        assert row["high"] < 0 and row["verdict"] == "A better", metric
    for side, results in (("a", a), ("b", b)):  # the same numbers `detect eval` writes
        assert main(["eval", str(results), "--quiet"]) == 0
        scores = json.loads((results / "seg_eval" / "eval.json").read_text())["tracking_level_2"]["PEDESTRIAN"]
        assert (rows["HOTA"][side], rows["MOTA"][side], rows["IDF1"][side]) == pytest.approx(
            (scores["hota"], scores["mota"], scores["idf1"]), abs=1e-9)
    page = (tmp_path / "out" / "compare.html").read_text()
    assert "<h2>Tracking</h2>" in page and "IDF1" in page


def test_identical_tracks_differ_by_nothing_in_every_resample(tmp_path):
    a = tracked_folder(tmp_path, "a", 3, LONG, SECOND)
    report = compare(a, a, tmp_path / "out")
    for row in report["tracking"]:
        assert row["difference"] == row["low"] == row["high"] == 0.0 and row["verdict"] == "within noise"


def test_an_untracked_side_is_a_note_and_no_tracking_rows(tmp_path, capsys):
    a = tracked_folder(tmp_path, "a", None)
    images = {key(i): (labels((LEFT, PED, 1)), dets((LEFT, 0.9, PERSON))) for i in range(TRACKED_FRAMES)}
    b = segment_folder(tmp_path / "b", images, knows=[PERSON]).parent
    report = compare(a, b, tmp_path / "out")
    assert "tracking" not in report
    assert ("detect: note: B has no track ids (one timestamp, --no-track, or a run from before tracking: "
            "`detect track`): no tracking comparison") in (
        capsys.readouterr().err)


def test_without_resamples_the_values_have_no_interval_and_no_verdict(tmp_path):
    a = tracked_folder(tmp_path, "a", None, LONG, SECOND)
    b = tracked_folder(tmp_path, "b", 1, LONG, SECOND)
    report = compare(a, b, tmp_path / "out", "--bootstrap", "0")
    assert {(r["low"], r["high"], r["verdict"]) for r in report["tracking"]} == {(None, None, "-")}


def test_the_same_swaps_in_half_a_second_of_video_get_no_verdict(tmp_path):
    """Five frames at 10 Hz are one block: B's swaps are measured, but one block is too little
    data for a better/worse verdict (resampling single frames called it "A better")."""
    a, b = tracked_folder(tmp_path, "a", None, frames=5), tracked_folder(tmp_path, "b", 1, frames=5)
    report = compare(a, b, tmp_path / "out")
    assert report["bootstrap"]["blocks"] == 1
    for row in report["tracking"]:
        assert row["difference"] < 0 and (row["low"], row["high"]) == (None, None), row["metric"]
        assert row["verdict"] == "too little data (1 block)", row["metric"]


def test_the_terminal_table_lines():
    rows = [TrackingComparison("PEDESTRIAN", "MOTA", Change(1.0, 0.5833333, -0.5, -0.3, 12)),
            TrackingComparison("PEDESTRIAN", "HOTA", Change(1.0, 0.75, -0.5, -0.1, 9)),
            TrackingComparison("VEHICLE", "IDF1", Change(0.5, 0.5, None, None, 12))]
    assert tracking_lines(rows) == [
        "tracking (track ids against the labels' object ids; the same resamples):",
        "type        metric       A       B   B - A  95% interval      verdict",
        "PEDESTRIAN    MOTA   1.000   0.583  -0.417  [-0.500, -0.300]  A better",
        "PEDESTRIAN    HOTA   1.000   0.750  -0.250  [-0.500, -0.100]  too little data (9 blocks)",
        "VEHICLE       IDF1   0.500   0.500  +0.000  -                 -"]
    assert tracking_lines([]) == []
