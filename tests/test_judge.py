"""Judging one frame (`detect.judge`): the verdicts drawing, `matches.parquet` and `detect compare` share;
and grouping a table's rows by image (`detect.core.frame_rows`)."""

from __future__ import annotations

import numpy as np

from detect.core.cameras import CameraName
from detect.core.frame_rows import rows_by_image
from detect.core.matching import COCO_PROTOCOL
from detect.core.records import Detections, FrameKey, Labels, WaymoType
from detect.judge import ErrorRules, match_frame
from detect.model.classmap import default_class_map

VEHICLE, PEDESTRIAN, SIGN = int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN), int(WaymoType.SIGN)
CAR, PERSON, BICYCLE, TRAFFIC_LIGHT, STOP_SIGN = 3, 1, 2, 10, 13
RULES = ErrorRules(default_class_map(), (VEHICLE, PEDESTRIAN), COCO_PROTOCOL)

FOUND = Detections(np.array([[10, 10, 110, 110], [300, 300, 400, 400], [500, 10, 540, 60], [600, 600, 700, 700],
                             [800, 10, 840, 50]], np.float32),
                   np.array([0.9, 0.8, 0.7, 0.2, 0.6], np.float32), np.array([CAR, CAR, TRAFFIC_LIGHT, CAR, STOP_SIGN]),
                   ("car", "car", "traffic light", "car", "stop sign"))
TRUTH = Labels(np.array([[10, 10, 110, 110], [200, 10, 260, 200], [600, 600, 700, 700], [800, 10, 840, 50]], np.float32),
               np.array([VEHICLE, PEDESTRIAN, VEHICLE, SIGN]), np.ones(4), ("a", "b", "c", "d"))


def test_a_frame_is_judged_hit_false_alarm_and_found_labels_per_threshold():
    frame = RULES.match(FOUND, TRUTH)
    # the stop sign maps to SIGN, which these rules do not judge; the traffic light maps to nothing
    assert frame.boxes.types.tolist() == [VEHICLE, VEHICLE, VEHICLE, SIGN]
    assert frame.detections.tolist() == [0, 1, 2] and frame.labels.tolist() == [0, 1, 2]
    assert frame.hits.tolist() == [True, False, True]
    assert frame.labels_found(0.5).tolist() == [True, False, False]  # the 0.2 car is below 0.5
    assert frame.labels_found(0.1).tolist() == [True, False, True]
    # not judged: the traffic light (no Waymo type) and the stop sign (SIGN, a type these rules do not judge)
    assert frame.unjudged_rows(len(FOUND)) == [2, 4]


def test_the_rules_judge_as_match_frame_does():
    frame = RULES.match(FOUND, TRUTH)
    same = match_frame(FOUND.xyxy, FOUND.scores, FOUND.class_ids, TRUTH, default_class_map(), RULES.types, COCO_PROTOCOL)
    assert frame.matches.label_of.tolist() == same.matches.label_of.tolist() == [0, -1, 2]
    assert same.matches.detection_of.tolist() == [0, -1, 2]


def test_a_frame_without_detections_finds_no_label():
    frame = RULES.match(Detections.empty(), TRUTH)
    assert frame.hits.tolist() == [] and frame.labels_found(0.0).tolist() == [False, False, False]
    assert frame.unjudged_rows(0) == []


def test_rows_are_grouped_by_image_in_table_order():
    a, b = (FrameKey("s", t, CameraName.FRONT) for t in (1, 2))
    grouped = rows_by_image([b, a, b, b, a])
    assert list(grouped) == [b, a]
    assert {k: v.tolist() for k, v in grouped.items()} == {b: [0, 2, 3], a: [1, 4]}
    assert grouped[a].dtype == np.int64 and rows_by_image([]) == {}
