"""The tracking section of a segment's page: the lifespans plot from detections.parquet's track ids,
and the ID switches of tracking.parquet as crops before and at the switch; nothing without tracks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.comparisons import TRACKED_FRAMES, tracked_folder
from helpers.results_folders import PERSON, dets, key, labels, segment_folder, with_frames
from PIL import Image

from detect.cli import main
from detect.report.track_plot import lifespans_figure
from detect.report.tracks_section import read_switches, read_tracks, tracks_section


@pytest.mark.slow
def test_a_tracked_and_evaluated_segment_shows_its_lifespans_and_its_switches(tmp_path):
    segment = tracked_folder(tmp_path, "b", 4) / "seg_eval"  # ids swap at frames 4 and 8
    with_frames(segment, [key(i) for i in range(TRACKED_FRAMES)])
    assert main(["eval", str(segment), "--quiet"]) == 0
    switches = read_switches(segment, "seg_eval")
    assert [(s.previous_id, s.track_id, s.after.what, s.after.timestamp - s.before.timestamp) for s in switches] == [
        (1, 2, "obj0", 100_000), (2, 1, "obj1", 100_000), (2, 1, "obj0", 100_000), (1, 2, "obj1", 100_000)]
    assert switches[0].before.xyxy == switches[0].after.xyxy == (100.0, 100.0, 200.0, 300.0)
    assert switches[0].caption(key(0).frame_timestamp_micros) == "PEDESTRIAN obj0, FRONT: #1 at 0.3 s, #2 at 0.4 s"
    assert main(["report", str(segment)]) == 0
    page = (segment / "report.html").read_text()
    assert "<h2 id='tracks'>Tracks</h2>" in page and "2 tracks (FRONT 2)" in page and "track_lifespans.png" in page
    assert "<h3>ID switches (the first 4 in time)</h3>" in page and "#1 at 0.3 s, #2 at 0.4 s" in page
    crops = sorted(p.name for p in (segment / "report").glob("error_switch_*.jpg"))
    assert crops == [f"error_switch_{side}_{n}.jpg" for side in ("after", "before") for n in range(4)]
    assert Image.open(segment / "report" / "track_lifespans.png").size[0] == 900


def test_an_untracked_segment_has_no_tracking_section(tmp_path):
    images = {key(i): (labels(((100, 100, 200, 300), 2, 1)), dets(((100, 100, 200, 300), 0.9, PERSON))) for i in range(3)}
    segment = segment_folder(tmp_path / "a", images, knows=[PERSON])
    assert read_tracks(segment) is None and read_switches(segment, "seg_eval") == []
    assert tracks_section(segment, "seg_eval", key(0).frame_timestamp_micros, tmp_path / "assets") == ""
    assert main(["report", str(segment)]) == 0
    assert ">Tracks</h2>" not in (segment / "report.html").read_text()


def test_the_plot_has_a_panel_per_camera_and_a_line_per_track():
    tracks = pd.DataFrame({"camera": ["FRONT"] * 4 + ["SIDE_LEFT"] * 2, "timestamp": [0, 100_000, 300_000, 0, 0, 100_000],
                           "label": ["car", "car", "car", "person", "car", "car"], "track_id": [1, 1, 1, 2, 3, 3]})
    figure = lifespans_figure(tracks, 0)
    axes = figure.axes
    assert [a.get_ylabel() for a in axes] == ["FRONT\n2 tracks", "SIDE_LEFT\n1 track"]
    assert [len(a.get_lines()) for a in axes] == [2, 1]
    short, long = axes[0].get_lines()  # tracks in order of their first box, then their last
    assert list(short.get_xdata()) == [0.0, 0.0] and list(long.get_xdata()) == [0.0, 0.3]  # track 1: 0 to 0.3 s
    assert list(long.get_ydata()) == [1, 1]
    assert len(axes[0].collections[0].get_offsets()) == 4  # a dot per tracked box
    with pytest.raises(ValueError, match="^no tracked boxes to plot$"):
        lifespans_figure(tracks.iloc[:0], 0)
    assert np.isfinite(axes[0].get_xlim()).all()


def test_a_switchs_two_tracks_are_named_as_the_frames_number_them_in_their_camera():
    """FRONT_LEFT's ids run 2, 7, 12 (unique in the segment); its pictures and the page read 1, 2, 3."""
    from detect.report.gallery import Example
    from detect.report.tracks_section import Switch

    before = Example("id switch", "PEDESTRIAN", "FRONT_LEFT", 1_000_000, (0, 0, 10, 10), None, None, "obj4")
    after = Example("id switch", "PEDESTRIAN", "FRONT_LEFT", 1_500_000, (0, 0, 10, 10), None, None, "obj4")
    switch = Switch(before, after, 7, 12)
    assert switch.numbers == (2, 3)
    assert switch.caption(0) == "PEDESTRIAN obj4, FRONT_LEFT: #2 at 1.0 s, #3 at 1.5 s"
