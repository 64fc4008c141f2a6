"""The context columns of detections.parquet and ground_truth.parquet: each box's range from the
car and where it came from, and its image's conditions (time of day, location, weather).

Both tables carry them the same way, as optional columns: a table written before them (or by a
run whose input had no context) reads with them null, and every slice they feed says "not
available" there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.records import FrameKey
from detect.waymo.context.frame_context import BoxRanges, RangeSource
from detect.waymo.context.segment import SegmentContext
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP

RANGE = "range_m"
RANGE_SOURCE = "range_source"
CONDITIONS = ("time_of_day", "location", "weather")
FIELDS: tuple[pa.Field, ...] = (
    pa.field(RANGE, pa.float32()),  # metres over the ground from the vehicle's origin; null: not known
    pa.field(RANGE_SOURCE, pa.string()),  # association, projected_box, ground_plane; null with the range
    *(pa.field(name, pa.string()) for name in CONDITIONS),  # the image's `stats`; null: not recorded
)
NAMES = tuple(field.name for field in FIELDS)
SOURCE_NAMES = {int(s): s.text for s in RangeSource}


def null_columns(rows: int) -> dict[str, pa.Array]:
    """The context columns of `rows` rows when nothing is known."""
    return {field.name: pa.nulls(rows, field.type) for field in FIELDS}


def context_columns(table: pa.Table, context: SegmentContext,
                    sizes: Mapping[FrameKey, tuple[int, int]] | None = None,
                    object_ids: Sequence[str] | None = None) -> dict[str, pa.Array]:
    """The context columns of a table of boxes (Waymo's key columns and xmin..ymax, one image's rows
    together, as both tables are written). `sizes`: each image's (width, height) as decoded;
    `object_ids`: one per row for labels (the association component ties them), None for detections."""
    n = table.num_rows
    segments = table.column(SEGMENT).to_pylist()
    timestamps = np.asarray(table.column(TIMESTAMP).to_numpy(zero_copy_only=False), np.int64)
    cameras = np.asarray(table.column(CAMERA).to_numpy(zero_copy_only=False), np.int64)
    xyxy = np.stack([np.asarray(table.column(c).to_numpy(zero_copy_only=False), np.float64)
                     for c in ("xmin", "ymin", "xmax", "ymax")], axis=1).reshape(-1, 4)
    range_m = np.full(n, np.nan, np.float32)
    source = np.zeros(n, np.int8)
    conditions: list[list[str | None]] = [[None] * n for _ in CONDITIONS]
    for start, stop in _image_runs(timestamps, cameras):
        key = FrameKey(segments[start], int(timestamps[start]), CameraName(int(cameras[start])))
        ranges: BoxRanges = context.box_ranges(key, xyxy[start:stop], None if object_ids is None
                                               else object_ids[start:stop], None if sizes is None else sizes.get(key))
        range_m[start:stop], source[start:stop] = ranges.range_m, ranges.source
        image = context.image_context(key)
        for values, name in zip(conditions, CONDITIONS, strict=True):
            values[start:stop] = [getattr(image, name)] * (stop - start)
    return {
        RANGE: pa.array(range_m, pa.float32(), mask=np.isnan(range_m)),
        RANGE_SOURCE: pa.array([SOURCE_NAMES[int(s)] for s in source.tolist()], pa.string()),
        **{name: pa.array(values, pa.string()) for name, values in zip(CONDITIONS, conditions, strict=True)},
    }


def with_context(table: pa.Table, columns: Mapping[str, pa.Array]) -> pa.Table:
    """`table` with its context columns set to `columns` (each one value per row)."""
    for name, column in columns.items():
        table = table.set_column(table.schema.get_field_index(name), name, column)
    return table


def with_absent(table: pa.Table) -> pa.Table:
    """A table read back, with the context columns it lacks (written before them) as nulls, and
    those that do not hold their type (an edited table: ranges as text) as nulls too: optional
    columns never make a table unreadable."""
    for field in FIELDS:
        if field.name in table.column_names:
            try:
                column = table.column(field.name).cast(field.type)
            except (pa.ArrowException, ValueError):
                column = pa.nulls(table.num_rows, field.type)
            table = table.set_column(table.schema.get_field_index(field.name), field, column)
        else:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table


def ranges_of(values: np.ndarray) -> np.ndarray:
    """A range column read back (float64, NaN for null) as float32 metres: a value no range can be
    (negative, infinite: an edited table) is unknown."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values >= 0), values, np.nan).astype(np.float32)


def conditions_of(data: Mapping[str, list[object]], rows: Mapping[FrameKey, list[int]]) -> dict[FrameKey, tuple[str | None, ...]]:
    """Each image's conditions from its first row (`data`: a table's columns as lists), texts only."""
    columns = [data.get(name) or [] for name in CONDITIONS]
    out: dict[FrameKey, tuple[str | None, ...]] = {}
    for key, idx in rows.items():
        first = idx[0]
        out[key] = tuple(_text(c[first]) if first < len(c) else None for c in columns)
    return out


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _image_runs(timestamps: np.ndarray, cameras: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of rows of one image."""
    if not len(timestamps):
        return []
    change = np.flatnonzero((np.diff(timestamps) != 0) | (np.diff(cameras) != 0)) + 1
    bounds = [0, *change.tolist(), len(timestamps)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))
