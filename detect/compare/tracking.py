"""The tracking side of `detect compare`: HOTA, MOTA and IDF1 per Waymo type for A and B on the common
images, and the paired bootstrap of their differences.

Each side's tracks are scored as `detect eval` scores them (one sequence per segment, camera and type,
TrackEval's metrics at the protocol's IoU, pooled over sequences), on the images both processed. The
bootstrap is AP's (`detect.compare.stats.bootstrap_difference`): the same unit (a frame: every camera
of one timestamp of one segment), the same seed and so the same resamples; a resample weights each
image's counts (`detect.track.frame_scores`: what the image adds to the pooled scores, the matching
and the association scores decided on the whole sequence, as TrackEval decides them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.compare.comparison import MIN_FRAMES, TrackingComparison
from detect.compare.sides import Pairing, Side
from detect.core.matching import Protocol
from detect.core.names import printable
from detect.core.records import FrameKey, WaymoType
from detect.evaluate.tracking import has_object_ids, image_sequences
from detect.model.classmap import ClassMap
from detect.track import FrameCounts, TooManyIds, frame_counts, weighted_scores

METRICS = ("HOTA", "MOTA", "IDF1")


@dataclasses.dataclass(frozen=True, eq=False)
class _TypeCounts:
    counts: FrameCounts
    frame: np.ndarray  # per row of counts: the comparison's frame index


def compare_tracking(a: Side, b: Side, pairing: Pairing, class_map: ClassMap, protocol: Protocol,
                     replicates: int, seed: int) -> tuple[list[TrackingComparison], list[str]]:
    """The rows (per type both sides track and the labels cover, HOTA, MOTA, IDF1) and a note when
    there is nothing to compare (a side without track ids, labels without object ids)."""
    if not pairing.labels or not has_object_ids(pairing.labels):
        return [], []
    frame_of: dict[tuple[str, int], int] = {}
    for key in pairing.common:
        frame_of.setdefault((key.segment_context_name, key.frame_timestamp_micros), len(frame_of))
    types = sorted(set(a.types) & set(b.types))
    # a segment only one side tracked (the other's ids left out, or never written) would score that
    # side's labels there and not the other's: both sides are compared on the segments both tracked
    segments = {k.segment_context_name for k in pairing.common}
    untracked = [side.label for side in (a, b) if not any(_tracked(side, s) for s in segments)]
    if untracked:
        verb = "have" if len(untracked) > 1 else "has"
        return [], [f"{' and '.join(untracked)} {verb} no track ids (one timestamp, --no-track, or a run from "
                    f"before tracking: `detect track`): no tracking comparison"]
    one_sided = sorted(s for s in segments if _tracked(a, s) != _tracked(b, s))
    common = [k for k in pairing.common if k.segment_context_name not in one_sided]
    try:
        counted = {side.label: _counts(side, common, pairing, class_map, types, protocol, frame_of) for side in (a, b)}
    except TooManyIds as err:
        return [], [f"{err} in a camera sequence: no tracking comparison"]
    notes = [f"segment {printable(s, 64)}: only {'A' if _tracked(a, s) else 'B'} has track ids there; tracking "
             f"compared without it" for s in one_sided]
    out = []
    frames = len(frame_of)
    for waymo_type in types:
        side_a, side_b = counted["A"][waymo_type], counted["B"][waymo_type]
        if not (side_a.counts.labels.sum() and side_b.counts.labels.sum()):
            continue  # no labels of this type on the common images
        values_a, values_b = weighted_scores(side_a.counts), weighted_scores(side_b.counts)
        intervals: list[tuple[float | None, float | None]] = [(None, None)] * len(METRICS)
        if replicates and frames >= MIN_FRAMES:
            diffs = _bootstrap(side_a, side_b, frames, replicates, seed)
            intervals = [(float(lo), float(hi)) for lo, hi in np.percentile(diffs, [2.5, 97.5], axis=0).T]
        for m, metric in enumerate(METRICS):
            out.append(TrackingComparison(WaymoType(waymo_type).name, metric, values_a[m], values_b[m],
                                          values_b[m] - values_a[m], *intervals[m]))
    return out, notes


def _bootstrap(a: _TypeCounts, b: _TypeCounts, frames: int, replicates: int, seed: int) -> np.ndarray:
    """[replicates, metrics]: B - A over resamples of the frames, drawn exactly as AP's bootstrap draws them."""
    rng = np.random.default_rng(seed)
    out = np.empty((replicates, len(METRICS)))
    for r in range(replicates):
        weights = np.bincount(rng.integers(0, frames, frames), minlength=frames).astype(np.float64)
        out[r] = np.subtract(weighted_scores(b.counts, weights[b.frame]), weighted_scores(a.counts, weights[a.frame]))
    return out


def _tracked(side: Side, segment: str) -> bool:
    rows = side.segments[segment].detections
    return rows.track_ids is not None and bool((rows.track_ids >= 0).any())


def _counts(side: Side, common: Sequence[FrameKey], pairing: Pairing, class_map: ClassMap, types: list[int],
            protocol: Protocol, frame_of: dict[tuple[str, int], int]) -> dict[int, _TypeCounts]:
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
            frames[sequence.waymo_type].append(np.array(
                [frame_of[(k.segment_context_name, k.frame_timestamp_micros)] for k in sequence.keys], np.int64))
    return {t: _TypeCounts(FrameCounts.concat(parts[t]), np.concatenate([np.zeros(0, np.int64), *frames[t]]))
            for t in types}


def tracking_lines(rows: Sequence[TrackingComparison]) -> list[str]:
    """The terminal table: per type and metric, A, B, B - A, the interval and the verdict."""
    if not rows:
        return []
    lines = ["tracking (track ids against the labels' object ids; same bootstrap):",
             f"{'type':<11}{'metric':>7}{'A':>8}{'B':>8}{'B - A':>8}  {'95% interval':<18}verdict"]
    for row in rows:
        interval = "-" if row.low is None or row.high is None else f"[{row.low:+.3f}, {row.high:+.3f}]"
        lines.append(f"{row.name:<11}{row.metric:>7}{row.a:>8.3f}{row.b:>8.3f}{row.difference:>+8.3f}  "
                     f"{interval:<18}{row.verdict}")
    return lines
