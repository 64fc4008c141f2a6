"""Which detection matched which label on one image: COCO's rule, and the protocols that set its IoU.

`match_image` is COCO's per-image matching (pycocotools `COCOeval.evaluateImg`, which
faster-coco-eval implements in C++), for one image and every type at once: per type, detections in
score order (stable), at most `max_detections` of them; each takes the unmatched label it overlaps
most at or above the type's IoU threshold (labels to ignore only when no other is left). The
evaluation's numbers come from the library; this is the same rule for one image at a time, so the
pictures and `matches.parquet` name the same hits and misses (the tests hold it to the library's
own matching on random images at every threshold). The IoU is `detect.core.boxes.box_iou`.

A protocol is the IoU a match needs per Waymo type: COCO's AP@0.5 asks 0.5 of every type; Waymo's
2D detection protocol asks 0.7 of VEHICLE and 0.5 of PEDESTRIAN and CYCLIST.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from detect.core.boxes import box_iou
from detect.core.records import WaymoType

# COCO's IoU thresholds, as the library builds them (0.7 is index 4, the value it compares with).
IOU_THRESHOLDS = np.linspace(0.5, 0.95, round((0.95 - 0.5) / 0.05) + 1, endpoint=True)
MAX_DETECTIONS = 100  # per image and type, as COCO's AP counts them
SMALL_SAMPLE = 10  # an AP resting on fewer labels than this is marked (tables, plots): one more hit moves it a lot


@dataclasses.dataclass(frozen=True)
class Protocol:
    """The IoU threshold a detection needs to match a label, per Waymo type."""

    name: str
    title: str  # how pages and tables name it
    ap_name: str  # the column heading of its AP
    iou_by_type: Mapping[int, float]
    default_iou: float = float(IOU_THRESHOLDS[0])

    def iou(self, waymo_type: int) -> float:
        return float(self.iou_by_type.get(int(waymo_type), self.default_iou))

    def iou_index(self, waymo_type: int) -> int:
        """The position of this type's threshold among COCO's ten."""
        return int(np.argmin(np.abs(IOU_THRESHOLDS - self.iou(waymo_type))))

    def describe(self) -> str:
        special = ", ".join(f"{WaymoType(t).name} {v:.1f}" for t, v in sorted(self.iou_by_type.items()))
        return f"{self.title} protocol: IoU {special + ', others ' if special else ''}{self.default_iou:.1f}"


COCO_PROTOCOL = Protocol("coco", "COCO", "AP50", {})
WAYMO_PROTOCOL = Protocol("waymo", "Waymo 2D", "AP70/50", {int(WaymoType.VEHICLE): float(IOU_THRESHOLDS[4])})
PROTOCOLS = {p.name: p for p in (COCO_PROTOCOL, WAYMO_PROTOCOL)}


@dataclasses.dataclass(frozen=True, eq=False)
class ImageMatches:
    """Per detection: the label it matched (-1: none) and their IoU (NaN: none), whether it was
    evaluated (the best `max_detections` of its type); per label: the detection that matched it."""

    label_of: np.ndarray
    iou: np.ndarray
    evaluated: np.ndarray
    detection_of: np.ndarray


def match_image(dt_xyxy: np.ndarray, dt_scores: np.ndarray, dt_types: np.ndarray, gt_xyxy: np.ndarray,
                gt_types: np.ndarray, protocol: Protocol, gt_crowd: np.ndarray | None = None,
                max_detections: int = MAX_DETECTIONS) -> ImageMatches:
    """COCO's matching on one image, type by type, at the protocol's IoU for each type."""
    dt_xyxy = np.asarray(dt_xyxy, np.float64).reshape(-1, 4)
    gt_xyxy = np.asarray(gt_xyxy, np.float64).reshape(-1, 4)
    scores = np.asarray(dt_scores, np.float64).reshape(-1)
    dt_types = np.asarray(dt_types, np.int64).reshape(-1)
    gt_types = np.asarray(gt_types, np.int64).reshape(-1)
    crowd = np.zeros(len(gt_xyxy), bool) if gt_crowd is None else np.asarray(gt_crowd, bool).reshape(-1)
    label_of = np.full(len(dt_xyxy), -1, np.int64)
    iou = np.full(len(dt_xyxy), np.nan)
    evaluated = np.zeros(len(dt_xyxy), bool)
    detection_of = np.full(len(gt_xyxy), -1, np.int64)
    for waymo_type in np.unique(np.concatenate([dt_types, gt_types])):
        dts = np.flatnonzero(dt_types == waymo_type)
        dts = dts[np.argsort(-scores[dts], kind="stable")][:max_detections]
        evaluated[dts] = True
        gts = np.flatnonzero(gt_types == waymo_type)
        gts = gts[np.argsort(crowd[gts], kind="stable")]  # labels to ignore last
        if not len(dts) or not len(gts):
            continue
        ious = box_iou(dt_xyxy[dts], gt_xyxy[gts], crowd[gts])
        threshold = min(protocol.iou(int(waymo_type)), 1 - 1e-10)
        taken = np.zeros(len(gts), bool)
        for d in range(len(dts)):
            best, m = threshold, -1
            for g in range(len(gts)):
                if taken[g] and not crowd[gts[g]]:
                    continue
                if m > -1 and not crowd[gts[m]] and crowd[gts[g]]:
                    break  # a real label matched: the ignored ones (sorted last) cannot replace it
                if ious[d, g] < best:
                    continue
                best, m = ious[d, g], g
            if m == -1:
                continue
            taken[m] = True
            label_of[dts[d]], iou[dts[d]] = gts[m], ious[d, m]
            if not crowd[gts[m]]:
                detection_of[gts[m]] = dts[d]
    return ImageMatches(label_of, iou, evaluated, detection_of)

