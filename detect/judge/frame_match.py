"""What the evaluation makes of one frame's boxes: hits, false alarms, missed labels.

The one place a detection is judged; the pictures (`detect.render.verdicts`), `matches.parquet`
(`detect.evaluate.matches`), `detect compare` (`detect.compare.stats`) read its verdicts. The
model's boxes become Waymo types as the class map says (`ClassMap.to_waymo`: a rider and its
bicycle one CYCLIST), and COCO's per-image rule (`detect.core.matching`, at the protocol's IoU,
every label counted, as at LEVEL_2) matches them to the labels of the types the model can output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.core.matching import ImageMatches, Protocol, match_image
from detect.core.records import Detections, Labels
from detect.model.classmap import ClassMap, WaymoBoxes

# The verdicts: a detection that matched a label, one that matched none, a label no detection at
# the threshold matched, and a detection not judged (a model class no Waymo type covers, or a type
# these rules do not judge: one the segment has no labels of).
HIT, FALSE_ALARM, MISSED, OTHER = "hit", "false alarm", "missed label", "other class"


@dataclasses.dataclass(frozen=True, eq=False)
class FrameMatch:
    """One image's detections in Waymo types, matched to its labels: `detections` are the indices
    of `boxes` evaluated (types the model is judged on), `labels` those of the labels kept, and
    `matches` is over those two subsets."""

    boxes: WaymoBoxes
    detections: np.ndarray
    labels: np.ndarray
    matches: ImageMatches

    @property
    def hits(self) -> np.ndarray:
        """Per evaluated detection (`detections`): whether it matched a label."""
        return self.matches.label_of >= 0

    def labels_found(self, threshold: float) -> np.ndarray:
        """Per kept label (`labels`): whether a detection scoring at least `threshold` matched it."""
        found = np.zeros(len(self.labels), bool)
        scores = self.boxes.scores[self.detections]
        label_of = self.matches.label_of
        found[label_of[(label_of >= 0) & (scores >= threshold)]] = True
        return found

    def under(self, protocol: Protocol, labels: Labels) -> FrameMatch:
        """The same boxes and labels (`labels`: the image's, as given to `match_frame`) matched under
        another protocol: the class map is not applied twice."""
        return FrameMatch(self.boxes, self.detections, self.labels,
                          _match(self.boxes, self.detections, labels, self.labels, protocol))

    def unjudged_rows(self, rows: int) -> list[int]:
        """The input rows (of `rows`) no judged box stands for: classes the map leaves out, and those
        whose Waymo type is not judged (a stop sign where the labels have no SIGN)."""
        covered = {row for i in self.detections.tolist() for row in self.boxes.rows[i]}
        return [row for row in range(rows) if row not in covered]


@dataclasses.dataclass(frozen=True)
class ErrorRules:
    """How a frame's boxes are judged: the class map, the types the model can output, the protocol."""

    class_map: ClassMap
    types: tuple[int, ...]
    protocol: Protocol

    def match(self, detections: Detections, labels: Labels) -> FrameMatch:
        return match_frame(detections.xyxy, detections.scores, detections.class_ids, labels, self.class_map,
                           self.types, self.protocol)


def match_frame(xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray, labels: Labels, class_map: ClassMap,
                types: Sequence[int], protocol: Protocol) -> FrameMatch:
    """The model's boxes as Waymo types, and COCO's matching against the labels of `types`, every
    label counted: what `detect eval`, `detect compare` and the pictures all use."""
    boxes = class_map.to_waymo(xyxy, scores, class_ids)
    detections = np.flatnonzero(np.isin(boxes.types, list(types)))
    kept = np.flatnonzero(np.isin(labels.types.astype(np.int64), list(types)))
    return FrameMatch(boxes, detections, kept, _match(boxes, detections, labels, kept, protocol))


def _match(boxes: WaymoBoxes, detections: np.ndarray, labels: Labels, kept: np.ndarray,
           protocol: Protocol) -> ImageMatches:
    return match_image(boxes.xyxy[detections], boxes.scores[detections], boxes.types[detections], labels.xyxy[kept],
                       labels.types[kept], protocol)
