"""The tracking side of `detect compare`: HOTA, MOTA and IDF1 per Waymo type for A and B on the
common images, as numbers the bootstrap can resample.

Each side's tracks are scored as `detect eval` scores them (one sequence per segment, camera and
type, TrackEval's metrics at the protocol's IoU, pooled over sequences), on the images both
processed. A resample (`detect.core.resample`, the same resamples as AP's) weights each image's
counts (`detect.track.frame_scores`: what the image adds to the pooled scores, the matching and the
association scores decided on the whole sequence, as TrackEval decides them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.compare.comparison import Change, TrackingComparison
from detect.compare.sides import Pairing, Side
from detect.core.matching import Protocol
from detect.core.names import printable
from detect.core.records import FrameKey, WaymoType
from detect.core.resample import FrameIndex
from detect.evaluate.tracking import has_object_ids, image_sequences
from detect.model.classmap import ClassMap
from detect.track import FrameCounts, TooManyIds, frame_counts, weighted_scores

METRICS = ("HOTA", "MOTA", "IDF1")


@dataclasses.dataclass(frozen=True, eq=False)
class SideCounts:
    """One side's per-image counts of one type, and the frame (of the comparison's index) of each."""

    counts: FrameCounts
    frame: np.ndarray

    def scores(self, weights: np.ndarray | None = None) -> np.ndarray:
        """(HOTA, MOTA, IDF1) over the frames taken `weights` times each (all once for None)."""
        return np.array(weighted_scores(self.counts, None if weights is None else weights[self.frame]))


@dataclasses.dataclass(frozen=True, eq=False)
class TrackedType:
    """A Waymo type both sides track and the labels cover."""

    waymo_type: int
    a: SideCounts
    b: SideCounts

    def difference(self, weights: np.ndarray) -> np.ndarray:
        """B - A of HOTA, MOTA and IDF1 over frames taken `weights` times each."""
        return self.b.scores(weights) - self.a.scores(weights)

    def rows(self, intervals: Sequence[tuple[float, float] | None], blocks: int) -> list[TrackingComparison]:
        """The type's HOTA, MOTA and IDF1 rows, with each metric's interval."""
        values_a, values_b = self.a.scores(), self.b.scores()
        return [TrackingComparison(WaymoType(self.waymo_type).name, metric,
                                   Change.of(float(values_a[m]), float(values_b[m]), intervals[m], blocks))
                for m, metric in enumerate(METRICS)]


def tracked_types(a: Side, b: Side, pairing: Pairing, index: FrameIndex, class_map: ClassMap,
                  protocol: Protocol) -> tuple[list[TrackedType], list[str]]:
    """Per type both sides track and the labels cover, both sides' counts; a note when there is
    nothing to compare (a side without track ids; labels without object ids say nothing)."""
    if not pairing.labels or not has_object_ids(pairing.labels):
        return [], []
    types = sorted(set(a.types) & set(b.types))
    segments = {k.segment_context_name for k in pairing.common}
    untracked = [side.label for side in (a, b) if not any(_tracked(side, s) for s in segments)]
    if untracked:
        verb = "have" if len(untracked) > 1 else "has"
        return [], [f"{' and '.join(untracked)} {verb} no track ids (one timestamp, --no-track, or a run from "
                    f"before tracking: `detect track`): no tracking comparison"]
    # a segment only one side tracked (the other's ids left out, or never written) would score that
    # side's labels there and not the other's: both sides are compared on the segments both tracked
    one_sided = sorted(s for s in segments if _tracked(a, s) != _tracked(b, s))
    common = [k for k in pairing.common if k.segment_context_name not in one_sided]
    try:
        counts_a, counts_b = (_counts(side, common, pairing, index, class_map, types, protocol) for side in (a, b))
    except TooManyIds as err:
        return [], [f"{err} in a camera sequence: no tracking comparison"]
    notes = [f"segment {printable(s, 64)}: only {'A' if _tracked(a, s) else 'B'} has track ids there; tracking "
             f"compared without it" for s in one_sided]
    return [TrackedType(t, counts_a[t], counts_b[t]) for t in types
            if counts_a[t].counts.labels.sum() and counts_b[t].counts.labels.sum()], notes  # labels of it on the images


def _tracked(side: Side, segment: str) -> bool:
    """Whether the side's table of `segment` has track ids it can use."""
    rows = side.segments[segment].detections
    return rows.track_ids is not None and bool((rows.track_ids >= 0).any())


def _counts(side: Side, common: Sequence[FrameKey], pairing: Pairing, index: FrameIndex, class_map: ClassMap,
            types: list[int], protocol: Protocol) -> dict[int, SideCounts]:
    """Per type: the side's per-image counts on the `common` images."""
    by_segment: dict[str, list[FrameKey]] = {}
    for key in common:
        by_segment.setdefault(key.segment_context_name, []).append(key)
    parts: dict[int, list[FrameCounts]] = {t: [] for t in types}
    frames: dict[int, list[np.ndarray]] = {t: [] for t in types}
    for name, keys in by_segment.items():
        rows = side.segments[name].detections
        for sequence in image_sequences(rows, keys, pairing.labels, class_map, types):
            parts[sequence.waymo_type].append(frame_counts(sequence.frames, protocol.iou(sequence.waymo_type)))
            frames[sequence.waymo_type].append(np.array([index.number(k) for k in sequence.keys], np.int64))
    return {t: SideCounts(FrameCounts.concat(parts[t]), np.concatenate([np.zeros(0, np.int64), *frames[t]]))
            for t in types}
