"""The top of the pages: the verdict per Waymo type, the tracking line, the table of contents, and
each picture shown once."""

from __future__ import annotations

from detect.report.charts import stages_figure
from detect.report.evaluation import evaluation_section
from detect.report.gallery import Outcome
from detect.report.headline import contents, headline, threshold_text, tracking_line, verdicts
from detect.report.pictures import Group, Picture, once
from detect.results.eval_record import EvalRecord

EVAL = {
    "threshold": 0.3,
    "levels": {"LEVEL_2": [
        {"name": "VEHICLE", "labels": 50, "ap50": 0.381, "true_positives": 17, "false_positives": 11},
        {"name": "PEDESTRIAN", "labels": 15, "ap50": 0.513, "true_positives": 8, "false_positives": 1},
        {"name": "SIGN", "labels": 0, "ap50": None, "true_positives": 0, "false_positives": 2},
        {"name": "CYCLIST", "labels": 1, "ap50": 0.0, "true_positives": 0, "false_positives": 0},
        {"name": "ALL", "labels": 66, "ap50": 0.3}]},
    "thresholds_level_2": {"VEHICLE": {"best": {"suggested": "0.274"}}},
}


def test_the_verdict_has_a_row_per_type_with_labels_and_names_those_without():
    shown, without = verdicts(EvalRecord.from_json(EVAL), {"VEHICLE": Outcome(17, 11, 33, 50)})
    assert [(v.name, v.labels, v.hits, v.false_alarms, v.missed, v.best_threshold) for v in shown] == [
        ("VEHICLE", 50, 17, 11, 33, "0.274"), ("PEDESTRIAN", 15, 8, 1, 7, None), ("CYCLIST", 1, 0, 0, 1, None)]
    assert without == ["SIGN"]
    assert [v.small_sample for v in shown] == [False, False, True]


def test_the_headline_shows_each_ap_with_its_labels_and_a_small_sample_note():
    html = headline(EvalRecord.from_json(EVAL), None, "5 images")
    assert "<td>VEHICLE</td><td>50</td><td>0.381</td><td>17</td><td>11</td><td>33</td><td>0.274</td>" in html
    assert "<td>CYCLIST</td><td>1*</td><td>0.000</td>" in html
    assert "* fewer than 10 labels: too few for the AP to mean much." in html
    assert "No labels of SIGN in the data: not scored." in html and "<td>SIGN</td>" not in html
    assert "at the drawing threshold 0.3;" in html and "Tracking" not in html
    assert "No evaluation" in headline(None, None, "5 images")


def test_a_tracked_run_gets_a_tracking_line():
    scores = {"VEHICLE": {"hota": 0.41234}, "PEDESTRIAN": {"hota": 0.35}}
    assert tracking_line(scores) == ("Tracking (HOTA, each camera's track ids against the labels' ids): "
                                     "VEHICLE 0.412, PEDESTRIAN 0.350")
    assert tracking_line({}) == ""
    assert tracking_line(scores) in headline(EvalRecord.from_json(EVAL), None, "x", scores)


def test_thresholds_read_as_the_command_line_takes_them():
    assert [threshold_text(v) for v in (0.3, 0.25, 1, "0.3", None, float("nan"))] == ["0.3", "0.25", "1", "-", "-", "-"]


def test_the_contents_link_each_section():
    assert contents([("pictures", "Pictures"), ("time", "Time")]) == (
        "<nav class='toc'>On this page: <a href='#pictures'>Pictures</a> · <a href='#time'>Time</a></nav>")
    assert contents([]) == ""


def test_a_picture_whose_images_were_shown_is_left_out_and_so_is_an_empty_group():
    front, side = ("FRONT", 1), ("SIDE_LEFT", 1)
    cameras = Group("Each camera", (Picture("f", frozenset({front})), Picture("s", frozenset({side}))))
    mosaic = Group("All cameras", (Picture("m", frozenset({front, side})),))
    thumbs = Group("Frames with the most boxes", (Picture("t", frozenset({front})),))
    kept = once([cameras, mosaic, thumbs])
    assert [(g.title, [p.html for p in g.pictures]) for g in kept] == [("Each camera", ["f", "s"])]
    # An animation shows time, which no still does: it stays beside the stills of its frames.
    animation = Group("All cameras", (Picture("a", frozenset({"animation mosaic"})),))
    assert [g.title for g in once([animation, cameras, thumbs])] == ["All cameras", "Each camera"]


def test_the_time_chart_names_steps_in_words():
    figure = stages_figure({"animation_close": 7.96, "decode_wait": 171.8, "detect": 436.4, "new_stage": 1.0})
    names = [label.get_text() for label in figure.axes[0].get_yticklabels()]
    assert names == ["new stage", "finishing GIF/MP4", "waiting for images", "detector"]  # fastest at the bottom


def test_the_evaluation_section_names_its_protocol_and_leaves_out_types_without_labels(tmp_path):
    record = EvalRecord.from_json(EVAL | {"protocol": {"title": "COCO", "iou": {"VEHICLE": 0.5}}})
    html = evaluation_section(record, tmp_path, heading=False)
    assert "Matching: COCO protocol (IoU VEHICLE 0.5)" in html and "<h2>" not in html
    assert "<td>VEHICLE</td><td>LEVEL_2</td>" in html and "<td>SIGN</td>" not in html  # no labels: no AP row
    assert "<h2>Against Waymo's labels</h2>" in evaluation_section(record, tmp_path)  # a page of its own: its title
