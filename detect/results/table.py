"""The detections table: one row per box, keyed with Waymo's own column names."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.records import CLASS_ID_DTYPE, SCORE_DTYPE, TRACK_ID_DTYPE, XYXY_DTYPE, FrameResult
from detect.results import box_context
from detect.waymo.context.segment import SegmentContext
from detect.waymo.schema import CAMERA, KEY_FIELDS, SEGMENT, TIMESTAMP

DETECTIONS_FILE = "detections.parquet"

SCHEMA = pa.schema(
    [
        *KEY_FIELDS,
        # a box's columns as `Detections` declares them (detect.core.records)
        ("class_id", pa.from_numpy_dtype(CLASS_ID_DTYPE)),
        ("label", pa.string()),
        ("score", pa.from_numpy_dtype(SCORE_DTYPE)),
        *((name, pa.from_numpy_dtype(XYXY_DTYPE)) for name in ("xmin", "ymin", "xmax", "ymax")),
        *box_context.FIELDS,  # each box's range and its image's conditions, null where not known
        # the object's track (unique in the segment), null where the tracker kept none or did not run
        ("track_id", pa.from_numpy_dtype(TRACK_ID_DTYPE)),
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
        "track_id": pa.nulls(len(xyxy), pa.int64()),
        **box_context.null_columns(len(xyxy)),
    }
    return pa.table(columns, schema=SCHEMA)


def with_track_ids(table: pa.Table, ids: np.ndarray) -> pa.Table:
    """`table` with its `track_id` column set from `ids` (one per row; -1: null, no track)."""
    ids = np.asarray(ids, TRACK_ID_DTYPE).reshape(-1)
    if len(ids) != table.num_rows:
        raise ValueError(f"expected one track id per row ({table.num_rows}), got {len(ids)}")
    column = pa.array(ids, pa.from_numpy_dtype(TRACK_ID_DTYPE), mask=ids < 0)
    return table.set_column(table.schema.get_field_index("track_id"), "track_id", column)


def write_table(path: Path, results: Iterable[FrameResult] | pa.Table,
                track: Callable[[pa.Table], np.ndarray] | None = None, context: SegmentContext | None = None) -> int:
    """Write atomically (`results`, or a table as `to_table` makes them); `track` gives the track ids
    of the table's rows (None: no tracking, the column stays null); `context` the boxes' ranges and
    their images' conditions (None: a table's own are kept, results' are null). Returns the rows."""
    if isinstance(results, pa.Table):
        table, sizes = results, None
    else:
        results = list(results)
        table, sizes = to_table(results), {r.key: (r.width, r.height) for r in results}
    if context is not None:
        table = box_context.with_context(table, box_context.context_columns(table, context, sizes))
    if track is not None:
        table = with_track_ids(table, track(table))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows


def label_counts(results: Iterable[FrameResult]) -> dict[str, int]:
    counter: Counter[str] = Counter(label for r in results for label in r.detections.labels)
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)
