"""The detections table: one row per box, keyed with Waymo's own column names."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.records import FrameResult
from detect.waymo.schema import CAMERA, KEY_FIELDS, SEGMENT, TIMESTAMP

DETECTIONS_FILE = "detections.parquet"

SCHEMA = pa.schema(
    [
        *KEY_FIELDS,
        ("class_id", pa.int32()),
        ("label", pa.string()),
        ("score", pa.float32()),
        ("xmin", pa.float32()),
        ("ymin", pa.float32()),
        ("xmax", pa.float32()),
        ("ymax", pa.float32()),
    ]
)


def to_table(results: Iterable[FrameResult]) -> pa.Table:
    """Rows in (timestamp, camera) order, boxes best score first within an image."""
    ordered = sorted(results, key=lambda r: (r.key.frame_timestamp_micros, int(r.key.camera_name)))
    counts = [len(r.detections) for r in ordered]
    xyxy = np.concatenate([r.detections.xyxy for r in ordered]) if ordered else np.zeros((0, 4), np.float32)
    columns = {
        SEGMENT: pa.array(np.repeat([r.key.segment_context_name for r in ordered], counts).tolist(), pa.string()),
        TIMESTAMP: pa.array(np.repeat([r.key.frame_timestamp_micros for r in ordered], counts).astype(np.int64)),
        CAMERA: pa.array(np.repeat([int(r.key.camera_name) for r in ordered], counts).astype(np.int8)),
        "class_id": pa.array(_concat([r.detections.class_ids for r in ordered], np.int32)),
        "label": pa.array([label for r in ordered for label in r.detections.labels], pa.string()),
        "score": pa.array(_concat([r.detections.scores for r in ordered], np.float32)),
        "xmin": pa.array(xyxy[:, 0].astype(np.float32)),
        "ymin": pa.array(xyxy[:, 1].astype(np.float32)),
        "xmax": pa.array(xyxy[:, 2].astype(np.float32)),
        "ymax": pa.array(xyxy[:, 3].astype(np.float32)),
    }
    return pa.table(columns, schema=SCHEMA)


def write_table(path: Path, results: Iterable[FrameResult]) -> int:
    """Write atomically; returns the number of rows."""
    table = to_table(results)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows


def label_counts(results: Iterable[FrameResult]) -> dict[str, int]:
    counter: Counter[str] = Counter(label for r in results for label in r.detections.labels)
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)
