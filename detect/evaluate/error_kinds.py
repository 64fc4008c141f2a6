"""TIDE's six error kinds (Bolya et al., ECCV 2020; tidecv 1.0.1): how much AP50 each kind of mistake
costs, as the AP a type gains when that kind alone is fixed.

Per image, TIDE keeps the 100 best-scoring detections over every type (COCO keeps 100 per type)
and matches them to the labels at IoU 0.5 with COCO's rule (`detect.core.matching.match_image`,
the one matcher; a label to ignore, a LEVEL_2 label at LEVEL_1, is TIDE's ignore region). Each
detection that matched no label, or one to ignore, gets the first kind that fits, in TIDE's order,
from its IoU with the image's labels (not those to ignore):
- localisation: its best IoU with a label of its type is in [0.1, 0.5];
- classification: it overlaps a label of another type at IoU >= 0.5;
- duplicate: it overlaps a label of its type that another detection matched, at IoU >= 0.5;
- background: it overlaps no label of any type above IoU 0.1 (or the image has none);
- both: anything else (a wrong type *and* a poor box);
and a label no detection matched and none of the first two kinds points at is `missed`.

Fixing a kind: a localisation or classification error becomes a hit of the label it points at
(of that label's type) when the label was not matched and it is the best-scoring error pointing
at it; any other error of the kind is removed; fixing `missed` removes those labels from the
count. AP is TIDE's own (its 101 recall points `k / 100`, through COCO's accumulation,
`detect.evaluate.pooled.precision_at_recalls`), with TIDE's order of tied scores: in a fixed
set, the errors' points before the hits'. A kind's dAP is `max(0, AP fixed - AP)` per type, and
for the mean, the mean over the types with labels of both (tidecv takes the mean over every
category present, so a type with detections but no labels, as SIGN on Waymo's camera labels,
enters its mean at AP 0; run it over the labelled types' detections to compare).

Where TIDE's matching differs from COCO's, beyond the hundred kept per image: a detection is
ignored when its IoU over a label to ignore is above 0.5 (COCO: at least 0.5), and of two labels
it overlaps at exactly the same IoU it takes the first (COCO: the last). Both need two IoUs to be
exactly equal; the tests hold the numbers to tidecv's on real frames.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.boxes import box_iou
from detect.core.matching import COCO_PROTOCOL, ImageMatches, match_image
from detect.core.records import WaymoType
from detect.evaluate.pooled import precision_at_recalls

KINDS = ("classification", "localisation", "both", "duplicate", "background", "missed")
CLASSIFICATION, LOCALISATION, BOTH, DUPLICATE, BACKGROUND, MISSED = range(len(KINDS))
HIT = -1  # the kind of a detection that matched a label
FOREGROUND, BACKGROUND_IOU = 0.5, 0.1  # TIDE's IoUs: a match, and the most a background error overlaps
MAX_DETECTIONS = 100  # per image, over every type (TIDE's rule)
RECALLS = np.arange(101) / 100  # TIDE's recall points, k / 100 (COCO's linspace differs in the last bit)
MEAN = "mean"

# One detection TIDE kept, in the order of images and, in each, of score.
_POINT = np.dtype([("score", np.float64), ("type", np.int8), ("true", np.bool_), ("counted", np.bool_),
                   ("kind", np.int8), ("fix_type", np.int8)])


@dataclasses.dataclass(frozen=True, eq=False)
class ImageErrors:
    """TIDE's verdicts on one image. Per detection kept (`order`: indices of the given detections,
    best first, at most 100): whether it matched a label (`true`), whether it counts (`counted`:
    not on a label to ignore), its error kind (`HIT` when it matched) and the type it becomes a
    hit of when its kind is fixed (`fix_type`, -1: it is removed). Per label: whether it is a
    missed label (`missed`; labels to ignore never are)."""

    order: np.ndarray
    true: np.ndarray
    counted: np.ndarray
    kind: np.ndarray
    fix_type: np.ndarray
    missed: np.ndarray


def image_errors(xyxy: np.ndarray, scores: np.ndarray, types: np.ndarray, gt_xyxy: np.ndarray, gt_types: np.ndarray,
                 gt_ignore: np.ndarray | None = None, matches: ImageMatches | None = None) -> ImageErrors:
    """TIDE on one image. `matches`: COCO's matching of these same detections (in the given
    order) at IoU 0.5 with no label ignored, when it was already made; it is TIDE's own when the
    image has at most 100 detections and no label to ignore, and is then reused."""
    xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
    scores = np.asarray(scores, np.float64).reshape(-1)
    types = np.asarray(types, np.int64).reshape(-1)
    gt_xyxy = np.asarray(gt_xyxy, np.float64).reshape(-1, 4)
    gt_types = np.asarray(gt_types, np.int64).reshape(-1)
    ignore = np.zeros(len(gt_types), bool) if gt_ignore is None else np.asarray(gt_ignore, bool).reshape(-1)
    order = np.argsort(-scores, kind="stable")[:MAX_DETECTIONS]
    if matches is not None and len(order) == len(scores) and not ignore.any():
        label_of = matches.label_of[order]
    else:
        label_of = match_image(xyxy[order], scores[order], types[order], gt_xyxy, gt_types, COCO_PROTOCOL,
                               ignore).label_of
    d_xyxy, d_types = xyxy[order], types[order]
    matched = label_of >= 0
    true = matched.copy()
    true[matched] = ~ignore[label_of[matched]]
    counted = ~(matched & ~true)
    real = np.flatnonzero(~ignore)
    used = np.zeros(len(gt_types), bool)
    used[label_of[true]] = True
    kind = np.full(len(order), HIT, np.int8)
    fix_type = np.full(len(order), -1, np.int8)
    missed = ~used & ~ignore
    errors = np.flatnonzero(~true)
    if not len(errors):
        return ImageErrors(order, true, counted, kind, fix_type, missed)
    if not len(real):
        kind[errors] = BACKGROUND
        return ImageErrors(order, true, counted, kind, fix_type, missed)
    iou = box_iou(d_xyxy[errors], gt_xyxy[real])  # [errors, real labels]
    same = d_types[errors][:, None] == gt_types[real][None, :]
    own = np.where(same, iou, 0.0)
    other = np.where(same, 0.0, iou)
    taken = np.where(same & used[real][None, :], iou, 0.0)
    rows = np.arange(len(errors))
    best_own, best_other = own.argmax(axis=1), other.argmax(axis=1)
    own_iou, other_iou = own[rows, best_own], other[rows, best_other]
    is_loc = (own_iou >= BACKGROUND_IOU) & (own_iou <= FOREGROUND)
    is_cls = ~is_loc & (other_iou >= FOREGROUND)
    is_dupe = ~is_loc & ~is_cls & (taken.max(axis=1) >= FOREGROUND)
    is_bkg = ~is_loc & ~is_cls & ~is_dupe & (iou.max(axis=1) <= BACKGROUND_IOU)
    kind[errors] = np.select([is_loc, is_cls, is_dupe, is_bkg], [LOCALISATION, CLASSIFICATION, DUPLICATE, BACKGROUND],
                             BOTH)
    # A label a localisation or classification error points at is no missed label; if nothing
    # matched it, fixing the kind makes the best-scoring such error its hit (the first, in score order).
    target = real[np.where(is_loc, best_own, best_other)]
    claimed = set()
    for e in np.flatnonzero(is_loc | is_cls).tolist():
        label = int(target[e])
        missed[label] = False
        if not used[label] and label not in claimed:
            claimed.add(label)
            fix_type[errors[e]] = gt_types[label]
    return ImageErrors(order, true, counted, kind, fix_type, missed)


class ErrorKinds:
    """TIDE's data over many images (one difficulty level), added one image at a time in order;
    13 bytes a kept detection, counts per type for the labels."""

    def __init__(self, types: list[int]) -> None:
        self.types = list(types)
        self._chunks: list[np.ndarray] = []
        self._pending: list[np.ndarray] = []
        self.labels = np.zeros(len(self.types), np.int64)  # not ignored
        self.missed = np.zeros(len(self.types), np.int64)

    def add(self, found: ImageErrors, scores: np.ndarray, types: np.ndarray, gt_types: np.ndarray,
            gt_ignore: np.ndarray | None = None) -> None:
        """One image's `image_errors`, with the scores and types of its detections and labels."""
        gt_types = np.asarray(gt_types, np.int64).reshape(-1)
        if gt_ignore is not None:
            gt_types = np.where(np.asarray(gt_ignore, bool).reshape(-1), -1, gt_types)
        for k, waymo_type in enumerate(self.types):
            mine = gt_types == waymo_type
            self.labels[k] += int(np.count_nonzero(mine))
            self.missed[k] += int(np.count_nonzero(mine & found.missed))
        if not len(found.order):
            return
        part = np.zeros(len(found.order), _POINT)
        part["score"] = np.asarray(scores, np.float64)[found.order]
        part["type"] = np.asarray(types, np.int64)[found.order]
        part["true"], part["counted"] = found.true, found.counted
        part["kind"], part["fix_type"] = found.kind, found.fix_type
        self._pending.append(part)
        if len(self._pending) >= 256:
            self._flush()

    def merge(self, other: ErrorKinds) -> None:
        """`other`'s images after this pool's own."""
        self._flush()
        other._flush()
        self._chunks.extend(other._chunks)
        self.labels += other.labels
        self.missed += other.missed

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(np.concatenate(self._pending))
            self._pending = []

    def scores(self) -> dict[str, dict[str, float]]:
        """Per type with labels (by name) and their `mean`: each kind's dAP50 (0..1); {} without labels."""
        self._flush()
        points = np.concatenate(self._chunks) if self._chunks else np.zeros(0, _POINT)
        labelled = [k for k in range(len(self.types)) if self.labels[k]]
        if not labelled:
            return {}
        base = [self._ap(points[points["counted"]], k, self.labels[k], fixed=False) for k in labelled]
        out: dict[str, dict[str, float]] = {WaymoType(self.types[k]).name: {} for k in labelled}
        out[MEAN] = {}
        for kind, name in enumerate(KINDS):
            fixed, labels = _fixed(points, kind), self.labels - (self.missed if kind == MISSED else 0)
            aps = [self._ap(fixed, k, labels[k], fixed=True) for k in labelled]
            for k, ap, before in zip(labelled, aps, base, strict=True):
                out[WaymoType(self.types[k]).name][name] = max(0.0, ap - before)
            present = [ap for k, ap in zip(labelled, aps, strict=True) if labels[k] or np.any(fixed["type"] == self.types[k])]
            out[MEAN][name] = max(0.0, (float(np.mean(present)) if present else 0.0) - float(np.mean(base)))
        return out

    def _ap(self, points: np.ndarray, k: int, labels: int, fixed: bool) -> float:
        """TIDE's AP of type `k` over `points` (in order), tied scores in TIDE's order: the given
        order, or in a fixed set the errors' points before the hits' (tidecv pushes them first)."""
        if labels <= 0:
            return 0.0
        mine = points[points["type"] == self.types[k]]
        keys = (np.arange(len(mine)), *((mine["true"] & (mine["kind"] == HIT),) if fixed else ()), -mine["score"])
        ranked = mine[np.lexsort(keys)]
        tp = np.cumsum(ranked["true"], dtype=np.float64)
        fp = np.cumsum(~ranked["true"], dtype=np.float64)
        return float(precision_at_recalls(tp, fp, labels, RECALLS).mean())


def _fixed(points: np.ndarray, kind: int) -> np.ndarray:
    """The points with every error of `kind` fixed: made a hit of `fix_type`, or removed."""
    if kind == MISSED:
        return points[points["counted"]]
    chosen = points["kind"] == kind
    keep = (points["counted"] & ~chosen) | (chosen & (points["fix_type"] >= 0))
    fixed = points[keep].copy()
    moved = fixed["kind"] == kind
    fixed["type"][moved] = fixed["fix_type"][moved]
    fixed["true"][moved] = True
    return fixed
