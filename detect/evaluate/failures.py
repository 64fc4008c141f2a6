"""How the detections fail, in one pass over a segment's images: TIDE's error kinds at both
difficulty levels (`detect.evaluate.error_kinds`) and the confusion matrix at the drawing
threshold (`detect.evaluate.confusion`), from the frame's own matching at IoU 0.5 (`detect.judge`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.frame_rows import rows_by_image
from detect.core.matching import COCO_PROTOCOL
from detect.core.records import LEVEL_1, LEVEL_2, Labels
from detect.evaluate.confusion import Confusion
from detect.evaluate.error_kinds import ErrorKinds, image_errors
from detect.evaluate.results import SegmentResults
from detect.judge import match_frame
from detect.model.classmap import ClassMap


@dataclasses.dataclass(eq=False)
class Failures:
    """Error kinds per difficulty level and the confusion matrix, pooled one segment at a time."""

    kinds: dict[int, ErrorKinds]
    confusion: Confusion

    @classmethod
    def empty(cls, types: list[int], threshold: float) -> Failures:
        return cls({level: ErrorKinds(types) for level in (LEVEL_1, LEVEL_2)}, Confusion(types, threshold))

    def add_segment(self, segment: SegmentResults, class_map: ClassMap) -> None:
        """Every image the segment's run processed, in order (as COCO's export lists them)."""
        types = self.confusion.types
        rows = rows_by_image(segment.detections.keys)
        found = segment.detections
        for key in sorted(segment.images, key=lambda k: k.order):
            index = rows.get(key, np.zeros(0, np.int64))
            labels = segment.labels.get(key) or Labels.empty()
            frame = match_frame(found.xyxy[index], found.scores[index], found.class_ids[index], labels, class_map,
                                types, COCO_PROTOCOL)
            self.confusion.add(frame, labels)
            d, g = frame.detections, frame.labels
            xyxy, scores, det_types = frame.boxes.xyxy[d], frame.boxes.scores[d], frame.boxes.types[d]
            gt_xyxy, gt_types = labels.xyxy[g], labels.types[g].astype(np.int64)
            for level, pool in self.kinds.items():
                ignore = labels.difficulty[g] == LEVEL_2 if level == LEVEL_1 else None
                errors = image_errors(xyxy, scores, det_types, gt_xyxy, gt_types, ignore,
                                      frame.matches if level == LEVEL_2 else None)
                pool.add(errors, scores, det_types, gt_types, ignore)

    def merge(self, other: Failures) -> None:
        for level, pool in self.kinds.items():
            pool.merge(other.kinds[level])
        self.confusion.merge(other.confusion)

    def error_kinds(self) -> dict[str, dict[str, dict[str, float]]]:
        """`error_kinds` of eval.json: level -> type (and `mean`) -> each kind's dAP50 (0..1)."""
        return {f"LEVEL_{level}": pool.scores() for level, pool in self.kinds.items()}
