"""COCO-style numbers per Waymo type: every detection matched by faster-coco-eval (C++ COCOeval),
never by hand; the matches accumulated as COCO does, over the whole run (`detect.evaluate.pooled`).

Matches are pooled across every segment given (one evaluation, not an average of per-segment APs).
For each difficulty level: AP at IoU 0.5, AP at IoU 0.5:0.95, AR at 100 detections, AP by box size
(COCO's small < 32^2 < medium < 96^2 < large pixels), per type and their mean; at LEVEL_2, the same
per camera. Both AP50 (COCO: IoU 0.5 for every type) and Waymo's 2D AP (IoU 0.7 for VEHICLE, 0.5
for the others) come from the same accumulation. The protocol chosen (`detect.core.matching`)
decides the rest: at the run's drawing threshold, precision, recall and F1 from the library's own
matching at the protocol's IoU (COCO matches in score order, so the detections above a threshold
match exactly as they would alone); P/R/F1 at every threshold and the F1-best one
(`detect.evaluate.thresholds`); the PR curves; and the per-object matches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from detect.core.cameras import CameraName
from detect.core.matching import COCO_PROTOCOL, WAYMO_PROTOCOL, Protocol
from detect.core.names import printable
from detect.core.records import LEVEL_1, LEVEL_2, WaymoType
from detect.evaluate import coco
from detect.evaluate.failures import Failures
from detect.evaluate.matches import Match, segment_matches
from detect.evaluate.pooled import DETECTIONS, LABELS, Pool, evaluate_chunk
from detect.evaluate.segment_results import SegmentResults
from detect.evaluate.slices import Slice, SlicePools, use_ranges
from detect.evaluate.thresholds import Sweep, sweep
from detect.evaluate.tracking import CameraSequence, segment_sequences
from detect.model.classmap import ClassMap
from detect.track import TooManyIds, TrackingPool, TrackingScores

SIZES = ("all", "small", "medium", "large")  # COCO's area ranges, in the order of its arrays


@dataclasses.dataclass(frozen=True)
class TypeMetrics:
    """One Waymo type (or "ALL", the mean over types) at one difficulty level."""

    name: str
    labels: int
    detections: int  # at or above the threshold
    ap50: float | None  # COCO: IoU 0.5
    ap_waymo: float | None  # Waymo's 2D protocol: IoU 0.7 for VEHICLE, 0.5 for the others
    ap: float | None
    ar100: float | None
    ap_by_size: dict[str, float | None]  # AP over IoU 0.5:0.95
    ap50_by_size: dict[str, float | None]
    precision: float | None  # at the threshold, the protocol's IoU
    recall: float | None
    f1: float | None
    true_positives: int  # at the threshold
    false_positives: int  # at the threshold; detections on ignored (LEVEL_2 in LEVEL_1) labels are neither


@dataclasses.dataclass(frozen=True)
class Evaluation:
    levels: dict[str, list[TypeMetrics]]  # "LEVEL_1" / "LEVEL_2" -> per type, then "ALL"
    cameras: dict[str, TypeMetrics]  # LEVEL_2 "ALL" per camera
    pr_curves: dict[str, dict[str, list[float]]]  # type -> {"recall": [...], "precision": [...]} (LEVEL_2, protocol's IoU)
    types: list[int]
    threshold: float
    segments: list[str]  # the segments evaluated, in order
    images: int
    labels_dropped: int
    protocol: Protocol = COCO_PROTOCOL
    sweeps: dict[str, Sweep] = dataclasses.field(default_factory=dict)  # type -> P/R/F1 vs threshold (LEVEL_2)
    # Waymo type -> HOTA, MOTA, IDF1... of the track ids against the labels' object ids (none: not tracked)
    tracking: dict[int, TrackingScores] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the scores leave out, one line each (a sequence too large to score)
    # dimension (range, time_of_day, location, weather) -> its slices, or "not available"
    slices: dict[str, list[Slice[TypeMetrics]] | str] = dataclasses.field(default_factory=dict)
    # level -> type (and "mean") -> TIDE's error kinds as dAP50 (`detect.evaluate.error_kinds`)
    error_kinds: dict[str, dict[str, dict[str, float]]] = dataclasses.field(default_factory=dict)
    confusion: dict[str, object] = dataclasses.field(default_factory=dict)  # `Confusion.to_json` (LEVEL_2)


def evaluate(segments: Iterable[SegmentResults], class_map: ClassMap, types: list[int], threshold: float,
             on_matches: Callable[[SegmentResults, list[Match]], None] | None = None,
             on_segment: Callable[[SegmentResults, Evaluation], None] | None = None,
             protocol: Protocol = COCO_PROTOCOL,
             on_tracks: Callable[[list[CameraSequence]], None] | None = None) -> Evaluation:
    """Everything `detect eval` reports, for `types` (the ones the model can output), pooled over
    `segments`, which are read one at a time (see `detect.evaluate.pooled`: memory stays flat
    however many there are). `on_matches` receives each segment's matches (the protocol's IoU,
    LEVEL_2) with the segment; `on_segment` each segment's own evaluation, from the same matching; `on_tracks` each
    segment's tracked sequences (one per camera and type; none when it was not tracked)."""
    pools = {level: Pool(types) for level in (LEVEL_1, LEVEL_2)}
    slices = SlicePools(types)
    tracks = TrackingPool(protocol)
    failures = Failures.empty(types, threshold)
    names: list[str] = []
    notes: list[str] = []
    images = dropped = 0
    for segment in segments:
        names.append(segment.name)
        images += len(segment.images)
        dropped += segment.labels_dropped
        dts = coco.detections([segment], class_map, types)
        ranged = coco.detections([segment], class_map, types, ranges=True) if _has_ranges(segment) else None
        by_id = {coco.image_id(k): k for k in segment.images}
        cameras = {image: k.camera_name for image, k in by_id.items()}
        conditions = {coco.image_id(k): v for k, v in segment.conditions.items() if k in segment.images and any(v)}
        own = {level: Pool(types) for level in pools} if on_segment is not None else {}
        own_slices = SlicePools(types) if on_segment is not None else None
        for sliced in (slices, own_slices):
            if sliced is not None:
                sliced.add_images(by_id)
        for level, pool in pools.items():
            run, gt_coco, dt_coco = evaluate_chunk(coco.ground_truth([segment], types, level), dts, types)
            for target in (pool, own.get(level)):
                if target is not None:
                    target.add(run, gt_coco, dt_coco, cameras, threshold)
            for sliced in (slices, own_slices):
                if sliced is not None and conditions:
                    sliced.add_conditions(level, run, gt_coco, dt_coco, cameras, threshold, conditions)
            del run, gt_coco, dt_coco  # this segment's Python-side COCO objects: gone before the next
            if ranged is not None:  # the range slices: the library matches again, by range bands
                by_range = evaluate_chunk(coco.ground_truth([segment], types, level, ranges=True), ranged, types,
                                          use_ranges)
                for sliced in (slices, own_slices):
                    if sliced is not None:
                        sliced.add_ranges(level, *by_range, cameras, threshold)
                del by_range
        sequences = list(segment_sequences(segment, class_map, types))
        own_tracks = TrackingPool(protocol)
        for sequence in sequences:
            try:
                own_tracks.add(sequence.waymo_type, sequence.frames)
            except TooManyIds as err:
                notes.append(f"{printable(segment.name, 64)}: {sequence.keys[0].camera_name.name} "
                             f"{WaymoType(sequence.waymo_type).name}: {err}; its tracking scores are left out")
        tracks.merge(own_tracks)
        own_failures = Failures.empty(types, threshold)
        own_failures.add_segment(segment, class_map)
        failures.merge(own_failures)
        if on_tracks is not None and sequences:
            on_tracks(sequences)
        if on_matches is not None:
            on_matches(segment, segment_matches(segment, class_map, types, protocol))
        if on_segment is not None:
            on_segment(segment, dataclasses.replace(
                _evaluation(own, types, threshold, [segment.name], len(segment.images), segment.labels_dropped, protocol),
                tracking=_labeled(own_tracks), slices=_slices(own_slices, types, threshold, protocol),
                error_kinds=own_failures.error_kinds(), confusion=own_failures.confusion.to_json()))
    return dataclasses.replace(_evaluation(pools, types, threshold, names, images, dropped, protocol),
                               tracking=_labeled(tracks), notes=tuple(notes), error_kinds=failures.error_kinds(),
                               confusion=failures.confusion.to_json(), slices=_slices(slices, types, threshold, protocol))


def _has_ranges(segment: SegmentResults) -> bool:
    """Whether a label or a detection of the segment has a range (else its range slices add nothing)."""
    ranges = segment.detections.range_m
    return bool((ranges is not None and np.isfinite(ranges).any())
                or any(np.isfinite(r).any() for r in segment.label_ranges.values()))


def _slices(pools: SlicePools | None, types: list[int], threshold: float,
            protocol: Protocol) -> dict[str, list[Slice[TypeMetrics]] | str]:
    if pools is None:
        return {}
    return pools.result(lambda pool, area: _per_type(pool, None, types, threshold, protocol, area))


def _labeled(tracks: TrackingPool) -> dict[int, TrackingScores]:
    """The pool's scores of the types that have labels."""
    return {t: s for t, s in tracks.scores().items() if s.label_boxes}


def _evaluation(pools: dict[int, Pool], types: list[int], threshold: float, names: list[str], images: int,
                dropped: int, protocol: Protocol) -> Evaluation:
    levels = {f"LEVEL_{level}": _per_type(pool, None, types, threshold, protocol) for level, pool in pools.items()}
    level_2 = pools[LEVEL_2]
    cameras_rows = {}
    for camera in CameraName:
        if level_2.accumulate(camera) is not None:
            cameras_rows[camera.name] = _per_type(level_2, camera, types, threshold, protocol)[-1]
    sweeps = {}
    for k, waymo_type in enumerate(types):
        scores, hits, labels = level_2.outcomes(k, protocol.iou_index(waymo_type))
        if labels or len(scores):
            sweeps[WaymoType(waymo_type).name] = sweep(scores, hits, labels)
    return Evaluation(levels, cameras_rows, _curves(level_2.accumulate(), level_2.recall_thresholds, types, protocol),
                      types, threshold, names, images, dropped, protocol, sweeps)


def _mean(values: np.ndarray) -> float | None:
    valid = values[values > -1]
    return float(valid.mean()) if valid.size else None


def _per_type(pool: Pool, camera: CameraName | None, types: list[int], threshold: float,
              protocol: Protocol, area: int = 0) -> list[TypeMetrics]:
    """Per type (then "ALL") from the library's accumulation, with hits and false alarms at the
    threshold at the protocol's IoU; of one of the pool's area ranges when `area` > 0 (a range
    band: its labels and detections are those the band keeps, its size breakdowns empty)."""
    result = pool.accumulate(camera)
    counts = pool.type_counts(camera)
    precision = np.asarray(result["precision"]) if result else None  # [T, R, K, A, M]
    recall = np.asarray(result["recall"]) if result else None  # [T, K, A, M]
    rows = []
    for k, waymo_type in enumerate(types):
        labels, detections = int(counts[k][LABELS]), int(counts[k][DETECTIONS])
        scores, hit, in_area = pool.outcomes(k, protocol.iou_index(waymo_type), camera, area)
        kept = scores >= threshold
        hits, misses = int(np.count_nonzero(hit & kept)), int(np.count_nonzero(~hit & kept))
        if area:
            labels, detections = in_area, int(np.count_nonzero(kept))
        waymo_t = WAYMO_PROTOCOL.iou_index(waymo_type)
        by_size: dict[str, float | None] = {size: None for size in SIZES[1:]}
        by_size_50 = dict(by_size)
        if precision is None or recall is None:
            ap50 = ap_waymo = ap = ar100 = None
        else:
            ap50, ap_waymo = _mean(precision[0, :, k, area, -1]), _mean(precision[waymo_t, :, k, area, -1])
            ap, ar100 = _mean(precision[:, :, k, area, -1]), _mean(recall[:, k, area, -1])
            if not area:
                by_size = {size: _mean(precision[:, :, k, a, -1]) for a, size in enumerate(SIZES) if a}
                by_size_50 = {size: _mean(precision[0, :, k, a, -1]) for a, size in enumerate(SIZES) if a}
        if not labels:  # not scored (SIGN: Waymo's 2D labels have none): its boxes are no false alarms
            hits = misses = 0
        rows.append(TypeMetrics(WaymoType(waymo_type).name, labels, detections, ap50, ap_waymo, ap, ar100, by_size,
                                by_size_50, *_prf(hits, misses, labels), hits, misses))
    rows.append(_mean_row(rows))
    return rows


def _mean_row(rows: list[TypeMetrics]) -> TypeMetrics:
    """"ALL": COCO's mean over the types (of those with labels), counts summed."""
    def mean(values: list[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return float(np.mean(kept)) if kept else None

    labels, detections, hits, misses = (sum(getattr(r, f) for r in rows)
                                        for f in ("labels", "detections", "true_positives", "false_positives"))
    return TypeMetrics("ALL", labels, detections, mean([x.ap50 for x in rows]), mean([x.ap_waymo for x in rows]),
                       mean([x.ap for x in rows]), mean([x.ar100 for x in rows]),
                       {s: mean([x.ap_by_size[s] for x in rows]) for s in SIZES[1:]},
                       {s: mean([x.ap50_by_size[s] for x in rows]) for s in SIZES[1:]},
                       *_prf(hits, misses, labels), hits, misses)


def _prf(hits: int, misses: int, labels: int) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and F1 from true and false positives and the number of labels."""
    p = hits / (hits + misses) if hits + misses else None
    r = hits / labels if labels else None
    if p is None or r is None:
        return p, r, None
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _curves(result: dict[str, Any] | None, recalls: list[float], types: list[int],  # COCOeval's `eval` dict
            protocol: Protocol) -> dict[str, dict[str, list[float]]]:
    if result is None:
        return {}
    precision = np.asarray(result["precision"])
    curves = {}
    for k, waymo_type in enumerate(types):
        values = precision[protocol.iou_index(waymo_type), :, k, 0, -1]
        if (values > -1).any():
            curves[WaymoType(waymo_type).name] = {"recall": recalls, "precision": [max(0.0, float(v)) for v in values]}
    return curves
