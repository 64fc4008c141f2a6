"""What `detect eval` writes and prints: eval.json, matches.parquet, pr_curves.png, thresholds.png, a table."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.records import WaymoType
from detect.core.resample import BLOCK_SECONDS, MIN_BLOCKS
from detect.evaluate.matches import Match
from detect.evaluate.metrics import SIZES, Evaluation, TypeMetrics
from detect.evaluate.pr_plots import plot_pr_curves, plot_thresholds
from detect.evaluate.slice_intervals import Intervals
from detect.evaluate.slice_plots import plot_range_bands
from detect.evaluate.slices import NOT_AVAILABLE, slices_json
from detect.model.classmap import ClassMap
from detect.results.eval_record import EvalRecord, write_eval_record
from detect.results.layout import PR_CURVES_FILE, RANGE_BANDS_FILE, THRESHOLDS_FILE
from detect.waymo.schema import CAMERA, KEY_FIELDS, OBJECT_ID, SEGMENT, TIMESTAMP

LIBRARY = "faster-coco-eval"

MATCHES_SCHEMA = pa.schema([
    *KEY_FIELDS,
    ("kind", pa.string()),
    ("type", pa.int8()),
    ("type_name", pa.string()),
    ("score", pa.float32()),
    ("iou", pa.float32()),
    ("matched", pa.bool_()),
    ("difficulty", pa.int8()),
    (OBJECT_ID, pa.string()),
    ("xmin", pa.float32()),
    ("ymin", pa.float32()),
    ("xmax", pa.float32()),
    ("ymax", pa.float32()),
    ("class_id", pa.int32()),
    ("iou_threshold", pa.float32()),
    ("range_m", pa.float32()),  # metres from the car; null where not known
])


def to_json(evaluation: Evaluation, class_map: ClassMap) -> dict[str, object]:
    protocol = evaluation.protocol
    return {
        "library": {"name": LIBRARY, "version": metadata.version(LIBRARY), "iou_type": "bbox",
                    "area_ranges": "COCO: small < 32^2 <= medium < 96^2 <= large (pixels)", "max_detections": 100},
        "segments": evaluation.segments,
        "images": evaluation.images,
        "labels_dropped": evaluation.labels_dropped,
        "types": [WaymoType(t).name for t in evaluation.types],
        "class_map": class_map.to_json(),
        "threshold": evaluation.threshold,
        "protocol": {"name": protocol.name, "title": protocol.title, "ap_name": protocol.ap_name,
                     "iou": {WaymoType(t).name: protocol.iou(t) for t in evaluation.types},
                     "decides": "matches.parquet, the pictures, precision/recall/F1, PR curves, thresholds"},
        "levels": {level: [dataclasses.asdict(row) for row in rows] for level, rows in evaluation.levels.items()},
        "cameras_level_2": {camera: dataclasses.asdict(row) for camera, row in evaluation.cameras.items()},
        "pr_curves_level_2": evaluation.pr_curves,
        "thresholds_level_2": {name: dataclasses.asdict(s) for name, s in evaluation.sweeps.items()},
        **({"tracking_level_2": {WaymoType(t).name: s.to_json() for t, s in evaluation.tracking.items()}}
           if evaluation.tracking else {}),
        **({"slices": slices_json(evaluation.slices), "slices_rule": SLICES_RULE} if evaluation.slices else {}),
        "error_kinds": evaluation.error_kinds,
        "confusion": evaluation.confusion,
        "note": ("AP50: AP at IoU 0.5 (COCO); ap_waymo: AP at IoU 0.7 for VEHICLE and 0.5 for the others (Waymo's 2D "
                 "protocol); AP: mean over IoU 0.5:0.95; AR100: recall at 100 detections per image; ALL: mean over the "
                 "types; precision/recall/F1 at the drawing threshold and the protocol's IoU; LEVEL_1 ignores LEVEL_2 "
                 "labels (COCO iscrowd), LEVEL_2 counts every label; thresholds: P/R/F1 for every drawing threshold, "
                 "its F1-best one, histograms of the scores of hits and false alarms (LEVEL_2); error_kinds: TIDE's "
                 "six kinds of error, each the AP50 (0..1) a type gains when that kind alone is fixed, and their mean "
                 "over the types with labels; confusion: at the drawing threshold and IoU 0.5, rows the labels' types "
                 "(background: the false alarms), columns the detections' types (background: the labels missed)"),
    }


SLICES_RULE = ("COCO's area-range rule with range in place of area: in a slice a label outside it is ignored, an "
               "unmatched detection counts where its own range (its image's conditions) puts it; a box without a range "
               "is in no range slice; range_m: the tied 3D label's, else the ground-plane estimate (docs/evaluation.md)")


class MatchesWriter:
    """`matches.parquet`, written segment by segment as the evaluation goes (flat memory), and
    renamed into place only when the evaluation finished."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._target = atomic_path(self.path)
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> MatchesWriter:
        self._writer = pq.ParquetWriter(self._target.__enter__(), MATCHES_SCHEMA)
        return self

    def write(self, matches: list[Match]) -> None:
        if self._writer is not None and matches:
            self._writer.write_table(matches_table(matches))

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._writer is not None:
            self._writer.close()
        self._target.__exit__(kind, error, trace)


def matches_table(matches: list[Match]) -> pa.Table:
    boxes = [m.xyxy for m in matches]
    return pa.table({
        SEGMENT: pa.array([m.key.segment_context_name for m in matches], pa.string()),
        TIMESTAMP: pa.array([m.key.frame_timestamp_micros for m in matches], pa.int64()),
        CAMERA: pa.array([int(m.key.camera_name) for m in matches], pa.int8()),
        "kind": pa.array([m.kind for m in matches], pa.string()),
        "type": pa.array([m.waymo_type for m in matches], pa.int8()),
        "type_name": pa.array([WaymoType(m.waymo_type).name for m in matches], pa.string()),
        "score": pa.array([m.score for m in matches], pa.float32()),
        "iou": pa.array([m.iou for m in matches], pa.float32()),
        "matched": pa.array([m.matched for m in matches], pa.bool_()),
        "difficulty": pa.array([m.difficulty for m in matches], pa.int8()),
        OBJECT_ID: pa.array([m.object_id for m in matches], pa.string()),
        **{name: pa.array([b[i] for b in boxes], pa.float32()) for i, name in enumerate(("xmin", "ymin", "xmax", "ymax"))},
        "class_id": pa.array([m.class_id for m in matches], pa.int32()),
        "iou_threshold": pa.array([m.iou_threshold for m in matches], pa.float32()),
        "range_m": pa.array([m.range_m for m in matches], pa.float32()),
    }, schema=MATCHES_SCHEMA)


def write_outputs(out: Path, evaluation: Evaluation, report: dict[str, object],
                  pictures: dict[str, bytes] | None = None) -> list[Path]:
    """eval.json, pr_curves.png and thresholds.png (and range_bands.png) in `out`, each written
    atomically (matches.parquet: `MatchesWriter`). `pictures`, when given, keeps each picture's
    bytes by file name, and a picture it already holds is written as it is instead of drawn again:
    a pool of one segment draws exactly what that segment's own evaluation drew (the plots take
    ~0.55 CPU-s, most of a small segment's evaluation)."""
    written = [write_eval_record(out, EvalRecord.from_json(report))]
    plots = [(PR_CURVES_FILE, plot_pr_curves), (THRESHOLDS_FILE, plot_thresholds)]
    if isinstance(evaluation.slices.get("range"), list):
        plots.append((RANGE_BANDS_FILE, plot_range_bands))
    for name, plot in plots:
        with atomic_path(out / name) as tmp:
            if pictures is not None and name in pictures:
                tmp.write_bytes(pictures[name])
            else:
                plot(evaluation, tmp)
                if pictures is not None:
                    pictures[name] = tmp.read_bytes()
        written.append(out / name)
    return written


def table_lines(evaluation: Evaluation) -> list[str]:
    """The terminal table: per type and ALL, for both levels; AP50 per camera; F1-best thresholds."""
    protocol = evaluation.protocol
    # 95 characters: every line `detect` prints stays under 100
    header = (f"{'type':<11}{'level':<8}{'labels':>7}{'dets':>6}{'AP50':>7}{'AP70/50':>8}{'AP':>6}{'AR100':>6}"
              + "".join(f"{'AP_' + s[0]:>6}" for s in SIZES[1:]) + f"{'P':>6}{'R':>6}{'F1':>6}")
    lines = [f"{protocol.describe()} decides hits; at threshold {threshold_text(evaluation)(evaluation.threshold)}: "
             "dets (boxes at or above it), P, R, F1", "AP50: COCO; AP70/50: Waymo; AP and AP_s/m/l: IoU 0.5:0.95", header]
    unlabeled = [r.name for r in evaluation.levels.get("LEVEL_2", []) if r.name != "ALL" and not r.labels]
    for level, rows in evaluation.levels.items():
        for row in rows:
            if row.name not in unlabeled:  # no AP, no recall: a row of dashes (named below instead)
                lines.append(_row(row, level))
    if unlabeled:
        lines.append(f"no labels of {', '.join(unlabeled)} in the data: not scored")
    cameras = "  ".join(f"{camera} {_fmt(row.ap50)}" for camera, row in evaluation.cameras.items())
    lines.append(f"AP50 per camera (LEVEL_2, ALL): {cameras}")
    lines.extend(best_threshold_lines(evaluation))
    lines.extend(tracking_lines(evaluation))
    lines.extend(error_kind_lines(evaluation))
    lines.extend(confusion_lines(evaluation))
    return lines


KIND_HEADINGS = {"classification": "class", "localisation": "loc", "both": "both", "duplicate": "dupe",
                 "background": "bkgd", "missed": "missed"}


def error_kind_lines(evaluation: Evaluation, level: str = "LEVEL_2") -> list[str]:
    """TIDE's error kinds per type with labels and their mean: the AP50 each kind costs."""
    kinds = evaluation.error_kinds.get(level) or {}
    if not kinds:
        return []
    lines = [f"AP50 each kind of error costs (TIDE, {level}: what fixing it alone gains)",
             f"{'type':<11}" + "".join(f"{h:>7}" for h in KIND_HEADINGS.values())]
    for name, values in kinds.items():
        lines.append(f"{name:<11}" + "".join(f"{values[k]:>7.3f}" for k in KIND_HEADINGS))
    return lines


def confusion_lines(evaluation: Evaluation) -> list[str]:
    """The confusion matrix (rows labels, columns detections), then what each model class became."""
    confusion = evaluation.confusion
    names, matrix = confusion.get("names"), confusion.get("matrix")
    if not isinstance(names, list) or not isinstance(matrix, list):
        return []
    text = threshold_text(evaluation)
    lines = [f"confusion at threshold {text(evaluation.threshold)} and IoU 0.5 (LEVEL_2): rows labels, columns detections;",
             "its background row holds the false alarms, its background column the labels missed",
             f"{'':<11}" + "".join(f"{n[:10]:>11}" for n in names)]
    lines += [f"{name:<11}" + "".join(f"{v:>11}" for v in row) for name, row in zip(names, matrix, strict=True)
              if sum(row) or name == names[-1]]  # a type without labels has an empty row: left out
    classes = confusion.get("classes")
    if isinstance(classes, list) and classes:
        lines.append("model classes at the threshold: the type each became, and what its boxes were on")
        lines += [f"  {c['name']} -> {c['type']}: {c['detections']} (" + ", ".join(f"{on} {n}" for on, n in c["on"].items())
                  + ")" for c in classes]
    return lines


def slice_lines(evaluation: Evaluation, dimensions: Sequence[str]) -> list[str]:
    """The slices of `dimensions` (LEVEL_2, per type with labels and ALL): AP50 and recall at the
    threshold, each beside the labels it counts."""
    lines = []
    for dimension in dimensions:
        found = evaluation.slices.get(dimension, NOT_AVAILABLE)
        if isinstance(found, str):
            lines.append(f"{dimension}: {found}")
            continue
        lines.append(f"{dimension} (LEVEL_2): AP50 [its 95% interval] and recall at the threshold (labels)")
        for piece in found:
            rows = [r for r in piece.levels.get("LEVEL_2", []) if r.labels or r.name == "ALL"]
            intervals = {} if piece.intervals is None else piece.intervals.ap50
            cells = "  ".join(f"{r.name} {_fmt(r.ap50)}{_interval(intervals.get(r.name))} R {_fmt(r.recall)} ({r.labels})"
                              for r in rows)
            lines.append(f"  {piece.name:<12} {cells}{_blocks(piece.intervals)}")
    return lines


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]"


def _blocks(intervals: Intervals | None) -> str:
    """Why a slice has no interval: too few independent blocks of frames."""
    if intervals is None or intervals.ap50 or intervals.blocks >= MIN_BLOCKS:
        return ""
    return f"  (no interval: {intervals.blocks} block(s) of {BLOCK_SECONDS:g} s, {MIN_BLOCKS} needed)"


def tracking_lines(evaluation: Evaluation) -> list[str]:
    """Per type, the track ids against the labels' object ids (nothing when the run was not tracked)."""
    return [f"tracking {WaymoType(t).name}: HOTA {s.hota:.3f} (DetA {s.deta:.3f}, AssA {s.assa:.3f}), MOTA {s.mota:.3f}, "
            f"IDF1 {s.idf1:.3f}, {s.id_switches} ID switches, {s.fragmentations} fragmentations, "
            f"{s.mostly_tracked}/{s.objects} mostly tracked (IoU {s.iou:g})" for t, s in evaluation.tracking.items()]


def best_threshold_lines(evaluation: Evaluation) -> list[str]:
    """The F1-best threshold per type (LEVEL_2, the protocol's IoU), beside the current one."""
    parts = []
    text = threshold_text(evaluation)
    for name, found in evaluation.sweeps.items():
        best = found.best
        if best is not None:
            parts.append(f"{name} {text(best.suggested)} (F1 {best.f1:.2f}: P {best.precision:.2f}, R {best.recall:.2f})")
    if not parts:
        return []
    return [f"F1-best threshold (LEVEL_2, now {text(evaluation.threshold)}): " + "; ".join(parts)]


def threshold_text(evaluation: Evaluation) -> Callable[[float | str], str]:
    """How the thresholds of an evaluation are printed: all with the decimals the most precise one
    needs, two at least ("now 0.300: VEHICLE 0.239; PEDESTRIAN 0.320", not "now 0.3: VEHICLE 0.239;
    PEDESTRIAN 0.32"); each F1-best one (`Best.suggested`) keeps its exact value."""
    values: list[float | str] = [evaluation.threshold,
                                 *(s.best.suggested for s in evaluation.sweeps.values() if s.best is not None)]
    digits = max(2, *(len(f"{float(v):.7f}".rstrip("0").partition(".")[2]) for v in values))
    return lambda value: f"{float(value):.{digits}f}"


def _row(row: TypeMetrics, level: str) -> str:
    sizes = "".join(f"{_fmt(row.ap_by_size[s]):>6}" for s in SIZES[1:])
    return (f"{row.name:<11}{level:<8}{row.labels:>7}{row.detections:>6}{_fmt(row.ap50):>7}{_fmt(row.ap_waymo):>8}"
            f"{_fmt(row.ap):>6}{_fmt(row.ar100):>6}{sizes}{_fmt(row.precision):>6}{_fmt(row.recall):>6}{_fmt(row.f1):>6}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def library_version() -> str:
    """The evaluation library as eval.json names it: "faster-coco-eval 1.8.0"."""
    return f"{LIBRARY} {metadata.version(LIBRARY)}"
