"""Errors made visible: each drawing state, the legend, the galleries' choice, Waymo's protocol end
to end, and the real frame's one-step run, whose pictures, page and numbers agree."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers.matches import matches_frame
from helpers.paths import REAL_SEGMENT
from helpers.results_folders import CAR, PERSON, dets, evaluation, key, labels, row, segment_folder
from PIL import Image

from detect.cli import main
from detect.core.errors import UsageError
from detect.core.matching import COCO_PROTOCOL, WAYMO_PROTOCOL
from detect.core.records import Detections, Labels, WaymoType
from detect.evaluate.thresholds import suggest
from detect.judge import FALSE_ALARM, HIT, MISSED, OTHER, ErrorRules
from detect.model.classmap import default_class_map
from detect.render.crop import close_up
from detect.render.draw import DrawStyle
from detect.render.verdicts import COLORS, draw_errors, judge, paint_error_legend
from detect.report import gallery
from detect.results.ground_truth import read_ground_truth
from detect.waymo.schema import CAMERA, OBJECT_ID, TIMESTAMP

VEHICLE, PEDESTRIAN, SIGN, CYCLIST = (int(t) for t in (WaymoType.VEHICLE, WaymoType.PEDESTRIAN, WaymoType.SIGN,
                                                       WaymoType.CYCLIST))
TRAFFIC_LIGHT, BICYCLE, STOP_SIGN = 10, 2, 13
ALL_TYPES = ErrorRules(default_class_map(), (VEHICLE, PEDESTRIAN, SIGN, CYCLIST), COCO_PROTOCOL)
# The types a run on the real frame scores: it has no SIGN labels, so SIGN is not judged.
LABELLED_TYPES = ErrorRules(default_class_map(), (VEHICLE, PEDESTRIAN, CYCLIST), COCO_PROTOCOL)


def detections(*rows: tuple[tuple[float, float, float, float], float, int, str]) -> Detections:
    return Detections(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), np.array([r[1] for r in rows]),
                      np.array([r[2] for r in rows], np.int32), tuple(r[3] for r in rows))


def waymo_labels(*rows: tuple[tuple[float, float, float, float], int]) -> Labels:
    return Labels(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), np.array([r[1] for r in rows]),
                  np.ones(len(rows)), tuple(f"obj{i}" for i in range(len(rows))))


def test_each_state_is_judged_as_the_evaluation_matches():
    found = detections(((10, 10, 110, 110), 0.9, CAR, "car"),  # on label 0: hit
                       ((300, 300, 400, 400), 0.8, CAR, "car"),  # nothing there: false alarm
                       ((500, 10, 540, 60), 0.7, TRAFFIC_LIGHT, "traffic light"),  # no Waymo type: other
                       ((600, 600, 700, 700), 0.2, CAR, "car"))  # on label 2, below the threshold
    truth = waymo_labels(((10, 10, 110, 110), VEHICLE), ((200, 10, 260, 200), PEDESTRIAN), ((600, 600, 700, 700), VEHICLE))
    judged = judge(found, truth, ALL_TYPES, DrawStyle(threshold=0.5, unscored="chips"))
    assert list(zip(judged.states, judged.texts, strict=True)) == [
        (HIT, "car 0.90"), (FALSE_ALARM, "FA car 0.80"), (OTHER, "traffic light 0.70"),
        (MISSED, "MISS PEDESTRIAN"), (MISSED, "MISS VEHICLE")]  # missed: largest first; the 0.2 box is not drawn
    by_default = judge(found, truth, ALL_TYPES, DrawStyle(threshold=0.5))  # unscored classes: a thin box, no chip
    assert list(zip(by_default.states, by_default.texts, strict=True))[2] == (OTHER, None)
    hidden = judge(found, truth, ALL_TYPES, DrawStyle(threshold=0.5, unscored="none"))
    assert OTHER not in hidden.states and len(hidden.states) == len(judged.states) - 1
    np.testing.assert_array_equal(judged.xyxy[-1], [600, 600, 700, 700])
    assert judged.left_out == ()


def test_types_the_model_cannot_output_are_left_out_and_riders_are_one_cyclist():
    persons_only = ErrorRules(default_class_map(), (PEDESTRIAN,), COCO_PROTOCOL)
    truth = waymo_labels(((0, 0, 50, 50), VEHICLE), ((100, 0, 150, 100), PEDESTRIAN))
    judged = judge(detections(((100, 0, 150, 100), 0.9, PERSON, "person")), truth, persons_only, DrawStyle())
    assert judged.states == (HIT,) and judged.left_out == (VEHICLE,)  # the vehicle label is not drawn, and said so
    rider = detections(((100, 0, 150, 80), 0.8, PERSON, "person"), ((95, 40, 160, 100), 0.7, BICYCLE, "bicycle"))
    judged = judge(rider, waymo_labels(((95, 0, 160, 100), CYCLIST)), ALL_TYPES, DrawStyle())
    assert judged.states == (HIT,) and judged.texts == ("rider 0.75",)  # sqrt(0.8 * 0.7)
    np.testing.assert_array_equal(judged.xyxy[0], [95, 0, 160, 100])


def test_a_detection_of_a_type_the_segment_has_no_labels_of_is_drawn_grey_as_not_evaluated():
    """A stop sign where the labels have no SIGN (the rules do not judge it) is drawn as the other
    classes are, thin and grey, with its chip as `unscored` says, and counted as drawn; not dropped."""
    from detect.render.verdicts import boxes_drawn

    found = detections(((10, 10, 110, 110), 0.9, CAR, "car"), ((800, 10, 840, 50), 0.6, STOP_SIGN, "stop sign"),
                       ((500, 10, 540, 60), 0.7, TRAFFIC_LIGHT, "traffic light"))
    truth = waymo_labels(((10, 10, 110, 110), VEHICLE))
    judged = judge(found, truth, LABELLED_TYPES, DrawStyle(threshold=0.5, unscored="chips"))
    assert list(zip(judged.states, judged.texts, strict=True)) == [
        (HIT, "car 0.90"), (OTHER, "traffic light 0.70"), (OTHER, "stop sign 0.60")]
    np.testing.assert_array_equal(judged.xyxy[2], [800, 10, 840, 50])
    assert boxes_drawn(found, DrawStyle(threshold=0.5), LABELLED_TYPES, truth) == 3
    hidden = judge(found, truth, LABELLED_TYPES, DrawStyle(threshold=0.5, unscored="none"))
    assert hidden.states == (HIT,)
    judged_sign = judge(found, truth, ALL_TYPES, DrawStyle(threshold=0.5))  # where SIGN is judged: a false alarm
    assert judged_sign.states == (HIT, OTHER, FALSE_ALARM)


def test_a_vehicle_at_iou_0_6_is_a_hit_under_coco_and_a_miss_under_waymo_in_the_picture():
    truth = waymo_labels(((0, 0, 100, 100), VEHICLE))
    found = detections(((0, 0, 100, 60), 0.9, CAR, "car"))
    assert judge(found, truth, ALL_TYPES, DrawStyle()).states == (HIT,)
    waymo = ErrorRules(default_class_map(), ALL_TYPES.types, WAYMO_PROTOCOL)
    assert judge(found, truth, waymo, DrawStyle()).states == (FALSE_ALARM, MISSED)


def edge(canvas: np.ndarray, color: tuple[int, int, int], row: int, x0: int, x1: int) -> np.ndarray:
    return np.all(canvas[row, x0:x1] == color, axis=1)


def test_each_state_has_its_color_and_line_style_and_the_legend_fits():
    canvas = np.zeros((400, 640, 3), np.uint8)
    found = detections(((20, 200, 120, 300), 0.9, CAR, "car"), ((200, 200, 300, 300), 0.8, CAR, "car"))
    truth = waymo_labels(((20, 200, 120, 300), VEHICLE), ((400, 200, 500, 300), VEHICLE))
    draw_errors(canvas, judge(found, truth, ALL_TYPES, DrawStyle(show_labels=False, show_scores=False)), line_width=2)
    solid, dashed, dotted = (edge(canvas, COLORS[s], 299, x0, x0 + 100) for s, x0 in ((HIT, 20), (FALSE_ALARM, 200),
                                                                                     (MISSED, 400)))
    assert solid.all()  # the bottom edges: solid, dashed (6 on, 6 off), dotted (2 on, 2 off)
    assert 0.4 < dashed.mean() < 0.6 and np.flatnonzero(np.diff(dashed.astype(int)) != 0)[:2].tolist() == [5, 11]
    assert 0.4 < dotted.mean() < 0.6 and np.flatnonzero(np.diff(dotted.astype(int)) != 0)[:2].tolist() == [1, 3]
    legend = canvas[:80, 320:]  # the top-right corner, within half the width
    for state in (HIT, FALSE_ALARM, MISSED):
        assert np.all(legend == COLORS[state], axis=2).any(), state
    assert not np.any(canvas[:80, :320] != 0)  # nothing of the legend spills past half the width
    tiny = np.zeros((20, 40, 3), np.uint8)
    draw_errors(tiny, judge(Detections.empty(), Labels.empty(), ALL_TYPES, DrawStyle()))
    assert not tiny.any()  # too small for a legend: nothing drawn rather than a cut one


def test_the_suggested_threshold_keeps_exactly_the_chosen_boxes():
    assert suggest(0.3149, 0.2) == "0.31" and suggest(0.3149, 0.3101) == "0.314" and suggest(0.5, None) == "0.50"
    assert suggest(0.30000001192092896, 0.29) == "0.30"


def test_the_galleries_pick_the_highest_false_alarms_and_the_largest_misses():
    def box(side: float) -> dict:
        return {"xmin": 0.0, "ymin": 0.0, "xmax": side, "ymax": side}

    rows = [{"kind": "detection", "type_name": "VEHICLE", "score": s, "matched": m, "class_id": CAR, **box(10)}
            for s, m in ((0.9, True), (0.8, False), (0.6, False), (0.55, False), (0.3, False))]
    rows += [{"kind": "label", "type_name": "VEHICLE", "score": s, "matched": m, OBJECT_ID: f"v{side}", **box(side)}
             for side, s, m in ((50, 0.9, True), (40, None, False), (80, 0.3, True), (20, None, False))]
    chosen = gallery.select(matches_frame(rows), threshold=0.5, per_type=2)["VEHICLE"]
    assert [e.score for e in chosen[gallery.FALSE_ALARM]] == [0.8, 0.6]  # 0.9 is a hit, 0.3 below the threshold
    assert [e.what for e in chosen[gallery.MISSED]] == ["v80", "v40"]  # v80: matched only at 0.3, below the threshold
    assert chosen[gallery.FALSE_ALARM][0].caption() == "FA car 0.80, FRONT 1; nearest label VEHICLE IoU 0.25"
    assert chosen[gallery.MISSED][0].caption() == "missed VEHICLE 80x80 px, FRONT 1; found at 0.300, below the threshold"
    assert gallery.outcomes(matches_frame(rows), 0.5)["VEHICLE"] == gallery.Outcome(hits=1, false_alarms=3, missed=3,
                                                                                     labels=4)


def test_each_gallery_slot_shows_another_object_at_its_worst_frame():
    """One man falsely detected in five consecutive frames (one track) and two other false alarms;
    one pedestrian missed in four frames (one label id) and two others: each object once."""
    def at(frame: int, x: float, **fields) -> dict:
        return {TIMESTAMP: 1_000_000 + frame * 33_333, "type_name": "PEDESTRIAN", "xmin": x, "ymin": 0.0,
                "xmax": x + 40, "ymax": 100.0, **fields}

    man = [at(f, 100 + 2 * f, kind="detection", score=0.9 - 0.01 * f, matched=False, class_id=PERSON) for f in range(5)]
    others = [at(2, 500, kind="detection", score=0.7, matched=False, class_id=PERSON),
              at(3, 800, kind="detection", score=0.6, matched=False, class_id=PERSON)]
    hidden = [at(f, 300, kind="label", score=None, matched=False, **{OBJECT_ID: "p1", "ymax": 100.0 + f}) for f in range(4)]
    missed = [at(0, 900, kind="label", score=None, matched=False, **{OBJECT_ID: "p2"}),
              at(0, 1000, kind="label", score=None, matched=False, **{OBJECT_ID: "p3", "ymax": 50.0})]
    rows = matches_frame(man + others + hidden + missed)
    tracks = gallery.TrackIds(pd.DataFrame({TIMESTAMP: [r[TIMESTAMP] for r in man + others],
                                            CAMERA: 1, "xmin": [r["xmin"] for r in man + others], "ymin": 0.0,
                                            "xmax": [r["xmax"] for r in man + others], "ymax": 100.0,
                                            "track_id": [1] * 5 + [6, 11]}))
    for track_ids in (tracks, None):  # by the track id, or, untracked, by overlap in consecutive frames
        chosen = gallery.select(rows, threshold=0.5, track_ids=track_ids)["PEDESTRIAN"]
        assert [e.score for e in chosen[gallery.FALSE_ALARM]] == [0.9, 0.7, 0.6]  # the man at his worst, once
    missed_examples = gallery.select(rows, threshold=0.5)["PEDESTRIAN"][gallery.MISSED]
    assert [(e.what, e.xyxy[3]) for e in missed_examples] == [("p1", 103.0), ("p2", 100.0), ("p3", 50.0)]
    same_image = matches_frame([at(0, 100, kind="detection", score=s, matched=False, class_id=PERSON) for s in (0.9, 0.8)])
    assert len(gallery.select(pd.concat([same_image, rows.iloc[-1:]]), 0.5)["PEDESTRIAN"][gallery.FALSE_ALARM]) == 2


@pytest.mark.slow
def test_the_waymo_protocol_end_to_end_on_crafted_boxes(tmp_path):
    """A car box at IoU 0.6 with a vehicle label: a hit under COCO, a false alarm and a miss under Waymo's."""
    directory = segment_folder(tmp_path, {key(): (labels(((0, 0, 100, 100), VEHICLE, 1)), dets(((0, 0, 100, 60), 0.9, CAR)))})
    coco = row(evaluation(directory), "LEVEL_2", "VEHICLE")
    assert (coco["true_positives"], coco["false_positives"], coco["ap50"], coco["ap_waymo"]) == (1, 0, 1.0, 0.0)
    waymo_report = evaluation(directory, "--protocol", "waymo")
    waymo = row(waymo_report, "LEVEL_2", "VEHICLE")
    assert (waymo["true_positives"], waymo["false_positives"], waymo["ap50"], waymo["ap_waymo"]) == (0, 1, 1.0, 0.0)
    assert waymo_report["protocol"]["iou"]["VEHICLE"] == pytest.approx(0.7)
    matched = pq.read_table(directory / "matches.parquet").to_pydict()
    assert matched["matched"] == [False, False] and matched["iou_threshold"] == pytest.approx([0.7, 0.7])


@pytest.fixture(scope="module")
def one_step(coco_model, real_frame_path, tmp_path_factory) -> tuple[Path, str]:
    """`detect segment` on the real frame with the COCO model, as a user runs it: nothing more asked."""
    out = tmp_path_factory.mktemp("one_step")
    printed = io.StringIO()
    assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out), "--no-gif"],
                stdout=printed) == 0
    return out / REAL_SEGMENT, printed.getvalue()


def test_one_segment_command_evaluates_draws_errors_and_writes_the_page(one_step):
    directory, printed = one_step
    report = json.loads((directory / "eval.json").read_text())
    matches = pq.read_table(directory / "matches.parquet").to_pandas()
    threshold = report["threshold"]
    page = (directory / "report.html").read_text()
    for name in ("VEHICLE", "PEDESTRIAN"):
        level_2 = row(report, "LEVEL_2", name)
        rows = matches[matches["type_name"] == name]
        drawn = rows[(rows["kind"] == "detection") & (rows["score"] >= threshold)]
        hits = int(drawn["matched"].sum())
        labels_found = rows[(rows["kind"] == "label") & rows["matched"] & (rows["score"] >= threshold)]
        assert (hits, len(drawn) - hits) == (level_2["true_positives"], level_2["false_positives"])  # library = ours
        assert len(labels_found) == hits
        cells = re.search(rf"<tr><td>{name}</td><td data-value='(\d+)'>\d+</td><td data-value='(\d+)'>\d+</td>"
                          rf"<td data-value='(\d+)'>\d+</td><td data-value='(\d+)'>", page)
        assert cells is not None and [int(c) for c in cells.groups()] == [level_2["labels"], hits, len(drawn) - hits,
                                                                           level_2["labels"] - hits]
        best = by_hand_best(rows, level_2["labels"])
        assert report["thresholds_level_2"][name]["best"]["score"] == pytest.approx(best)
        suggested = report["thresholds_level_2"][name]["best"]["suggested"]
        assert re.search(rf"{name} {re.escape(suggested)}0* \(F1", printed)  # the thresholds' one precision
    # a line over 100 characters goes on below its label (a long temporary folder): read it joined
    assert "report: " + str(directory / "report.html") in re.sub(r"\n  +", " ", printed) and "AP50 / AP70/50" in printed
    assert (directory / "report" / "error_vehicle_fa_0.jpg").is_file() and "largest missed labels" in page


def by_hand_best(rows: pd.DataFrame, labels: int) -> float:
    """The F1-best threshold from matches.parquet alone: the score where F1 peaks (ties: the highest)."""
    found = rows[rows["kind"] == "detection"].sort_values("score", ascending=False)
    best, best_f1 = None, -1.0
    for score in sorted(set(found["score"]), reverse=True):
        kept = found[found["score"] >= score]
        hits = int(kept["matched"].sum())
        precision, recall = hits / len(kept), hits / labels
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        if hits and f1 > best_f1:
            best, best_f1 = float(score), f1
    assert best is not None
    return best


def test_the_pictures_show_what_matches_parquet_says(one_step):
    """The frames are judged by the same rule: per image, the hits and misses drawn are the rows of
    matches.parquet at the threshold, and the FRONT frame shows every state's color."""
    directory, _ = one_step
    report = json.loads((directory / "eval.json").read_text())
    table = pq.read_table(directory / "detections.parquet").to_pandas()
    truth, _ = read_ground_truth(directory / "ground_truth.parquet")
    matches = pq.read_table(directory / "matches.parquet").to_pandas()
    threshold = report["threshold"]
    for image_key, image_labels in truth.items():
        rows = table[(table[TIMESTAMP] == image_key.frame_timestamp_micros) & (table[CAMERA] == int(image_key.camera_name))]
        found = Detections(rows[["xmin", "ymin", "xmax", "ymax"]].to_numpy(np.float32), rows["score"].to_numpy(),
                           rows["class_id"].to_numpy(np.int32), tuple(rows["label"]))
        judged = judge(found, image_labels, LABELLED_TYPES, DrawStyle(threshold=threshold))
        here = matches[(matches[CAMERA] == int(image_key.camera_name))
                       & matches["type_name"].isin(["VEHICLE", "PEDESTRIAN", "CYCLIST"])]
        drawn = here[(here["kind"] == "detection") & (here["score"] >= threshold)]
        missed = here[(here["kind"] == "label") & ~(here["matched"] & (here["score"] >= threshold))]
        assert (judged.count(HIT), judged.count(FALSE_ALARM), judged.count(MISSED)) == (
            int(drawn["matched"].sum()), int((~drawn["matched"]).sum()), len(missed)), image_key.camera_name.name
    with Image.open(directory / "frames" / "FRONT" / "1553735853462203.png") as png:
        pixels = np.asarray(png)
    for state in (HIT, FALSE_ALARM, MISSED):
        assert np.all(pixels == COLORS[state], axis=2).sum() > 200, state


def test_an_unknown_unscored_mode_is_refused_by_name():
    with pytest.raises(UsageError, match="^unscored must be one of boxes, chips, none, got 'thin'$"):
        DrawStyle(unscored="thin")


def crop_of(directory: Path, name: str) -> np.ndarray:
    with Image.open(directory / "report" / name) as image:
        return np.asarray(image.convert("RGB"), np.int16)


def test_the_real_runs_close_ups_come_from_the_camera_image(one_step):
    directory, _ = one_step
    matches = gallery.read_matches(directory, REAL_SEGMENT)
    assert matches is not None
    example = gallery.select(matches, json.loads((directory / "eval.json").read_text())["threshold"])["VEHICLE"][
        gallery.FALSE_ALARM][0]
    assert example.key is not None
    read = gallery.source_images(directory, {"VEHICLE": {gallery.FALSE_ALARM: [example]}})
    assert read.problem is None
    raw = read.images[example.key]
    expected = np.asarray(close_up(raw, *gallery.outlines(example)), np.int16)
    assert np.abs(crop_of(directory, "error_vehicle_fa_0.jpg") - expected).mean() < 3  # JPEG's loss only
    page = (directory / "report.html").read_text()
    assert f"<figcaption>{example.caption()}</figcaption>" in page and "Close-ups from the camera image" in page


def test_without_the_source_file_the_close_ups_come_from_the_drawn_frames_and_say_so(one_step, tmp_path):
    directory = tmp_path / REAL_SEGMENT
    shutil.copytree(one_step[0], directory)
    data = json.loads((directory / "manifest.json").read_text())
    data["input"]["path"] = str(tmp_path / "gone.tfrecord")
    (directory / "manifest.json").write_text(json.dumps(data))
    before = crop_of(directory, "error_vehicle_fa_0.jpg")
    crops = len(list((directory / "report").glob("error_*.jpg")))
    assert crops >= 10  # the real frame's false alarms and misses
    assert main(["report", str(directory)], stdout=io.StringIO()) == 0
    page = (directory / "report.html").read_text()
    assert (f"<p><strong>{tmp_path / 'gone.tfrecord'}: the source file is gone: {crops} close-up(s) cut from the "
            f"drawn frames instead.</strong></p>") in page
    after = crop_of(directory, "error_vehicle_fa_0.jpg")
    assert np.abs(after - before).mean() > 3  # the drawn frame's other boxes and chips are in it now


def test_the_legend_is_as_readable_as_the_chips_once_shrunk_for_the_gif():
    # A 1920x1280 frame becomes a 640-wide GIF and mosaic tile: its legend's rows, a third as tall
    # there, must still hold text of the chips' size (~11 px), not three quarters of it.
    canvas = np.zeros((1280, 1920, 3), np.uint8)
    paint_error_legend(canvas, [], ())
    rows = np.flatnonzero(canvas[:, 960:].any(axis=(1, 2)))
    assert rows[0] == 0 and (rows[-1] + 1) / 3 / 3 >= 15  # three entries, each >= 15 px high in the GIF (was 12.7)
    assert not canvas[:, :960].any()  # still within half the width
