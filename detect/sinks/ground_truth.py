"""`ground_truth.parquet`: Waymo's labels for the images a run processed, beside its detections.

One row per label box, keyed with Waymo's key names like `detections.parquet`, so a results
directory is enough to evaluate (`detect eval`) even after the input files are gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import FrameKey, Labels
from detect.sinks.atomic import atomic_path
from detect.waymo.schema import CAMERA, KEY_FIELDS, OBJECT_ID, SEGMENT, TIMESTAMP

GROUND_TRUTH_FILE = "ground_truth.parquet"

SCHEMA = pa.schema(
    [
        *KEY_FIELDS,
        (OBJECT_ID, pa.string()),
        ("type", pa.int8()),
        ("difficulty", pa.int8()),
        ("xmin", pa.float32()),
        ("ymin", pa.float32()),
        ("xmax", pa.float32()),
        ("ymax", pa.float32()),
    ]
)


def to_table(labels: Mapping[FrameKey, Labels], keys: Iterable[FrameKey]) -> pa.Table:
    """The labels of `keys` (images without labels add no rows), in (timestamp, camera) order."""
    chosen = [(k, labels[k]) for k in sorted(set(keys), key=lambda k: k.order) if k in labels and len(labels[k])]
    counts = [len(v) for _, v in chosen]
    xyxy = np.concatenate([v.xyxy for _, v in chosen]) if chosen else np.zeros((0, 4), np.float32)
    columns = {
        SEGMENT: pa.array(np.repeat([k.segment_context_name for k, _ in chosen], counts).tolist(), pa.string()),
        TIMESTAMP: pa.array(np.repeat([k.frame_timestamp_micros for k, _ in chosen], counts).astype(np.int64)),
        CAMERA: pa.array(np.repeat([int(k.camera_name) for k, _ in chosen], counts).astype(np.int8)),
        OBJECT_ID: pa.array([i for _, v in chosen for i in v.object_ids], pa.string()),
        "type": pa.array(np.concatenate([v.types for _, v in chosen]) if chosen else np.zeros(0, np.int8)),
        "difficulty": pa.array(np.concatenate([v.difficulty for _, v in chosen]) if chosen else np.zeros(0, np.int8)),
        **{name: pa.array(xyxy[:, i].astype(np.float32)) for i, name in enumerate(("xmin", "ymin", "xmax", "ymax"))},
    }
    return pa.table(columns, schema=SCHEMA)


def write_ground_truth(path: Path, labels: Mapping[FrameKey, Labels], keys: Iterable[FrameKey]) -> int:
    """Write atomically; returns the number of rows."""
    table = to_table(labels, keys)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows


def read_ground_truth(path: Path) -> dict[FrameKey, Labels]:
    """Labels by image from a file `write_ground_truth` wrote."""
    try:
        table = pq.read_table(path, schema=SCHEMA)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{path}: not a readable ground-truth table ({first_line(err)})") from None
    data = table.to_pydict()
    rows: dict[FrameKey, list[int]] = {}
    for i, (segment, ts, camera) in enumerate(zip(data[SEGMENT], data[TIMESTAMP], data[CAMERA], strict=True)):
        rows.setdefault(FrameKey(segment, ts, CameraName(camera)), []).append(i)
    xyxy = np.stack([np.asarray(data[c], np.float32) for c in ("xmin", "ymin", "xmax", "ymax")], axis=1)
    types, difficulty = np.asarray(data["type"], np.int8), np.asarray(data["difficulty"], np.int8)
    return {key: Labels(xyxy[idx], types[idx], difficulty[idx], tuple(data[OBJECT_ID][i] for i in idx))
            for key, idx in rows.items()}
