"""Class-aware non-maximum suppression after the model, on one image's `Detections`.

Peak-based detectors (CenterNet) emit no IoU suppression of their own: neighbouring peaks of one
class can put two boxes on one object. `suppress` keeps, per class, the best-scoring box of each
group overlapping at IoU above `iou` (`detect.core.boxes.class_aware_nms`, memory linear in the
number of boxes); boxes of different classes never suppress each other.
"""

from __future__ import annotations

import numpy as np

from detect.core.boxes import class_aware_nms
from detect.core.records import Detections


def suppress(detections: Detections, iou: float | None) -> Detections:
    """`detections` after class-aware NMS at `iou` (None: unchanged)."""
    if iou is None or len(detections) < 2:
        return detections
    keep = class_aware_nms(detections.xyxy, detections.scores, detections.class_ids, iou)
    if keep.size == len(detections):
        return detections
    return detections.select(np.sort(keep))  # rows stay best score first, as they came
