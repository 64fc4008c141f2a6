"""COCO-style numbers per Waymo type: every detection matched by faster-coco-eval (C++ COCOeval),
never by hand; the matches accumulated as COCO does, over the whole run (`detect.evaluate.pooled`).

Matches are pooled across every segment given (one evaluation, not an average of per-segment APs).
For each difficulty level: AP at IoU 0.5, AP at IoU 0.5:0.95, AR at 100 detections, AP by box size
(COCO's small < 32^2 < medium < 96^2 < large pixels), per type and their mean; at LEVEL_2, the same
per camera. At the run's drawing threshold: precision, recall and F1 from the library's own
matching at IoU 0.5 (COCO matches in score order, so the detections above a threshold match
exactly as they would alone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from faster_coco_eval import COCO

from detect.core.cameras import CameraName
from detect.core.records import LEVEL_1, LEVEL_2, FrameKey, WaymoType
from detect.evaluate import coco
from detect.evaluate.pooled import Pool, evaluate_chunk
from detect.evaluate.results import SegmentResults
from detect.model.classmap import ClassMap

SIZES = ("all", "small", "medium", "large")  # COCO's area ranges, in the order of its arrays


@dataclasses.dataclass(frozen=True)
class TypeMetrics:
    """One Waymo type (or "ALL", the mean over types) at one difficulty level."""

    name: str
    labels: int
    detections: int  # at or above the threshold
    ap50: float | None
    ap: float | None
    ar100: float | None
    ap_by_size: dict[str, float | None]
    precision: float | None  # at the threshold, IoU 0.5
    recall: float | None
    f1: float | None
    true_positives: int  # at the threshold
    false_positives: int  # at the threshold; detections on ignored (LEVEL_2 in LEVEL_1) labels are neither


@dataclasses.dataclass(frozen=True)
class Match:
    """One detection or one label and what the evaluation matched it with (IoU 0.5, LEVEL_2)."""

    key: FrameKey
    kind: str  # "detection" or "label"
    waymo_type: int
    score: float | None
    iou: float | None
    matched: bool
    ignored: bool  # a detection on a LEVEL_2 label in a LEVEL_1 evaluation is neither hit nor miss
    difficulty: int | None
    object_id: str | None


@dataclasses.dataclass(frozen=True)
class Evaluation:
    levels: dict[str, list[TypeMetrics]]  # "LEVEL_1" / "LEVEL_2" -> per type, then "ALL"
    cameras: dict[str, TypeMetrics]  # LEVEL_2 "ALL" per camera
    pr_curves: dict[str, dict[str, list[float]]]  # type -> {"recall": [...], "precision": [...]} (LEVEL_2, IoU 0.5)
    types: list[int]
    threshold: float
    segments: list[str]  # the segments evaluated, in order
    images: int
    labels_dropped: int


def evaluate(segments: Iterable[SegmentResults], class_map: ClassMap, types: list[int], threshold: float,
             on_matches: Callable[[list[Match]], None] | None = None,
             on_segment: Callable[[SegmentResults, Evaluation], None] | None = None) -> Evaluation:
    """Everything `detect eval` reports, for `types` (the ones the model can output), pooled over
    `segments`, which are read one at a time (see `detect.evaluate.pooled`: memory stays flat
    however many there are). `on_matches` receives each segment's matches (IoU 0.5, LEVEL_2);
    `on_segment` each segment's own evaluation, from the same matching."""
    pools = {level: Pool(types) for level in (LEVEL_1, LEVEL_2)}
    names: list[str] = []
    images = dropped = 0
    for segment in segments:
        names.append(segment.name)
        images += len(segment.images)
        dropped += segment.labels_dropped
        dts = coco.detections([segment], class_map, types)
        keys = {coco.image_id(k): k for k in segment.images}
        cameras = {i: k.camera_name for i, k in keys.items()}
        own = {level: Pool(types) for level in pools} if on_segment is not None else {}
        for level, pool in pools.items():
            run, gt_coco, dt_coco = evaluate_chunk(coco.ground_truth([segment], types, level), dts, types)
            for target in (pool, own.get(level)):
                if target is not None:
                    target.add(run, gt_coco, dt_coco, cameras, threshold)
            if level == LEVEL_2 and on_matches is not None:
                on_matches(_matches(gt_coco, dt_coco, keys))
            del run, gt_coco, dt_coco  # this segment's Python-side COCO objects: gone before the next
        if on_segment is not None:
            on_segment(segment, _evaluation(own, types, threshold, [segment.name], len(segment.images),
                                            segment.labels_dropped))
    return _evaluation(pools, types, threshold, names, images, dropped)


def _evaluation(pools: dict[int, Pool], types: list[int], threshold: float, names: list[str], images: int,
                dropped: int) -> Evaluation:
    levels = {f"LEVEL_{level}": _per_type(pool.accumulate(), pool.type_counts(), types) for level, pool in pools.items()}
    level_2 = pools[LEVEL_2]
    cameras_rows = {}
    for camera in CameraName:
        result = level_2.accumulate(camera)
        if result is not None:
            cameras_rows[camera.name] = _per_type(result, level_2.type_counts(camera), types)[-1]
    return Evaluation(levels, cameras_rows, _curves(level_2.accumulate(), level_2.recall_thresholds, types), types,
                      threshold, names, images, dropped)


def _mean(values: np.ndarray) -> float | None:
    valid = values[values > -1]
    return float(valid.mean()) if valid.size else None


def _per_type(result: dict[str, Any] | None, counts: np.ndarray, types: list[int]) -> list[TypeMetrics]:
    """Per type (then "ALL") from the library's accumulation and the counts at the threshold."""
    precision = np.asarray(result["precision"]) if result else None  # [T, R, K, A, M]
    recall = np.asarray(result["recall"]) if result else None  # [T, K, A, M]
    rows = []
    for k, waymo_type in enumerate(types):
        labels, detections, hits, misses = (int(v) for v in counts[k])
        if precision is None or recall is None:
            ap50 = ap = ar100 = None
            by_size: dict[str, float | None] = {size: None for size in SIZES[1:]}
        else:
            ap50, ap, ar100 = _mean(precision[0, :, k, 0, -1]), _mean(precision[:, :, k, 0, -1]), _mean(recall[:, k, 0, -1])
            by_size = {size: _mean(precision[:, :, k, a, -1]) for a, size in enumerate(SIZES) if a}
        rows.append(TypeMetrics(WaymoType(waymo_type).name, labels, detections, ap50, ap, ar100, by_size,
                                *_prf(hits, misses, labels), hits, misses))
    rows.append(_mean_row(rows))
    return rows


def _mean_row(rows: list[TypeMetrics]) -> TypeMetrics:
    """"ALL": COCO's mean over the types (of those with labels), counts summed."""
    def mean(values: list[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return float(np.mean(kept)) if kept else None

    labels, detections, hits, misses = (sum(getattr(r, f) for r in rows)
                                        for f in ("labels", "detections", "true_positives", "false_positives"))
    return TypeMetrics("ALL", labels, detections, mean([x.ap50 for x in rows]), mean([x.ap for x in rows]),
                       mean([x.ar100 for x in rows]), {s: mean([x.ap_by_size[s] for x in rows]) for s in SIZES[1:]},
                       *_prf(hits, misses, labels), hits, misses)


def _prf(hits: int, misses: int, labels: int) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and F1 from true and false positives and the number of labels."""
    p = hits / (hits + misses) if hits + misses else None
    r = hits / labels if labels else None
    if p is None or r is None:
        return p, r, None
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def _curves(result: dict[str, Any] | None, recalls: list[float], types: list[int]) -> dict[str, dict[str, list[float]]]:
    if result is None:
        return {}
    precision = np.asarray(result["precision"])
    curves = {}
    for k, waymo_type in enumerate(types):
        values = precision[0, :, k, 0, -1]
        if (values > -1).any():
            curves[WaymoType(waymo_type).name] = {"recall": recalls, "precision": [max(0.0, float(v)) for v in values]}
    return curves


def _matches(gt_coco: COCO, dt_coco: COCO, keys: dict[int, FrameKey]) -> list[Match]:
    rows = []
    for dt in dt_coco.anns.values():
        gt = gt_coco.anns.get(dt["gt_id"]) if dt.get("tp") else None
        rows.append(Match(keys[dt["image_id"]], "detection", dt["category_id"], float(dt["score"]),
                          float(dt["iou"]) if gt is not None else None, gt is not None and not gt["iscrowd"],
                          bool(gt is not None and gt["iscrowd"]), None, gt.get("object_id") if gt else None))
    for gt in gt_coco.anns.values():
        dt = dt_coco.anns.get(gt["dt_id"]) if "dt_id" in gt else None
        rows.append(Match(keys[gt["image_id"]], "label", gt["category_id"], float(dt["score"]) if dt else None,
                          float(dt["iou"]) if dt else None, dt is not None, bool(gt["iscrowd"]), gt["difficulty"],
                          gt["object_id"]))
    rows.sort(key=lambda m: (m.key.order, m.kind, -(m.score or 0.0)))
    return rows
