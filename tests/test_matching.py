"""One image's matching (`detect.core.matching`) against the library's own, and the protocols."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from faster_coco_eval import COCO, COCOeval_faster
from helpers.examples import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pycocotools.coco import COCO as PyCOCO
from pycocotools.cocoeval import COCOeval as PyCOCOeval

from detect.core.boxes import box_iou
from detect.core.matching import COCO_PROTOCOL, IOU_THRESHOLDS, WAYMO_PROTOCOL, Protocol, match_image
from detect.core.records import WaymoType

VEHICLE, PEDESTRIAN = int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN)


def coco_image(dt_xyxy, dt_scores, dt_types, gt_xyxy, gt_types, gt_crowd) -> tuple[dict, list[dict]]:
    """One image's labels (ids 1..) and detections as COCO's JSON."""
    gt = {"info": {}, "images": [{"id": 1}], "categories": [{"id": VEHICLE}, {"id": PEDESTRIAN}],
          "annotations": [{"id": i + 1, "image_id": 1, "category_id": int(t), "iscrowd": int(c),
                           "bbox": [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])],
                           "area": float((b[2] - b[0]) * (b[3] - b[1]))}
                          for i, (b, t, c) in enumerate(zip(gt_xyxy, gt_types, gt_crowd, strict=True))]}
    dts = [{"image_id": 1, "category_id": int(t), "score": float(s),
            "bbox": [float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]}
           for b, s, t in zip(dt_xyxy, dt_scores, dt_types, strict=True)]
    return gt, dts


def library_matches(dt_xyxy, dt_scores, dt_types, gt_xyxy, gt_types, gt_crowd, iou: float):
    """faster-coco-eval's matching at one IoU threshold: per detection the label index (or -1).
    One area range ("all"): the library's match flags (`gt_id`) merge every range's matches, and in
    a range that ignores a real label by its size a detection may take a crowd label instead."""
    gt, dts = coco_image(dt_xyxy, dt_scores, dt_types, gt_xyxy, gt_types, gt_crowd)
    with contextlib.redirect_stdout(io.StringIO()):
        gt_coco = COCO(gt)
        dt_coco = gt_coco.loadRes(dts)
        run = COCOeval_faster(gt_coco, dt_coco, "bbox", print_function=lambda *a, **k: None, extra_calc=True)
        run.params.iouThrs = np.array([iou])
        run.params.catIds = [VEHICLE, PEDESTRIAN]
        run.params.areaRng, run.params.areaRngLbl = [[0.0, 1e10]], ["all"]
        run.evaluate()
        run.accumulate()
    out = np.full(len(dts), -1)
    for index, ann in enumerate(sorted(dt_coco.anns.values(), key=lambda a: a["id"])):
        if ann.get("tp"):
            out[index] = ann["gt_id"] - 1
    return out


def pycocotools_matches(dt_xyxy, dt_scores, dt_types, gt_xyxy, gt_types, gt_crowd, iou: float):
    """pycocotools' own `evaluateImg` (COCO's reference in Python) at one IoU threshold and the
    "all" area range: per detection the label index (or -1)."""
    gt, dts = coco_image(dt_xyxy, dt_scores, dt_types, gt_xyxy, gt_types, gt_crowd)
    if not dts:
        return np.full(0, -1)  # its loadRes reads the first detection
    with contextlib.redirect_stdout(io.StringIO()):
        gt_coco = PyCOCO()
        gt_coco.dataset = gt
        gt_coco.createIndex()
        run = PyCOCOeval(gt_coco, gt_coco.loadRes(dts), "bbox")
        run.params.iouThrs = np.array([iou])
        run.params.catIds = [VEHICLE, PEDESTRIAN]
        run.params.areaRng, run.params.areaRngLbl, run.params.maxDets = [[0.0, 1e10]], ["all"], [100]
        run.evaluate()
    out = np.full(len(dts), -1)
    for image in filter(None, run.evalImgs):
        for position, dt_id in enumerate(image["dtIds"]):
            out[dt_id - 1] = int(image["dtMatches"][0, position]) - 1
    return out


box = st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(2, 40), st.integers(2, 40)).map(
    lambda b: (float(b[0]), float(b[1]), float(b[0] + b[2]), float(b[1] + b[3])))


@settings(max_examples=examples(1 / 2), deadline=None)
@given(gts=st.lists(st.tuples(box, st.sampled_from([VEHICLE, PEDESTRIAN]), st.booleans()), max_size=6),
       dts=st.lists(st.tuples(box, st.sampled_from([0.2, 0.5, 0.5, 0.9, 0.33]), st.sampled_from([VEHICLE, PEDESTRIAN])),
                    max_size=8),
       t=st.sampled_from([0, 2, 4]))
# A real label at the threshold beats a crowd the detection overlaps more; the crowd keeps the other detection.
@example(gts=[((50.0, 50.0, 52.0, 52.0), PEDESTRIAN, False), ((50.0, 50.0, 52.0, 52.0), PEDESTRIAN, False),
              ((0.0, 0.0, 10.0, 10.0), VEHICLE, False), ((0.0, 0.0, 20.0, 10.0), VEHICLE, True)],
         dts=[((40.0, 40.0, 42.0, 42.0), 0.5, PEDESTRIAN), ((10.0, 0.0, 20.0, 10.0), 0.5, VEHICLE),
              ((0.0, 0.0, 12.0, 10.0), 0.5, VEHICLE)],
         t=0)
def test_matching_equals_the_librarys_on_random_images(gts, dts, t):
    """Same label for every detection as faster-coco-eval and as pycocotools, ties in score, crowds and all."""
    gt_xyxy = np.array([g[0] for g in gts], np.float64).reshape(-1, 4)
    gt_types = np.array([g[1] for g in gts], np.int64)
    crowd = np.array([g[2] for g in gts], bool)
    dt_xyxy = np.array([d[0] for d in dts], np.float64).reshape(-1, 4)
    scores = np.array([d[1] for d in dts])
    dt_types = np.array([d[2] for d in dts], np.int64)
    if not len(gts):
        return  # the library needs labels to match against; nothing matches anyway
    iou = float(IOU_THRESHOLDS[t])
    ours = match_image(dt_xyxy, scores, dt_types, gt_xyxy, gt_types, Protocol("t", "t", "t", {}, iou), crowd)
    image = (dt_xyxy, scores, dt_types, gt_xyxy, gt_types, crowd, iou)
    assert ours.label_of.tolist() == library_matches(*image).tolist() == pycocotools_matches(*image).tolist()


def test_a_real_label_at_the_threshold_beats_a_crowd_the_detection_overlaps_more():
    """COCO's rule (pycocotools' evaluateImg): labels to ignore (crowds) are tried last and only when
    no real label reached the threshold; a crowd label takes any number of detections and counts none."""
    labels = np.array([[0, 0, 10, 10], [0, 0, 20, 10]], np.float64)  # a real label, a crowd over it
    crowd = np.array([False, True])
    boxes = np.array([[10, 0, 20, 10], [0, 0, 12, 10]], np.float64)
    types = np.full(2, VEHICLE)
    assert box_iou(boxes[1:], labels, crowd)[0].tolist() == pytest.approx([100 / 120, 1.0])
    result = match_image(boxes, np.array([0.5, 0.5]), types, labels, types, COCO_PROTOCOL, crowd)
    assert result.label_of.tolist() == [1, 0]  # the second box: the real label (IoU 0.83), not the crowd (1.0)
    assert result.detection_of.tolist() == [1, -1]  # a crowd label names no detection
    image = (boxes, np.array([0.5, 0.5]), types, labels, types, crowd, 0.5)
    assert pycocotools_matches(*image).tolist() == library_matches(*image).tolist() == [1, 0]
    alone = match_image(boxes[1:], np.array([0.5]), types[1:], labels[1:], types[1:], COCO_PROTOCOL, crowd[1:])
    assert alone.label_of.tolist() == [0]  # without the real label the crowd takes it


def test_a_vehicle_at_iou_0_6_is_a_hit_under_coco_and_a_miss_under_waymo():
    label = np.array([[0, 0, 100, 100]], np.float64)
    shifted = np.array([[0, 0, 100, 60]], np.float64)  # IoU 0.6
    assert box_iou(shifted, label, np.zeros(1, bool))[0, 0] == pytest.approx(0.6)
    for waymo_type, waymo_hit in ((VEHICLE, False), (PEDESTRIAN, True)):
        types = np.array([waymo_type])
        coco = match_image(shifted, np.array([0.9]), types, label, types, COCO_PROTOCOL)
        waymo = match_image(shifted, np.array([0.9]), types, label, types, WAYMO_PROTOCOL)
        assert coco.label_of.tolist() == [0] and coco.detection_of.tolist() == [0]
        assert (waymo.label_of.tolist() == [0]) is waymo_hit
        assert (waymo.detection_of.tolist() == [0]) is waymo_hit


def test_the_better_score_takes_the_label_and_types_never_cross():
    label = np.array([[0, 0, 10, 10]], np.float64)
    boxes = np.array([[0, 0, 10, 10], [0, 0, 10, 9], [0, 0, 10, 10]], np.float64)
    result = match_image(boxes, np.array([0.4, 0.8, 0.9]), np.array([VEHICLE, VEHICLE, PEDESTRIAN]), label,
                         np.array([VEHICLE]), COCO_PROTOCOL)
    assert result.label_of.tolist() == [-1, 0, -1]  # the 0.8 box matched first; the pedestrian box is another type
    assert result.detection_of.tolist() == [1]
    assert result.iou[1] == pytest.approx(0.9)
    assert np.isnan(result.iou[0])


def test_only_the_best_hundred_detections_of_a_type_are_evaluated():
    boxes = np.tile(np.array([[0, 0, 10, 10]], np.float64), (102, 1))
    scores = np.linspace(0.1, 0.9, 102)
    result = match_image(boxes, scores, np.full(102, VEHICLE), np.zeros((0, 4)), np.zeros(0), COCO_PROTOCOL)
    assert int(result.evaluated.sum()) == 100 and not result.evaluated[:2].any()


def test_protocols_name_their_thresholds():
    assert WAYMO_PROTOCOL.iou(VEHICLE) == pytest.approx(0.7) and WAYMO_PROTOCOL.iou(PEDESTRIAN) == 0.5
    assert WAYMO_PROTOCOL.iou_index(VEHICLE) == 4 and COCO_PROTOCOL.iou_index(VEHICLE) == 0
    assert WAYMO_PROTOCOL.describe() == "Waymo 2D protocol: IoU VEHICLE 0.7, others 0.5"
    assert COCO_PROTOCOL.describe() == "COCO protocol: IoU 0.5"
