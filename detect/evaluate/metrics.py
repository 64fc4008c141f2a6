"""COCO-style numbers per Waymo type, computed by faster-coco-eval (C++ COCOeval), never by hand.

Matches are pooled across every segment given (one evaluation, not an average of per-segment APs).
For each difficulty level: AP at IoU 0.5, AP at IoU 0.5:0.95, AR at 100 detections, AP by box size
(COCO's small < 32^2 < medium < 96^2 < large pixels), per type and their mean; at LEVEL_2, the same
per camera. At the run's drawing threshold: precision, recall and F1 from the library's own
matching at IoU 0.5 (COCO matches in score order, so the detections above a threshold match
exactly as they would alone).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from faster_coco_eval import COCO, COCOeval_faster

from detect.core.cameras import CameraName
from detect.core.records import LEVEL_1, LEVEL_2, FrameKey, WaymoType
from detect.evaluate import coco
from detect.evaluate.classmap import ClassMap
from detect.evaluate.results import SegmentResults

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
    matches: list[Match]
    types: list[int]
    threshold: float


def evaluate(segments: Sequence[SegmentResults], class_map: ClassMap, types: list[int], threshold: float) -> Evaluation:
    """Everything `detect eval` reports, for `types` (the ones the model can output)."""
    dts = coco.detections(segments, class_map, types)
    keys = {coco.image_id(k): k for s in segments for k in s.images}
    levels: dict[str, list[TypeMetrics]] = {}
    cameras: dict[str, TypeMetrics] = {}
    pr_curves: dict[str, dict[str, list[float]]] = {}
    matches: list[Match] = []
    for level in (LEVEL_1, LEVEL_2):
        gt_coco, dt_coco = _coco_pair(coco.ground_truth(segments, types, level), dts)
        run = _run(gt_coco, dt_coco, types)  # extra_calc: accumulate() sets the match flags (tp, gt_id...)
        levels[f"LEVEL_{level}"] = _per_type(run, gt_coco, dt_coco, types, threshold)
        if level == LEVEL_2:
            pr_curves = _curves(run, types)
            matches = _matches(gt_coco, dt_coco, keys)
            for camera in CameraName:
                image_ids = [i for i, k in keys.items() if k.camera_name == camera]
                if image_ids:
                    cameras[camera.name] = _per_type(_run(gt_coco, dt_coco, types, image_ids), gt_coco, dt_coco, types,
                                                     threshold, image_ids)[-1]
    return Evaluation(levels, cameras, pr_curves, matches, types, threshold)


def _coco_pair(gt: dict[str, Any], dts: list[dict[str, Any]]) -> tuple[COCO, COCO]:
    with contextlib.redirect_stdout(io.StringIO()):  # the library reports its progress on stdout
        gt_coco = COCO(gt)
        dt_coco = gt_coco.loadRes([dict(d) for d in dts]) if dts else COCO({**gt, "annotations": []})
    return gt_coco, dt_coco


def _run(gt_coco: COCO, dt_coco: COCO, types: list[int], image_ids: list[int] | None = None) -> COCOeval_faster:
    run = COCOeval_faster(gt_coco, dt_coco, "bbox", print_function=lambda *a, **k: None, extra_calc=True)
    run.params.catIds = list(types)
    if image_ids is not None:
        run.params.imgIds = sorted(image_ids)
    with contextlib.redirect_stdout(io.StringIO()):
        run.evaluate()
        run.accumulate()
    return run


def _mean(values: np.ndarray) -> float | None:
    valid = values[values > -1]
    return float(valid.mean()) if valid.size else None


def _per_type(run: COCOeval_faster, gt_coco: COCO, dt_coco: COCO, types: list[int], threshold: float,
              image_ids: list[int] | None = None) -> list[TypeMetrics]:
    precision, recall = run.eval["precision"], run.eval["recall"]  # [T, R, K, A, M], [T, K, A, M]
    wanted = None if image_ids is None else set(image_ids)
    rows = []
    for k, waymo_type in enumerate(run.params.catIds):
        gts = [a for a in gt_coco.anns.values() if a["category_id"] == waymo_type and not a["iscrowd"]
               and (wanted is None or a["image_id"] in wanted)]
        dts = [a for a in dt_coco.anns.values() if a["category_id"] == waymo_type and a["score"] >= threshold
               and (wanted is None or a["image_id"] in wanted)]
        hits = sum(1 for a in dts if a.get("tp") and not gt_coco.anns[a["gt_id"]]["iscrowd"])
        ignored = sum(1 for a in dts if a.get("tp") and gt_coco.anns[a["gt_id"]]["iscrowd"])
        misses = len(dts) - ignored - hits
        rows.append(TypeMetrics(
            WaymoType(waymo_type).name, len(gts), len(dts),
            _mean(precision[0, :, k, 0, -1]), _mean(precision[:, :, k, 0, -1]), _mean(recall[:, k, 0, -1]),
            {size: _mean(precision[:, :, k, a, -1]) for a, size in enumerate(SIZES) if a},
            *_prf(hits, misses, len(gts)), hits, misses))
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


def _curves(run: COCOeval_faster, types: list[int]) -> dict[str, dict[str, list[float]]]:
    precision = run.eval["precision"]
    recalls = [float(v) for v in run.params.recThrs]
    curves = {}
    for k, waymo_type in enumerate(run.params.catIds):
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
