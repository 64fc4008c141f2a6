"""The numbers of a comparison: AP per type for A and B on the same images under both protocols,
which labeled objects one found and the other missed, and how the two agree box for box.

Each image is matched on its own (`detect.judge.match_frame`: COCO's rule at the protocol's IoU,
the same matching `detect eval` and the pictures use), so AP over any multiset of frames is COCO's
accumulation over those frames' records: detections in score order (ties in image order),
cumulative hits and false alarms, precision made monotone, sampled at 101 recall points. Over all
the common images it is `detect eval`'s AP on them; over a resample of the frames
(`detect.core.resample`) it is that resample's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from detect.compare.sides import Side
from detect.core.frame_rows import rows_by_image
from detect.core.matching import COCO_PROTOCOL, PROTOCOLS, Protocol, match_image
from detect.core.records import FrameKey, Labels, WaymoType
from detect.core.resample import FrameIndex
from detect.evaluate.coco import image_id
from detect.evaluate.pooled import precision_at_recalls
from detect.judge import FrameMatch, match_frame
from detect.model.classmap import ClassMap

RECALLS = np.linspace(0.0, 1.0, 101)  # COCO's recall thresholds (the library's params.recThrs)
AGREEMENT_IOU = 0.5
AGREEMENT = Protocol("agreement", "agreement", "-", {}, AGREEMENT_IOU)


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
    per_frame = np.ones(len(records.labels)) if weights is None else np.asarray(weights, np.float64)
    labels = float(np.dot(per_frame, records.labels))
    if labels <= 0:
        return None
    taken = per_frame[records.frame]
    hits = np.cumsum(taken * records.hit)
    false_alarms = np.cumsum(taken * ~records.hit)
    return float(precision_at_recalls(hits, false_alarms, labels, RECALLS).mean())


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
    """Per side, protocol and type: the records AP is computed from (labeled types the side outputs);
    per type: the labels each found, how A's and B's boxes pair up; per image: the boxes each drew;
    the images where they disagree, most first."""

    records: dict[str, dict[str, dict[int, Records]]]  # side -> protocol name -> type -> records
    found: dict[int, np.ndarray]  # type -> [labels, 2] bool: found by A, by B at their thresholds
    agreement: dict[int, Agreement]  # type -> how A's and B's boxes pair up
    drawn: dict[str, np.ndarray]  # side -> boxes drawn per image
    disagreement: list[Disagreement]  # most first


@dataclasses.dataclass(frozen=True, eq=False)
class _Drawn:
    """The boxes a side drew on one image (at its threshold), as Waymo types."""

    xyxy: np.ndarray
    scores: np.ndarray
    types: np.ndarray

    def of_type(self, waymo_type: int) -> tuple[np.ndarray, np.ndarray]:
        chosen = self.types == waymo_type
        return self.xyxy[chosen], self.scores[chosen]


@dataclasses.dataclass(frozen=True, eq=False)
class _Judged:
    """One side's boxes on one image, judged against the image's labels."""

    matches: dict[str, FrameMatch]  # protocol name -> the matching under it
    found: np.ndarray  # per label of the image: a box at the side's threshold matched it (the chosen protocol)
    drawn: _Drawn
    drawn_count: int  # boxes drawn of the types the side outputs


def collect(a: Side, b: Side, common: list[FrameKey], labels: Mapping[FrameKey, Labels] | None, class_map: ClassMap,
            protocol: Protocol = COCO_PROTOCOL, index: FrameIndex | None = None) -> Collected:
    """One pass over the common images. Each side's boxes on an image are judged against its labels
    under every protocol (for AP) and under `protocol` (which labels it found at its drawing
    threshold); the labels one side found and the other missed, or without labels the boxes without
    a partner, make the image's disagreement. `index` numbers the frames AP's records name (the
    comparison's one index; by default the common images' own)."""
    index = index or FrameIndex.of(common)
    protocols = list(PROTOCOLS.values()) if labels else [protocol]
    sides = {"A": a, "B": b}
    boxes_of = {label: _rows_by_image(side) for label, side in sides.items()}
    coco_order = _coco_order(common)
    tally = _Collecting.start(a, b, protocols, frames=len(index), images=len(common), labeled=bool(labels))
    for n, key in enumerate(common):
        image_labels = (labels.get(key) if labels else None) or Labels.empty()
        judged = {label: _judge(side, boxes_of[label], key, image_labels, class_map, protocols, protocol)
                  for label, side in sides.items()}
        tally.add_records(judged, image_labels, index.number(key), int(coco_order[n]))
        tally.add_drawn(judged, n)
        tally.add_differences(judged, image_labels, key)
    return tally.collected()


@dataclasses.dataclass
class _Collecting:
    """What `collect` adds up, image by image."""

    labeled: bool
    rows: dict[str, dict[str, dict[int, list[tuple[int, int, float, bool]]]]]  # side, protocol, type: AP's rows
    labels_per_frame: dict[int, np.ndarray]  # type -> labels of it per frame
    found: dict[int, list[tuple[bool, bool]]]  # type -> per label: found by A, by B
    agreement: dict[int, _Tally]
    drawn: dict[str, np.ndarray]  # side -> boxes drawn per image
    disagreement: list[Disagreement]

    @classmethod
    def start(cls, a: Side, b: Side, protocols: Sequence[Protocol], frames: int, images: int,
              labeled: bool) -> _Collecting:
        both = sorted(set(a.types) & set(b.types))
        return cls(labeled, {side.label: {p.name: {t: [] for t in side.types} for p in protocols} for side in (a, b)},
                   {t: np.zeros(frames) for t in sorted(set(a.types) | set(b.types))}, {t: [] for t in both},
                   {t: _Tally() for t in both}, {"A": np.zeros(images, np.int64), "B": np.zeros(images, np.int64)}, [])

    def add_records(self, judged: Mapping[str, _Judged], labels: Labels, frame: int, image: int) -> None:
        """The detections AP counts (each type's best 100 on the image, with their hits) and the labels."""
        for side, seen in judged.items():
            for protocol, match in seen.matches.items():
                by_type, boxes = self.rows[side][protocol], match.boxes
                for j, i in enumerate(match.detections):
                    if match.matches.evaluated[j]:
                        by_type[int(boxes.types[i])].append((frame, image, float(boxes.scores[i]), bool(match.hits[j])))
        for waymo_type, per_frame in self.labels_per_frame.items():
            per_frame[frame] += int(np.count_nonzero(labels.types == waymo_type))

    def add_drawn(self, judged: Mapping[str, _Judged], image: int) -> None:
        for side, seen in judged.items():
            self.drawn[side][image] = seen.drawn_count

    def add_differences(self, judged: Mapping[str, _Judged], labels: Labels, key: FrameKey) -> None:
        """Per type both output: which labels each found, how their boxes pair up; the objects one
        side found and the other did not (without labels: the boxes without a partner)."""
        a, b = judged["A"], judged["B"]
        marks: list[Mark] = []
        for waymo_type, found in self.found.items():
            for label in np.flatnonzero(labels.types == waymo_type):
                by_a, by_b = bool(a.found[label]), bool(b.found[label])
                found.append((by_a, by_b))
                if by_a != by_b:
                    marks.append(Mark(_box(labels.xyxy[label]), "A" if by_a else "B", WaymoType(waymo_type).name))
            pairs = _agree(a.drawn, b.drawn, waymo_type)
            self.agreement[waymo_type].add(pairs)
            if not self.labeled:
                marks.extend(pairs.alone)
        if marks:
            what = "labeled objects found by one side only" if self.labeled else "boxes without a partner on the other side"
            self.disagreement.append(Disagreement(len(marks), key, what, tuple(marks)))

    def collected(self) -> Collected:
        records = {side: {protocol: {t: Records.build(rows, self.labels_per_frame[t]) for t, rows in by_type.items()}
                          for protocol, by_type in per_protocol.items()}
                   for side, per_protocol in self.rows.items()} if self.labeled else {"A": {}, "B": {}}
        return Collected(records, {t: np.array(pairs, bool).reshape(-1, 2) for t, pairs in self.found.items()},
                         {t: tally.agreement() for t, tally in self.agreement.items()}, self.drawn,
                         sorted(self.disagreement, key=lambda item: (-item.count, item.key.order)))


def _judge(side: Side, boxes_of: dict[str, dict[FrameKey, np.ndarray]], key: FrameKey, labels: Labels,
           class_map: ClassMap, protocols: Sequence[Protocol], chosen: Protocol) -> _Judged:
    """`side`'s boxes on the image `key`, matched to its labels under each protocol."""
    table = side.segments[key.segment_context_name].detections
    rows = boxes_of[key.segment_context_name].get(key, np.zeros(0, np.int64))
    first = match_frame(table.xyxy[rows], table.scores[rows], table.class_ids[rows], labels, class_map, side.types,
                        protocols[0])
    matches = {p.name: first if _same_iou(p, protocols[0], side.types) else first.under(p, labels) for p in protocols}
    match = matches[chosen.name]
    found = np.zeros(len(labels), bool)
    found[match.labels] = match.labels_found(side.threshold)
    boxes = match.boxes
    above = boxes.scores >= side.threshold
    drawn_count = int(np.count_nonzero(above & np.isin(boxes.types, side.types)))
    return _Judged(matches, found, _Drawn(boxes.xyxy[above], boxes.scores[above], boxes.types[above]), drawn_count)


def _same_iou(one: Protocol, other: Protocol, types: Sequence[int]) -> bool:
    return all(one.iou(t) == other.iou(t) for t in types)


def _coco_order(common: list[FrameKey]) -> np.ndarray:
    """Each image's place in the order of COCO ids: ties in score are broken in it, as COCO breaks them."""
    ids = np.array([image_id(k) for k in common], np.int64)
    order = np.empty(len(common), np.int64)
    order[np.argsort(ids, kind="stable")] = np.arange(len(common))
    return order


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


def _agree(a: _Drawn, b: _Drawn, waymo_type: int) -> Agreement:
    """A's and B's boxes of one type matched to each other (B's in score order take A's, IoU 0.5)."""
    (a_boxes, a_scores), (b_boxes, b_scores) = a.of_type(waymo_type), b.of_type(waymo_type)
    name = WaymoType(waymo_type).name
    if not len(a_boxes) or not len(b_boxes):
        alone = (*(Mark(_box(x), "A", name) for x in a_boxes), *(Mark(_box(x), "B", name) for x in b_boxes))
        return Agreement(0, len(a_boxes), len(b_boxes), alone=alone)
    m = match_image(b_boxes, b_scores, np.full(len(b_boxes), waymo_type), a_boxes, np.full(len(a_boxes), waymo_type),
                    AGREEMENT)
    pairs = tuple((float(a_scores[g]), float(b_scores[j])) for j, g in enumerate(m.label_of) if g >= 0)
    paired_a = {int(g) for g in m.label_of if g >= 0}
    alone = (*(Mark(_box(a_boxes[g]), "A", name) for g in range(len(a_boxes)) if g not in paired_a),
             *(Mark(_box(b_boxes[j]), "B", name) for j, g in enumerate(m.label_of) if g < 0))
    return Agreement(len(pairs), len(a_boxes) - len(pairs), len(b_boxes) - len(pairs), pairs, alone)


def _box(values: np.ndarray) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in values)
    return x0, y0, x1, y1


def _rows_by_image(side: Side) -> dict[str, dict[FrameKey, np.ndarray]]:
    """Per segment of the side, per image: its rows of the detections table."""
    return {name: rows_by_image(segment.detections.keys) for name, segment in side.segments.items()}


@dataclasses.dataclass(frozen=True, eq=False)
class PairedAP:
    """A's and B's records of one type under one protocol (None: the side cannot output the type)."""

    a: Records | None
    b: Records | None

    def values(self, weights: np.ndarray | None = None) -> tuple[float | None, float | None]:
        ap_a = None if self.a is None else average_precision(self.a, weights)
        return ap_a, None if self.b is None else average_precision(self.b, weights)

    def difference(self, weights: np.ndarray) -> list[float]:
        """[B's AP - A's] over frames taken `weights` times each; [NaN] where either is undefined."""
        ap_a, ap_b = self.values(weights)
        return [np.nan if ap_a is None or ap_b is None else ap_b - ap_a]
