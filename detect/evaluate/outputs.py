"""What `detect eval` writes and prints: eval.json, matches.parquet, pr_curves.png, a table."""

from __future__ import annotations

import dataclasses
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from detect.core.records import WaymoType
from detect.evaluate.metrics import SIZES, Evaluation, Match, TypeMetrics
from detect.model.classmap import ClassMap
from detect.sinks.atomic import atomic_path, atomic_write_bytes
from detect.sinks.layout import EVAL_FILE, PR_CURVES_FILE
from detect.waymo.schema import CAMERA, KEY_FIELDS, OBJECT_ID, SEGMENT, TIMESTAMP

LIBRARY = "faster-coco-eval"
# The frames' label colors are made for photos; on a white plot these read better.
PLOT_COLORS = {"VEHICLE": "#1f77b4", "PEDESTRIAN": "#d62728", "CYCLIST": "#9467bd", "SIGN": "#7f7f7f"}

MATCHES_SCHEMA = pa.schema([
    *KEY_FIELDS,
    ("kind", pa.string()),
    ("type", pa.int8()),
    ("type_name", pa.string()),
    ("score", pa.float32()),
    ("iou", pa.float32()),
    ("matched", pa.bool_()),
    ("ignored", pa.bool_()),
    ("difficulty", pa.int8()),
    (OBJECT_ID, pa.string()),
])


def to_json(evaluation: Evaluation, class_map: ClassMap) -> dict[str, Any]:
    return {
        "library": {"name": LIBRARY, "version": metadata.version(LIBRARY), "iou_type": "bbox",
                    "area_ranges": "COCO: small < 32^2 <= medium < 96^2 <= large (pixels)", "max_detections": 100},
        "segments": evaluation.segments,
        "images": evaluation.images,
        "labels_dropped": evaluation.labels_dropped,
        "types": [WaymoType(t).name for t in evaluation.types],
        "class_map": class_map.to_json(),
        "threshold": evaluation.threshold,
        "levels": {level: [dataclasses.asdict(row) for row in rows] for level, rows in evaluation.levels.items()},
        "cameras_level_2": {camera: dataclasses.asdict(row) for camera, row in evaluation.cameras.items()},
        "pr_curves_level_2_iou_0_5": evaluation.pr_curves,
        "note": ("AP50: AP at IoU 0.5; AP: mean over IoU 0.5:0.95; AR100: recall at 100 detections per image; "
                 "ALL: mean over the types; precision/recall/F1 at the drawing threshold, IoU 0.5; LEVEL_1 ignores "
                 "LEVEL_2 labels (COCO iscrowd), LEVEL_2 counts every label"),
    }


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
        "ignored": pa.array([m.ignored for m in matches], pa.bool_()),
        "difficulty": pa.array([m.difficulty for m in matches], pa.int8()),
        OBJECT_ID: pa.array([m.object_id for m in matches], pa.string()),
    }, schema=MATCHES_SCHEMA)


def write_outputs(out: Path, evaluation: Evaluation, report: dict[str, Any]) -> list[Path]:
    """eval.json and pr_curves.png in `out`, each written atomically (matches.parquet: `MatchesWriter`)."""
    written = [atomic_write_bytes(out / EVAL_FILE, (json.dumps(report, indent=2, allow_nan=False) + "\n").encode())]
    with atomic_path(out / PR_CURVES_FILE) as tmp:
        plot_pr_curves(evaluation, tmp)
    written.append(out / PR_CURVES_FILE)
    return written


def plot_pr_curves(evaluation: Evaluation, path: Path) -> None:
    """Precision against recall per type (LEVEL_2, IoU 0.5), AP50 in the legend; readable at 800 px."""
    figure = Figure(figsize=(6.4, 4.8), dpi=125)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    ap50 = {row.name: row.ap50 for row in evaluation.levels["LEVEL_2"]}
    for name, curve in evaluation.pr_curves.items():
        axes.plot(curve["recall"], curve["precision"], color=PLOT_COLORS.get(name, "0.3"), linewidth=2.2,
                  label=f"{name}  AP50 {_fmt(ap50.get(name))}")
    axes.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision",
             title="Precision-recall at IoU 0.5 (LEVEL_2)")
    axes.grid(True, alpha=0.3)
    if evaluation.pr_curves:
        axes.legend(loc="lower left")
    else:
        axes.text(0.5, 0.5, "no labels of the evaluated types", ha="center", va="center")
    figure.tight_layout()
    figure.savefig(path, format="png")


def table_lines(evaluation: Evaluation) -> list[str]:
    """The terminal table: per type and ALL, for both levels; then AP50 per camera."""
    header = (f"{'type':<11}{'level':<9}{'labels':>7}{'dets':>7}{'AP50':>7}{'AP':>7}{'AR100':>7}"
              + "".join(f"{'AP_' + s[0]:>7}" for s in SIZES[1:]) + f"{'P':>7}{'R':>7}{'F1':>7}")
    lines = [f"at the drawing threshold {evaluation.threshold:g} (dets, P, R, F1) and IoU 0.5 (AP50, P, R, F1):", header]
    for level, rows in evaluation.levels.items():
        for row in rows:
            lines.append(_row(row, level))
    cameras = "  ".join(f"{camera} {_fmt(row.ap50)}" for camera, row in evaluation.cameras.items())
    lines.append(f"AP50 per camera (LEVEL_2, ALL): {cameras}")
    return lines


def _row(row: TypeMetrics, level: str) -> str:
    sizes = "".join(f"{_fmt(row.ap_by_size[s]):>7}" for s in SIZES[1:])
    return (f"{row.name:<11}{level:<9}{row.labels:>7}{row.detections:>7}{_fmt(row.ap50):>7}{_fmt(row.ap):>7}"
            f"{_fmt(row.ar100):>7}{sizes}{_fmt(row.precision):>7}{_fmt(row.recall):>7}{_fmt(row.f1):>7}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
