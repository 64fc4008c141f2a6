"""`ground_truth.parquet`: Waymo's labels for the images a run processed, beside its detections.

One row per label box, keyed with Waymo's key names like `detections.parquet`, so a results
directory is enough to evaluate (`detect eval`) even after the input files are gone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import FrameKey, Labels, valid_label_rows
from detect.results import box_context
from detect.results.results_tables import RowBudget, missing, read_table
from detect.waymo.context.segment import SegmentContext
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
        *box_context.FIELDS,  # each label's range and its image's conditions, null where not known
    ]
)
REQUIRED = tuple(name for name in SCHEMA.names if name not in box_context.NAMES)


def to_table(labels: Mapping[FrameKey, Labels], keys: Iterable[FrameKey], context: SegmentContext | None = None,
             sizes: Mapping[FrameKey, tuple[int, int]] | None = None) -> pa.Table:
    """The labels of `keys` (images without labels add no rows), in (timestamp, camera) order;
    with their ranges and their images' conditions from `context` (images of `sizes`) when given."""
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
        **box_context.null_columns(len(xyxy)),
    }
    table = pa.table(columns, schema=SCHEMA)
    if context is None:
        return table
    object_ids = [i for _, v in chosen for i in v.object_ids]
    return box_context.with_context(table, box_context.context_columns(table, context, sizes, object_ids))


# All of a segment's labels, for render workers that draw errors away from the driver (Ray).
RENDER_LABELS_FILE = "labels.parquet"


def write_ground_truth(path: Path, labels: Mapping[FrameKey, Labels], keys: Iterable[FrameKey],
                       context: SegmentContext | None = None,
                       sizes: Mapping[FrameKey, tuple[int, int]] | None = None) -> int:
    """Write atomically (`to_table`'s rows); returns the number of rows."""
    table = to_table(labels, keys, context, sizes)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows


def read_ground_truth(path: Path, budget: RowBudget | None = None) -> tuple[dict[FrameKey, Labels], int]:
    """Labels by image from a file `write_ground_truth` wrote, and how many rows were unusable;
    `budget`: what a results folder's table may hold (`detect.results.results_tables`; None: a file
    this run wrote for its own render tasks).

    A results folder is shared and may be edited: rows with a null key, an unknown camera, a
    NaN or inverted box, or a type or difficulty outside Waymo's enums are dropped and counted.
    """
    table = read_ground_truth_table(path, budget)
    return table.labels, table.dropped


@dataclasses.dataclass(frozen=True, eq=False)
class GroundTruthTable:
    """ground_truth.parquet read back: labels by image, the unusable rows, and the labels' context
    (each label's range, NaN where unknown, in the order of its image's labels; each image's
    conditions, None where not recorded)."""

    labels: dict[FrameKey, Labels]
    dropped: int
    ranges: dict[FrameKey, np.ndarray]
    conditions: dict[FrameKey, tuple[str | None, ...]]


def read_ground_truth_table(path: Path, budget: RowBudget | None = None) -> GroundTruthTable:
    """`read_ground_truth`'s rows, with their context columns (null in a table written before them)."""
    table = read_table(path, SCHEMA.names, budget or RowBudget(0, 1 << 62), "ground-truth table")
    absent = missing(table, REQUIRED)
    if absent:
        raise InputError(f"{path}: not a ground-truth table (no {', '.join(absent)} column)")
    try:
        table = box_context.with_absent(table).select(SCHEMA.names).cast(SCHEMA)
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a readable ground-truth table ({first_line(err)})") from None
    data = table.to_pydict()
    floats = {c: np.asarray([np.nan if v is None else v for v in data[c]], np.float64)
              for c in ("xmin", "ymin", "xmax", "ymax", "type", "difficulty", CAMERA, box_context.RANGE)}
    ok = valid_label_rows({"cx": (floats["xmin"] + floats["xmax"]) / 2, "cy": (floats["ymin"] + floats["ymax"]) / 2,
                           "size_x": floats["xmax"] - floats["xmin"], "size_y": floats["ymax"] - floats["ymin"],
                           "type": floats["type"], "difficulty": floats["difficulty"]})
    ok &= np.isin(floats[CAMERA], [int(c) for c in CameraName])
    ok &= np.array([s is not None and t is not None for s, t in zip(data[SEGMENT], data[TIMESTAMP], strict=True)], bool)
    rows: dict[FrameKey, list[int]] = {}
    for i in np.flatnonzero(ok):
        rows.setdefault(FrameKey(data[SEGMENT][i], data[TIMESTAMP][i], CameraName(int(floats[CAMERA][i]))), []).append(int(i))
    xyxy = np.stack([floats[c] for c in ("xmin", "ymin", "xmax", "ymax")], axis=1).reshape(-1, 4)
    types, difficulty = np.nan_to_num(floats["type"]).astype(np.int8), np.nan_to_num(floats["difficulty"]).astype(np.int8)
    ids = ["" if i is None else str(i) for i in data[OBJECT_ID]]  # a null id names no object (not "None")
    labels = {key: Labels(xyxy[idx], types[idx], difficulty[idx], tuple(ids[i] for i in idx)) for key, idx in rows.items()}
    ranges = box_context.ranges_of(floats[box_context.RANGE])
    conditions = box_context.conditions_of(data, rows)
    return GroundTruthTable(labels, int(len(ok) - ok.sum()), {key: ranges[idx] for key, idx in rows.items()}, conditions)
