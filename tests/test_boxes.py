"""Box geometry (`detect.core.boxes`): conversions, IoU and overlap properties, NMS against a naive reference."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from detect.core.boxes import (
    box_area,
    box_iou,
    class_aware_nms,
    overlap_of_smaller,
    pairwise_intersection,
    xywh_to_xyxy,
    xyxy_to_xywh,
)

# Pixel coordinates as detectors and labels hold them: float32 on a 4096-pixel image, none so
# small that two coordinates of one image differ by more than 2^29 in magnitude.
coordinate = st.floats(0, 4096, width=32).filter(lambda v: v == 0 or v >= 2.0 ** -16)
box = st.tuples(coordinate, coordinate, coordinate, coordinate).map(
    lambda b: (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])))
boxes = st.lists(box, max_size=8).map(lambda b: np.array(b, np.float32).reshape(-1, 4))


def xyxy_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The `xyxy` form the NMS used before: corners compared directly, float64."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area_a = np.prod(np.clip(a[:, 2:] - a[:, :2], 0, None), axis=1)
    area_b = np.prod(np.clip(b[:, 2:] - b[:, :2], 0, None), axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def naive_class_aware_nms(xyxy: np.ndarray, scores: np.ndarray, classes: np.ndarray, iou: float) -> list[int]:
    """Textbook greedy NMS, one box at a time against every box kept so far."""
    kept: list[int] = []
    for i in sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i)):
        if all(classes[k] != classes[i] or xyxy_iou(xyxy[k], xyxy[i])[0, 0] <= iou for k in kept):
            kept.append(i)
    return kept


@settings(max_examples=examples(1 / 3), deadline=None)
@given(a=boxes, b=boxes)
def test_iou_is_symmetric_in_the_unit_interval_and_equals_the_corner_form(a, b):
    ab, ba = box_iou(a, b), box_iou(b, a)
    assert ab.shape == (len(a), len(b))
    np.testing.assert_array_equal(ab, ba.T)
    assert np.all((ab >= 0) & (ab <= 1))
    np.testing.assert_array_equal(ab, xyxy_iou(a, b))  # bit for bit: NMS keeps the same boxes


@settings(max_examples=examples(1 / 3), deadline=None)
@given(a=boxes)
def test_a_box_has_iou_one_with_itself_unless_it_is_empty(a):
    own = np.diag(box_iou(a, a))
    np.testing.assert_array_equal(own, np.where(box_area(a) > 0, 1.0, 0.0))


@settings(max_examples=examples(1 / 3), deadline=None)
@given(a=boxes, b=boxes)
def test_overlap_of_the_smaller_is_at_least_the_iou_and_at_most_one(a, b):
    overlap = overlap_of_smaller(a, b)
    assert np.all(overlap >= box_iou(a, b)) and np.all((overlap >= 0) & (overlap <= 1))
    np.testing.assert_array_equal(overlap, overlap_of_smaller(b, a).T)


@settings(max_examples=examples(1 / 3), deadline=None)
@given(xyxy=boxes, data=st.data(), iou=st.sampled_from([0.1, 0.3, 0.5, 0.7, 1.0]))
def test_class_aware_nms_keeps_what_naive_greedy_nms_keeps(xyxy, data, iou):
    n = len(xyxy)
    scores = np.array(data.draw(st.lists(st.sampled_from([0.2, 0.5, 0.9]), min_size=n, max_size=n)), np.float32)
    classes = np.array(data.draw(st.lists(st.sampled_from([1, 3]), min_size=n, max_size=n)), np.int64)
    assert class_aware_nms(xyxy, scores, classes, iou).tolist() == sorted(
        naive_class_aware_nms(xyxy, scores, classes, iou), key=lambda i: (-float(scores[i]), i))


@settings(max_examples=examples(1 / 3), deadline=None)
@given(a=boxes)
def test_xywh_round_trips(a):
    np.testing.assert_array_equal(xywh_to_xyxy(xyxy_to_xywh(a)), a.astype(np.float64))


def test_crafted_boxes():
    a = np.array([[0, 0, 10, 10]])
    b = np.array([[5, 0, 15, 10], [20, 20, 30, 30], [0, 0, 10, 10], [2, 2, 4, 4]])
    assert xyxy_to_xywh(b[:1]).tolist() == [[5, 0, 10, 10]]
    assert pairwise_intersection(a, b).tolist() == [[50, 0, 100, 4]]
    np.testing.assert_allclose(box_iou(a, b), [[50 / 150, 0, 1, 4 / 100]])
    assert overlap_of_smaller(a, b).tolist() == [[0.5, 0, 1, 1]]
    inverted = np.array([[5, 5, 4, 9]], np.float32)
    assert box_area(np.array([[0, 0, 2, 3]], np.float32)).tolist() == [6] and box_area(inverted).tolist() == [-4]
    assert box_iou(inverted, inverted).tolist() == [[0]] and overlap_of_smaller(inverted, a).tolist() == [[0]]
    assert box_iou(a, np.zeros((0, 4))).shape == (1, 0)


def test_a_crowd_box_is_measured_over_the_other_boxs_area():
    detection = np.array([[0, 0, 10, 10]])
    crowd = np.array([[0, 0, 100, 100]])
    assert box_iou(detection, crowd)[0, 0] == pytest.approx(0.01)
    assert box_iou(detection, crowd, np.array([True]))[0, 0] == 1.0
