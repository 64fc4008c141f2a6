"""`detect eval` and `detect export coco`: from a results directory (one segment, or a whole run,
pooled) to numbers and files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np

from detect.core.errors import InputError
from detect.core.names import printable
from detect.evaluate import coco
from detect.evaluate.classmap import ClassMap, load_class_map
from detect.evaluate.metrics import Evaluation, evaluate
from detect.evaluate.outputs import to_json, write_outputs
from detect.evaluate.results import SegmentResults, find_segments, load_segment, no_labels_message
from detect.model.labels import label_for
from detect.sinks.atomic import atomic_write_bytes

INSTANCES_FILE, DETECTIONS_JSON = "instances.json", "detections.json"


@dataclasses.dataclass(frozen=True, eq=False)
class EvalResult:
    evaluation: Evaluation
    report: dict[str, Any]
    written: list[Path]
    notes: list[str]  # one line each: what was left out and why


def run_eval(results: Path, gt: str | None = None, class_map_path: Path | None = None,
             out: Path | None = None) -> EvalResult:
    """Evaluate every segment under `results` against its labels; write the outputs to `out`
    (default: `results`)."""
    segments, class_map, types, notes = _prepare(results, gt, class_map_path)
    threshold = segments[0].threshold
    if any(s.threshold != threshold for s in segments):
        notes.append(f"the segments were drawn at different thresholds; P/R/F1 use the first one ({threshold:g})")
    evaluation = evaluate(segments, class_map, types, threshold)
    report = to_json(evaluation, class_map, [s.name for s in segments], sum(len(s.images) for s in segments),
                     labels_dropped=sum(s.labels_dropped for s in segments))
    written = write_outputs(Path(out or results), evaluation, report)
    return EvalResult(evaluation, report, written, notes)


def export_coco(results: Path, out: Path | None = None, gt: str | None = None,
                class_map_path: Path | None = None) -> list[Path]:
    """`instances.json` (labels, LEVEL_2) and `detections.json` (mapped to Waymo types)."""
    segments, class_map, types, _ = _prepare(results, gt, class_map_path)
    target = Path(out or results)
    instances = coco.ground_truth(segments, types)
    dets = coco.detections(segments, class_map, types)
    # allow_nan=False: JSON has no NaN or Infinity; the rows are checked on the way in, and a value
    # that still slipped through must fail here rather than write a file other tools cannot parse.
    return [atomic_write_bytes(target / INSTANCES_FILE, json.dumps(instances, allow_nan=False).encode()),
            atomic_write_bytes(target / DETECTIONS_JSON, json.dumps(dets, allow_nan=False).encode())]


def _prepare(results: Path, gt: str | None, class_map_path: Path | None) -> tuple[list[SegmentResults], ClassMap, list[int], list[str]]:
    class_map = load_class_map(class_map_path)
    loaded, notes = [], []
    for directory in find_segments(Path(results)):
        try:
            loaded.append(load_segment(directory, gt))
        except InputError as err:  # one broken segment (or one missing --gt file) leaves the others evaluated
            notes.append(f"{printable(str(err), 300)}; left out")
    segments = [s for s in loaded if s.labels]
    if not segments:
        if not loaded:
            raise InputError(f"{results}: no segment could be read ({notes[0] if notes else 'none found'})")
        raise InputError(no_labels_message(Path(results), loaded))
    notes += [f"{printable(s.name)}: no labels, left out" for s in loaded if not s.labels]
    dropped = sum(s.labels_dropped for s in segments)
    if dropped:
        notes.append(f"{dropped} unusable label row(s) dropped (NaN, negative or empty boxes, types or cameras "
                     f"outside Waymo's enums); eval.json counts them")
    stand_ins = sorted({str(s.manifest.get("model", {}).get("kind")) for s in segments} - {"real", "None"})
    if stand_ins:
        notes.append(f"these results come from a {' and a '.join(stand_ins)} model: its boxes are not detections, "
                     f"so the numbers measure nothing")
    if class_map_path is not None:
        notes += _unmapped(segments, class_map)
    classes = segments[0].model_classes
    types = class_map.types_for(classes)
    if not types:
        raise InputError(f"{results}: the model's classes map to no Waymo type with {class_map.source}; "
                         f"give a --class-map FILE that maps them")
    return segments, class_map, types, notes


def _unmapped(segments: list[SegmentResults], class_map: ClassMap) -> list[str]:
    """A partial --class-map says which detected classes it leaves out, rather than dropping them quietly."""
    counts: dict[int, int] = {}
    for segment in segments:
        ids, n = np.unique(segment.detections.class_ids, return_counts=True)
        for class_id, count in zip(ids.tolist(), n.tolist(), strict=True):
            if class_map.waymo_type(class_id) is None:
                counts[class_id] = counts.get(class_id, 0) + count
    if not counts:
        return []
    named = ", ".join(f"{label_for(c)} ({n} box{'es' if n != 1 else ''})" for c, n in sorted(counts.items(), key=lambda i: -i[1]))
    return [f"--class-map {class_map.source} leaves out {len(counts)} class(es) the model detected: {named}; "
            f"their boxes are not evaluated"]
