"""Class-aware NMS after the model, and riders (person on bicycle) as one Waymo CYCLIST, on crafted boxes."""

from __future__ import annotations

import numpy as np
import pytest

from detect.core.boxes import box_iou, class_aware_nms
from detect.core.records import Detections, WaymoType
from detect.model.classmap import default_class_map, load_class_map, pair_riders
from detect.model.coco_classes import describe_classes
from detect.model.nms import suppress

CAR, TRUCK, PERSON, BICYCLE = 3, 8, 1, 2


def test_box_iou_of_crafted_boxes():
    a = np.array([[0, 0, 10, 10], [0, 0, 10, 10]])
    b = np.array([[5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 10, 10]])
    np.testing.assert_allclose(box_iou(a, b), [[50 / 150, 0, 1], [50 / 150, 0, 1]])


def test_nms_suppresses_within_a_class_only():
    xyxy = np.array([[0, 0, 100, 100], [5, 5, 105, 105], [0, 0, 100, 100], [300, 300, 400, 400]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    classes = np.array([CAR, CAR, TRUCK, CAR])
    # car 2 overlaps car 1 at IoU 0.82: gone at 0.7, kept at 0.9; the truck on the same box always stays
    assert class_aware_nms(xyxy, scores, classes, 0.7).tolist() == [0, 2, 3]
    assert class_aware_nms(xyxy, scores, classes, 0.9).tolist() == [0, 1, 2, 3]


def test_a_suppressed_box_suppresses_nothing():
    # b overlaps a (0.68) and c (0.68); a and c barely overlap: greedy NMS keeps a and c
    xyxy = np.array([[0, 0, 100, 100], [20, 0, 120, 100], [40, 0, 140, 100]], np.float32)
    assert class_aware_nms(xyxy, np.array([0.9, 0.8, 0.7]), np.array([CAR] * 3), 0.5).tolist() == [0, 2]


def test_suppress_keeps_the_rows_in_score_order():
    found = Detections(np.array([[0, 0, 10, 10], [1, 1, 10, 10], [50, 50, 60, 60]], np.float32),
                       np.array([0.9, 0.8, 0.5], np.float32), np.array([CAR, CAR, CAR]), ("car",) * 3, invalid=2)
    kept = suppress(found, 0.5)
    assert kept.scores.tolist() == pytest.approx([0.9, 0.5]) and kept.invalid == 2
    assert suppress(found, None) is found


@pytest.mark.parametrize("iou", [0.0, -0.1, 1.5])
def test_nms_iou_must_be_in_the_unit_interval(iou):
    with pytest.raises(ValueError, match=rf"NMS IoU must be in \(0, 1\], got {iou}"):
        class_aware_nms(np.zeros((2, 4)), np.zeros(2), np.zeros(2), iou)


RIDER = [100, 50, 140, 160]  # a person box whose lower part lies on the bicycle
BIKE = [90, 110, 150, 170]


def test_a_person_on_a_bicycle_becomes_one_cyclist_their_union():
    boxes = default_class_map().to_waymo(np.array([RIDER, BIKE]), np.array([0.8, 0.5]), np.array([PERSON, BICYCLE]))
    assert boxes.riders == 1 and boxes.types.tolist() == [WaymoType.CYCLIST]
    assert boxes.xyxy.tolist() == [[90, 50, 150, 170]]
    assert boxes.scores.tolist() == pytest.approx([np.sqrt(0.8 * 0.5)])


def test_a_person_beside_a_bicycle_stays_a_pedestrian():
    beside = [200, 50, 240, 160]
    boxes = default_class_map().to_waymo(np.array([beside, BIKE]), np.array([0.8, 0.5]), np.array([PERSON, BICYCLE]))
    assert boxes.riders == 0 and sorted(boxes.types.tolist()) == [WaymoType.PEDESTRIAN, WaymoType.CYCLIST]


def test_a_faint_bicycle_does_not_take_a_confident_pedestrian_but_gives_a_cyclist_reading():
    boxes = default_class_map().to_waymo(np.array([RIDER, BIKE]), np.array([0.9, 0.2]), np.array([PERSON, BICYCLE]))
    assert boxes.riders == 1 and boxes.types.tolist() == [WaymoType.PEDESTRIAN, WaymoType.CYCLIST]
    assert boxes.xyxy.tolist() == [RIDER, [90, 50, 150, 170]] and boxes.rows == ((0,), (0, 1))
    assert boxes.scores.tolist() == pytest.approx([0.9, np.sqrt(0.9 * 0.2)])


def test_each_bicycle_carries_one_rider_the_best_fitting():
    # The real frame's FRONT_LEFT cyclist: a faint person box 10x as wide covers the bicycle too; the
    # rider's own person box (nearly the bicycle's) takes it, scores apart or not.
    wide = [0, 100, 260, 180]
    for scores in ([0.5, 0.5, 0.45], [0.5, 0.05, 0.06]):
        pairs = pair_riders(np.array([RIDER, wide, BIKE], float), np.array(scores), np.array([PERSON, PERSON, BICYCLE]))
        assert pairs == [(0, 2)]
    second = [95, 55, 150, 168]  # fits the bicycle better than RIDER does, scores lower
    pairs = pair_riders(np.array([second, RIDER, BIKE], float), np.array([0.6, 0.7, 0.6]), np.array([PERSON, PERSON, BICYCLE]))
    assert pairs == [(0, 2)]
    boxes = default_class_map().to_waymo(np.array([second, RIDER, BIKE]), np.array([0.6, 0.7, 0.6]),
                                         np.array([PERSON, PERSON, BICYCLE]))
    assert sorted(boxes.types.tolist()) == [WaymoType.PEDESTRIAN, WaymoType.CYCLIST]


def test_unmapped_classes_are_dropped_and_a_custom_map_pairs_no_riders(tmp_path):
    (tmp_path / "map.json").write_text('{"person": "PEDESTRIAN", "bicycle": "VEHICLE"}')
    custom = load_class_map(tmp_path / "map.json")
    boxes = custom.to_waymo(np.array([RIDER, BIKE, [0, 0, 5, 5]]), np.array([0.8, 0.5, 0.9]),
                            np.array([PERSON, BICYCLE, 44]))
    assert boxes.riders == 0 and boxes.types.tolist() == [WaymoType.PEDESTRIAN, WaymoType.VEHICLE]


@pytest.mark.parametrize("ids, text", [
    (None, "COCO label map"),
    (list(range(1, 12)) + [13, *range(14, 26), 27, 28, *range(31, 45), *range(46, 66), 67, 70, *range(72, 83),
                            *range(84, 91)], "80 COCO classes"),
    ([1], "person"),
    ([1, 3, 8], "person, car, truck"),
    (list(range(1, 9)), "8 classes"),
])
def test_classes_are_named_briefly(ids, text):
    assert describe_classes(ids) == text
