"""The confusion matrix at the drawing threshold: what each label became, and the false alarms.

Rows are the labels' Waymo types and background, columns the detections' types and background:
LEVEL_2 (every label), IoU 0.5, detections at or above the drawing threshold. First COCO's rule
matches each type's detections to its labels (the frame's matching, `detect.judge`): those hits
are the diagonal, eval's hits at IoU 0.5. Then the same rule, blind to type, matches the false
alarms to the labels still unmatched: a label taken so by a detection of another type is counted
in that type's column (what it became); a label still unmatched is in the background column
(missed). Each false alarm (a detection that matched no label of its type) is in the background
row, in its type's column, wherever it landed. So each row of a type sums to its labels, and the
background row to the false alarms; a detection of one type on a label of another is counted
twice, once as what the label became and once as a false alarm of its type.

Beside it, per model class: which Waymo type its detections became and what they landed on.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.matching import COCO_PROTOCOL, match_image
from detect.core.records import Labels, WaymoType
from detect.judge import FrameMatch
from detect.model.coco_classes import label_for

BACKGROUND = "background"


@dataclasses.dataclass(frozen=True)
class ClassLanding:
    """One model class's detections at the threshold: the Waymo type they became, and how many
    landed on a label of each type (`on`, by name: a hit of their type, or a label of another
    type they took) or on none (`background`)."""

    class_id: int
    name: str
    type: str
    detections: int
    on: dict[str, int]


class Confusion:
    """The matrix and the classes' landings, added one image at a time."""

    def __init__(self, types: list[int], threshold: float) -> None:
        self.types = list(types)
        self.threshold = float(threshold)
        self.matrix = np.zeros((len(self.types) + 1, len(self.types) + 1), np.int64)  # [label row, detection column]
        self._classes: dict[tuple[int, int], np.ndarray] = {}  # (model class, Waymo type) -> detections per row

    def add(self, frame: FrameMatch, labels: Labels) -> None:
        """One image: `frame` is its boxes matched to `labels` by COCO's rule at IoU 0.5 (`detect.judge`)."""
        boxes, matches = frame.boxes, frame.matches
        scores = boxes.scores[frame.detections]
        shown = matches.evaluated & (scores >= self.threshold)
        hit = shown & (matches.label_of >= 0)
        landed = np.where(hit, matches.label_of, -1)  # the label each shown detection is on
        false_alarms = np.flatnonzero(shown & ~hit)
        left_labels = np.flatnonzero(~frame.labels_found(self.threshold))
        if len(false_alarms) and len(left_labels):  # the same rule, blind to type, over what is left
            across = match_image(boxes.xyxy[frame.detections][false_alarms], scores[false_alarms],
                                 np.zeros(len(false_alarms), np.int64), labels.xyxy[frame.labels][left_labels],
                                 np.zeros(len(left_labels), np.int64), COCO_PROTOCOL).label_of
            landed[false_alarms[across >= 0]] = left_labels[across[across >= 0]]
        background = len(self.types)
        rows = np.array([self._index(t) for t in labels.types[frame.labels].astype(np.int64)], np.int64)
        columns = np.array([self._index(t) for t in boxes.types[frame.detections]], np.int64)
        on = landed >= 0
        became = np.full(len(rows), background, np.int64)  # each label's column: what took it, or missed
        became[landed[on]] = columns[on]
        np.add.at(self.matrix, (rows, became), 1)
        np.add.at(self.matrix, (np.full(len(false_alarms), background), columns[false_alarms]), 1)
        class_ids = boxes.class_ids[frame.detections]
        for d in np.flatnonzero(shown).tolist():
            row = int(rows[landed[d]]) if landed[d] >= 0 else background
            key = (int(class_ids[d]), int(self.types[columns[d]]))
            landing = self._classes.setdefault(key, np.zeros(len(self.types) + 1, np.int64))
            landing[row] += 1

    def merge(self, other: Confusion) -> None:
        self.matrix += other.matrix
        for key, counts in other._classes.items():
            self._classes[key] = self._classes.get(key, np.zeros(len(self.types) + 1, np.int64)) + counts

    def _index(self, waymo_type: int) -> int:
        return self.types.index(int(waymo_type))

    @property
    def names(self) -> list[str]:
        """The rows' and the columns' names: the types, then background."""
        return [WaymoType(t).name for t in self.types] + [BACKGROUND]

    def classes(self) -> list[ClassLanding]:
        """Per model class and type, most detections first."""
        out = [ClassLanding(class_id, label_for(class_id), WaymoType(waymo_type).name, int(counts.sum()),
                            {name: int(n) for name, n in zip(self.names, counts.tolist(), strict=True) if n})
               for (class_id, waymo_type), counts in self._classes.items()]
        return sorted(out, key=lambda c: (-c.detections, c.class_id))

    def to_json(self) -> dict[str, object]:
        return {"level": "LEVEL_2", "iou": COCO_PROTOCOL.iou(0), "threshold": self.threshold,
                "rows": "labels (background: the false alarms)",
                "columns": "detections (background: the labels missed)", "names": self.names,
                "matrix": self.matrix.tolist(), "classes": [dataclasses.asdict(c) for c in self.classes()]}
