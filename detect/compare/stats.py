"""The numbers of a comparison: AP per type for A and B on the same images, the paired bootstrap
of their difference, which labeled objects one found and the other missed, and how the two agree
box for box.

Each image is matched on its own (`detect.judge.match_frame`: COCO's rule at the
protocol's IoU, the same matching `detect eval` and the pictures use), so AP over any multiset of
frames is COCO's accumulation over those frames' records: detections in score order (ties in image
order), cumulative hits and false alarms, precision made monotone, sampled at 101 recall points.
Over all the common images it is `detect eval`'s AP on them. The bootstrap resamples frames (a
frame: every camera of one timestamp of one segment, as they share the scene), the same resample
for both sides, and recomputes both APs: the 2.5th and 97.5th percentiles of B - A are the 95%
interval; a difference whose interval excludes 0 is larger than the frame-to-frame noise.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.compare.sides import Side
from detect.core.frame_rows import rows_by_image
from detect.core.matching import COCO_PROTOCOL, Protocol, match_image
from detect.core.records import FrameKey, Labels, WaymoType
from detect.evaluate.coco import image_id
from detect.evaluate.pooled import precision_at_recalls
from detect.evaluate.results import SegmentResults
from detect.judge import match_frame
from detect.model.classmap import ClassMap

RECALLS = np.linspace(0.0, 1.0, 101)  # COCO's recall thresholds (the library's params.recThrs)
AGREEMENT_IOU = 0.5


@dataclasses.dataclass(frozen=True, eq=False)
class Records:
    """One side's evaluated detections of one type: frame and image order, score, hit; labels per frame."""

    frame: np.ndarray
    image: np.ndarray
    score: np.ndarray
    hit: np.ndarray
    labels: np.ndarray  # per frame

    @classmethod
    def build(cls, rows: list[tuple[int, int, float, bool]], labels: np.ndarray) -> Records:
        array = np.array(rows, dtype=np.float64).reshape(-1, 4)
        order = np.lexsort((np.arange(len(array)), array[:, 1], -array[:, 2]))  # score, then image order
        array = array[order]
        return cls(array[:, 0].astype(np.int64), array[:, 1].astype(np.int64), array[:, 2], array[:, 3] > 0, labels)


def average_precision(records: Records, weights: np.ndarray | None = None) -> float | None:
    """COCO's AP over frames taken `weights` times each (all once for None); None without labels."""
    w = np.ones(len(records.labels)) if weights is None else np.asarray(weights, np.float64)
    labels = float(np.dot(w, records.labels))
    if labels <= 0:
        return None
    per = w[records.frame]
    tp = np.cumsum(per * records.hit)
    fp = np.cumsum(per * ~records.hit)
    return float(precision_at_recalls(tp, fp, labels, RECALLS).mean())


def bootstrap_difference(a: Records, b: Records, replicates: int, seed: int) -> np.ndarray:
    """B's AP minus A's over `replicates` resamples of the frames (the same resample for both)."""
    frames = len(a.labels)
    rng = np.random.default_rng(seed)
    out = np.empty(replicates)
    for r in range(replicates):
        weights = np.bincount(rng.integers(0, frames, frames), minlength=frames).astype(np.float64)
        ap_a, ap_b = average_precision(a, weights), average_precision(b, weights)
        out[r] = np.nan if ap_a is None or ap_b is None else ap_b - ap_a
    return out


@dataclasses.dataclass(frozen=True)
class Agreement:
    """How A's and B's boxes of one type pair up (IoU 0.5): pairs, boxes without a partner on each
    side, and each pair's (A score, B score)."""

    pairs: int = 0
    only_a: int = 0
    only_b: int = 0
    scores: tuple[tuple[float, float], ...] = ()
    alone: tuple[Mark, ...] = ()  # of one image: the boxes without a partner (not added up over images)


@dataclasses.dataclass(frozen=True)
class Mark:
    """An object one side found and the other did not: a label one side hit, or (without labels) a
    box without a partner on the other side; pixel xyxy of the image."""

    xyxy: tuple[float, float, float, float]
    found_by: str  # "A" or "B"
    type_name: str


@dataclasses.dataclass(frozen=True)
class Disagreement:
    """One image where the two sides differ: by how many objects (or boxes), what they are, and
    which (`marks`, drawn on the A | B pictures)."""

    count: int
    key: FrameKey
    what: str
    marks: tuple[Mark, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class Collected:
    """Per type: both sides' records (labeled types a side outputs), the labels each found; per
    image: the boxes each drew and the pairs they share; per image the disagreement."""

    frames: int
    records: dict[str, dict[int, Records]]  # side -> type -> records
    found: dict[int, np.ndarray]  # type -> [labels, 2] bool: found by A, by B at their thresholds
    agreement: dict[int, Agreement]  # type -> how A's and B's boxes pair up
    drawn: dict[str, np.ndarray]  # side -> boxes drawn per image
    disagreement: list[Disagreement]  # most first


def collect(a: Side, b: Side, common: list[FrameKey], labels: dict[FrameKey, Labels] | None, class_map: ClassMap,
            protocol: Protocol = COCO_PROTOCOL) -> Collected:
    """Everything per image, in one pass over the common images (each side's segments, the types
    its model outputs and its drawing threshold)."""
    frame_of: dict[tuple[str, int], int] = {}
    for key in common:
        frame_of.setdefault((key.segment_context_name, key.frame_timestamp_micros), len(frame_of))
    # Ties in score are broken as COCO breaks them: in the order of the images' COCO ids.
    ids = np.array([image_id(k) for k in common], np.int64)
    rank = np.empty(len(common), np.int64)
    rank[np.argsort(ids, kind="stable")] = np.arange(len(common))
    sides = {"A": a, "B": b}
    rows = {s: _index(sides[s].segments) for s in sides}
    both_types = sorted(set(a.types) & set(b.types))
    label_types = sorted(set(a.types) | set(b.types))
    recs: dict[str, dict[int, list[tuple[int, int, float, bool]]]] = {s: {t: [] for t in sides[s].types} for s in sides}
    frame_labels = {t: np.zeros(len(frame_of)) for t in label_types}
    found: dict[int, list[tuple[bool, bool]]] = {t: [] for t in both_types}
    agreement = {t: _Tally() for t in both_types}
    drawn = {s: np.zeros(len(common), np.int64) for s in sides}
    disagreement: list[Disagreement] = []
    for n, key in enumerate(common):
        frame = frame_of[(key.segment_context_name, key.frame_timestamp_micros)]
        image_labels = (labels.get(key) or Labels.empty()) if labels else Labels.empty()
        kept: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        hit_labels: dict[str, np.ndarray] = {}
        for s, side in sides.items():
            segment = side.segments[key.segment_context_name]
            index = rows[s][key.segment_context_name].get(key, np.zeros(0, np.int64))
            d = segment.detections
            m = match_frame(d.xyxy[index], d.scores[index], d.class_ids[index], image_labels, class_map, side.types,
                            protocol)
            boxes = m.boxes
            for j, i in enumerate(m.detections):
                if m.matches.evaluated[j]:
                    recs[s][int(boxes.types[i])].append((frame, int(rank[n]), float(boxes.scores[i]), bool(m.hits[j])))
            on = np.zeros(len(image_labels), bool)
            on[m.labels] = m.labels_found(side.threshold)
            hit_labels[s] = on
            above = boxes.scores >= side.threshold
            drawn[s][n] = int(np.count_nonzero(above & np.isin(boxes.types, side.types)))
            kept[s] = (boxes.xyxy[above], boxes.scores[above], boxes.types[above])
        if labels:
            for t in label_types:
                frame_labels[t][frame] += int(np.count_nonzero(image_labels.types == t))
        marks: list[Mark] = []
        for t in both_types:
            of_type = np.flatnonzero(image_labels.types == t)
            for g in of_type:
                found[t].append((bool(hit_labels["A"][g]), bool(hit_labels["B"][g])))
                if hit_labels["A"][g] != hit_labels["B"][g]:
                    marks.append(Mark(_box(image_labels.xyxy[g]), "A" if hit_labels["A"][g] else "B", WaymoType(t).name))
            agree = _agree(kept["A"], kept["B"], t)
            agreement[t].add(agree)
            if not labels:
                marks.extend(agree.alone)
        if marks:
            what = "labeled objects found by one side only" if labels else "boxes without a partner on the other side"
            disagreement.append(Disagreement(len(marks), key, what, tuple(marks)))
    disagreement.sort(key=lambda item: (-item.count, item.key.order))
    records = {s: {t: Records.build(recs[s][t], frame_labels.get(t, np.zeros(len(frame_of)))) for t in recs[s]}
               for s in sides} if labels else {"A": {}, "B": {}}
    return Collected(len(frame_of), records,
                     {t: np.array(v, bool).reshape(-1, 2) for t, v in found.items()},
                     {t: c.agreement() for t, c in agreement.items()},
                     drawn, disagreement)


@dataclasses.dataclass
class _Tally:
    """An `Agreement` being added up, image by image."""

    pairs: int = 0
    only_a: int = 0
    only_b: int = 0
    scores: list[tuple[float, float]] = dataclasses.field(default_factory=list)

    def add(self, image: Agreement) -> None:
        self.pairs, self.only_a, self.only_b = self.pairs + image.pairs, self.only_a + image.only_a, self.only_b + image.only_b
        self.scores.extend(image.scores)

    def agreement(self) -> Agreement:
        return Agreement(self.pairs, self.only_a, self.only_b, tuple(self.scores))


def _agree(a: tuple[np.ndarray, np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray, np.ndarray],
           waymo_type: int) -> Agreement:
    """A's and B's boxes of one type matched to each other (B's in score order take A's, IoU 0.5)."""
    in_a, in_b = a[2] == waymo_type, b[2] == waymo_type
    a_boxes, b_boxes = a[0][in_a], b[0][in_b]
    name = WaymoType(waymo_type).name
    if not len(a_boxes) or not len(b_boxes):
        alone = (*(Mark(_box(x), "A", name) for x in a_boxes), *(Mark(_box(x), "B", name) for x in b_boxes))
        return Agreement(0, len(a_boxes), len(b_boxes), alone=alone)
    agree = Protocol("agreement", "agreement", "-", {}, AGREEMENT_IOU)
    m = match_image(b_boxes, b[1][in_b], np.full(len(b_boxes), waymo_type), a_boxes, np.full(len(a_boxes), waymo_type), agree)
    pairs = tuple((float(a[1][in_a][g]), float(b[1][in_b][j])) for j, g in enumerate(m.label_of) if g >= 0)
    paired_a = {int(g) for g in m.label_of if g >= 0}
    alone = (*(Mark(_box(a_boxes[g]), "A", name) for g in range(len(a_boxes)) if g not in paired_a),
             *(Mark(_box(b_boxes[j]), "B", name) for j, g in enumerate(m.label_of) if g < 0))
    return Agreement(len(pairs), len(a_boxes) - len(pairs), len(b_boxes) - len(pairs), pairs, alone)


def _box(values: np.ndarray) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in values)
    return x0, y0, x1, y1


def _index(segments: dict[str, SegmentResults]) -> dict[str, dict[FrameKey, np.ndarray]]:
    return {name: rows_by_image(segment.detections.keys) for name, segment in segments.items()}
