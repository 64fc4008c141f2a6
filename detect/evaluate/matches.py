"""Every detection and every label of a segment, with what the matching made of it: the rows of
`matches.parquet`, from the same per-image matching the pictures are drawn with
(`detect.judge.match_frame`: COCO's rule at the protocol's IoU, every label counted)."""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.frame_rows import rows_by_image
from detect.core.matching import Protocol
from detect.core.records import FrameKey, Labels
from detect.evaluate.segment_results import SegmentResults
from detect.judge import match_frame
from detect.model.classmap import ClassMap


@dataclasses.dataclass(frozen=True)
class Match:
    """One detection or one label and what it was matched with."""

    key: FrameKey
    kind: str  # "detection" or "label"
    waymo_type: int
    score: float | None  # a label's: the score of the detection that matched it
    iou: float | None
    matched: bool  # by any detection in the table (a label: see `score` for the threshold)
    difficulty: int | None
    object_id: str | None
    xyxy: tuple[float, float, float, float]  # pixels
    class_id: int | None  # the model's class behind a detection (a paired rider: bicycle)
    iou_threshold: float  # what a match of this type needs under the protocol
    range_m: float | None = None  # metres from the car (a rider's: its bicycle's, as the range slices take it)


def segment_matches(segment: SegmentResults, class_map: ClassMap, types: list[int], protocol: Protocol) -> list[Match]:
    """Per image in order: its detections (best first), then its labels."""
    rows = rows_by_image(segment.detections.keys)
    found = segment.detections
    out: list[Match] = []
    for key in sorted(segment.images, key=lambda k: k.order):
        index = rows.get(key, np.zeros(0, np.int64))
        labels = segment.labels.get(key) or Labels.empty()
        found_ranges = _ranges(None if found.range_m is None else found.range_m[index], len(index))
        label_ranges = _ranges(segment.label_ranges.get(key), len(labels))
        frame = match_frame(found.xyxy[index], found.scores[index], found.class_ids[index], labels, class_map, types,
                            protocol)
        boxes, matches = frame.boxes, frame.matches
        # as Python numbers once per image (a tiled run has hundreds of boxes an image)
        types_of, scores, xyxy = boxes.types.tolist(), boxes.scores.tolist(), boxes.xyxy.tolist()
        class_ids, label_of, ious = boxes.class_ids.tolist(), matches.label_of.tolist(), matches.iou.tolist()
        sources = boxes.rows
        detections = []
        for j, i in enumerate(frame.detections.tolist()):
            label, waymo_type = label_of[j], types_of[i]
            detections.append(Match(key, "detection", waymo_type, scores[i], None if label < 0 else ious[j], label >= 0,
                                    None, None if label < 0 else labels.object_ids[frame.labels[label]],
                                    _box(xyxy[i]), class_ids[i], protocol.iou(waymo_type),
                                    found_ranges[sources[i][-1]] if i < len(sources) else None))
        out.extend(sorted(detections, key=lambda m: -(m.score or 0.0)))
        for g, label_index in enumerate(frame.labels):
            j = int(matches.detection_of[g])
            waymo_type = int(labels.types[label_index])
            out.append(Match(key, "label", waymo_type, None if j < 0 else float(boxes.scores[frame.detections[j]]),
                             None if j < 0 else float(matches.iou[j]), j >= 0, int(labels.difficulty[label_index]),
                             labels.object_ids[label_index], _box(labels.xyxy[label_index]), None,
                             protocol.iou(waymo_type), label_ranges[label_index]))
    return out


def _ranges(values: np.ndarray | None, n: int) -> list[float | None]:
    """Ranges in metres as Python numbers, None where not known (no column, NaN, or a count that
    does not fit the boxes)."""
    if values is None or len(values) != n:
        return [None] * n
    return [float(v) if np.isfinite(v) else None for v in np.asarray(values, np.float64)]


def _box(values: np.ndarray | list[float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in values)
    return x0, y0, x1, y1
