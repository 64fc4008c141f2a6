"""The report's parts on tiny crafted inputs: which images a segment processed, boxes per image,
the timeline plot, the spread of the thumbnails, and the index's model and threshold columns."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from helpers.plots import misplaced_texts

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult
from detect.report.charts import stages_figure, timeline_figure
from detect.report.data import MIN_GAP_FRAMES, SegmentData, load, spread_busiest
from detect.report.pages import index_page
from detect.results.detections_table import DetectionTable
from detect.results.journal import Journal
from detect.results.results_folder import Manifest
from detect.results.results_tables import RowBudget
from detect.results.segment_view import SegmentView

SEGMENT = "seg_0000"
T0 = 1_600_000_000_000_000


def detections(rows: list[tuple[str, int, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["camera", "timestamp", "label", "score"])


def segment(rows: list[tuple[str, int, str, float]], images: set[tuple[str, int]]) -> SegmentData:
    keys = frozenset(FrameKey(SEGMENT, ts, CameraName[camera]) for camera, ts in images)
    view = SegmentView(Path("unused"), Manifest.from_json({}, Path("unused")), DetectionTable.empty(Path("unused")), keys,
                       RowBudget(len(keys)))
    return SegmentData(view, detections(rows), 0.5, None)


def crafted() -> SegmentData:
    """FRONT: 3 frames, the middle one with nothing drawn (one box below the threshold); SIDE_LEFT: 1 frame."""
    rows = [("FRONT", T0, "car", 0.9), ("FRONT", T0, "car", 0.8), ("FRONT", T0, "person", 0.7),
            ("FRONT", T0 + 100_000, "car", 0.2),
            ("FRONT", T0 + 200_000, "person", 0.6),
            ("SIDE_LEFT", T0 + 100_000, "car", 0.95)]
    images = {("FRONT", T0), ("FRONT", T0 + 100_000), ("FRONT", T0 + 200_000), ("SIDE_LEFT", T0 + 100_000)}
    return segment(rows, images)


def test_every_processed_image_is_a_row_with_zeros_where_nothing_was_drawn():
    table = crafted().boxes_per_image()
    assert list(table.columns) == ["car", "person"]  # most drawn boxes first
    assert table.to_dict("index") == {
        ("FRONT", T0): {"car": 2, "person": 1},
        ("FRONT", T0 + 100_000): {"car": 0, "person": 0},
        ("FRONT", T0 + 200_000): {"car": 0, "person": 1},
        ("SIDE_LEFT", T0 + 100_000): {"car": 1, "person": 0},
    }


def test_the_journal_knows_the_images_without_boxes(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"segment_context_name": SEGMENT}))
    empty = Detections.empty()
    with Journal(tmp_path) as journal:
        for ts in (T0, T0 + 100_000):
            journal.append(FrameResult(FrameKey(SEGMENT, ts, CameraName.FRONT), 96, 64, empty))
    data = load(tmp_path)  # no table, no frames: only the journal says these two images were done
    assert data.images == {FrameKey(SEGMENT, T0, CameraName.FRONT), FrameKey(SEGMENT, T0 + 100_000, CameraName.FRONT)}
    assert data.timestamps == [T0, T0 + 100_000] and data.frame_count("FRONT") == 2 and data.frame_count("SIDE_LEFT") == 0


def test_the_timeline_has_a_point_per_frame_integer_ticks_and_its_legend_above_the_data():
    figure = timeline_figure(crafted().boxes_per_image())
    front, side = figure.axes
    totals = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in front.get_lines()}
    assert totals["all classes"] == ([0.0, 0.1, 0.2], [3, 0, 1])
    assert totals["car"] == ([0.0, 0.1, 0.2], [2, 0, 0])
    assert [line.get_label() for line in side.get_lines()] == ["all classes", "car"]  # no flat line for a class it never drew
    figure.canvas.draw()
    for axes in (front, side):
        ticks = [t for t in axes.get_yticks() if axes.get_ylim()[0] <= t <= axes.get_ylim()[1]]
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks
    legend = figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["all classes", "car", "person"]
    assert legend.get_window_extent().y0 >= front.get_window_extent().y1  # above the top panel, not over it
    assert misplaced_texts(figure) == []  # the camera names and the legend within the picture, off the panels


def test_the_time_per_step_chart_makes_room_for_its_longest_step_name():
    """The chart's left margin is measured from its step names, a stage we do not know by its own."""
    for steps in ({"detect": 250.0, "decode": 80.0}, {"detect": 250.0, "a_stage_named_by_a_newer_version_of_detect": 4.0}):
        assert misplaced_texts(stages_figure(steps)) == []


def test_thumbnails_are_spread_over_the_segment_busiest_first():
    timestamps = [T0 + i * 100_000 for i in range(100)]
    boxes = {("FRONT", ts): 5 for ts in timestamps}
    boxes |= {("FRONT", timestamps[i]): n for i, n in ((10, 20), (11, 21), (12, 22), (13, 21), (14, 20), (80, 10))}
    chosen = spread_busiest(boxes, timestamps, 3)
    frames = [timestamps.index(ts) for _, ts in chosen]
    assert frames == [12, 80, 45]  # the peak once, the busy moment far from it, then the first 5-box frame 33 away from both
    assert spread_busiest(boxes, timestamps, 1) == [("FRONT", timestamps[12])]


def test_other_cameras_fill_in_but_never_near_duplicates_of_one_camera():
    timestamps = [T0 + i * 100_000 for i in range(12)]
    boxes = {("FRONT", ts): 9 - i % 2 for i, ts in enumerate(timestamps)} | {("SIDE_LEFT", timestamps[3]): 2}
    chosen = spread_busiest(boxes, timestamps, 8)
    assert MIN_GAP_FRAMES == 10
    # FRONT's 12 frames give two picks 10 frames apart; SIDE_LEFT's view of the same moments fills in.
    assert chosen == [("FRONT", timestamps[0]), ("FRONT", timestamps[10]), ("SIDE_LEFT", timestamps[3])]
    one_frame = {(camera.name, T0): int(camera) for camera in CameraName}
    assert [c for c, _ in spread_busiest(one_frame, [T0], 8)] == ["SIDE_RIGHT", "SIDE_LEFT", "FRONT_RIGHT", "FRONT_LEFT", "FRONT"]
    assert spread_busiest({("FRONT", T0): 0}, [T0], 8) == []  # an image without boxes is no "busiest" frame


def test_the_index_shows_each_segments_model_and_drawing_threshold(tmp_path):
    def manifest(name, model, threshold):
        directory = tmp_path / name
        directory.mkdir()
        content = {"segment_context_name": name, "status": "complete", "model": model,
                   "settings": {"draw": {"threshold": threshold}}}
        (directory / "manifest.json").write_text(json.dumps(content))
        return directory, Manifest.from_json(content, directory)

    segments = [manifest("a", {"short_name": "CenterNet MobileNetV3", "description": "CenterNet <long>"}, 0.3),
                manifest("b", {"short_name": None, "description": "stub model"}, "0.3"),
                manifest("c", "not a model", True)]
    html = index_page(tmp_path, segments, []).read_text()
    assert "<th>threshold</th><th>AP50</th><th>images/s</th><th>model</th>" in html
    assert "<td>0.3</td><td>-</td><td>-</td><td><span title='CenterNet &lt;long&gt;'>CenterNet MobileNetV3</span></td>" in html
    # a threshold that is not a number: no threshold, and no count of the boxes drawn at it
    assert "<td>-</td><td>-</td><td>-</td><td>-</td><td><span title='stub model'>stub model</span></td>" in html
    assert "<td>-</td></tr>" in html
    assert "<h1>detect run: 3 segments</h1>" in html and "<title>detect: 3 segments</title>" in html
    one = index_page(tmp_path, segments[:1], []).read_text()
    assert "<h1>detect run: 1 segment</h1>" in one and "<title>detect: 1 segment</title>" in one


def test_a_camera_with_images_but_no_boxes_still_has_its_panel():
    data = segment([("FRONT", T0, "car", 0.9)], {("FRONT", T0), ("FRONT", T0 + 100_000), ("SIDE_RIGHT", T0),
                                                 ("SIDE_RIGHT", T0 + 100_000)})
    figure = timeline_figure(data.boxes_per_image())
    side = figure.axes[1]
    assert side.get_ylabel() == "SIDE_RIGHT"
    assert [(line.get_label(), list(line.get_ydata())) for line in side.get_lines()] == [("all classes", [0, 0])]
    assert np.allclose(side.get_lines()[0].get_xdata(), [0.0, 0.1])


def test_the_evaluation_shows_tracking_scores_when_the_run_was_tracked_and_escapes_them(tmp_path):
    from detect.report.evaluation import evaluation_section
    from detect.results.eval_record import EvalRecord

    report = {"tracking_level_2": {"PEDESTRIAN": {"hota": 0.4161, "deta": 0.2, "assa": 0.855, "mota": 0.217,
                                                  "idf1": 0.386, "id_switches": 3, "fragmentations": 1,
                                                  "mostly_tracked": 11, "objects": 54},
                                   "<b>X</b>": {"hota": "<i>"}}}
    html = evaluation_section(EvalRecord.from_json(report), tmp_path)
    assert "<h3>Tracking</h3>" in html and "<td>PEDESTRIAN</td><td>0.416</td>" in html and "<td>11 / 54</td>" in html
    assert "<b>X</b>" not in html and "<i>" not in html
    assert "<h3>Tracking</h3>" not in evaluation_section(EvalRecord.from_json({}), tmp_path)
