"""Waymo v2 camera_box files written from a few dict rows, for tests of how labels are read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from detect.waymo.camera_labels import DIFFICULTY
from detect.waymo.schema import (
    BOX_CENTER_X,
    BOX_CENTER_Y,
    BOX_SIZE_X,
    BOX_SIZE_Y,
    BOX_TYPE,
    CAMERA,
    OBJECT_ID,
    SEGMENT,
    TIMESTAMP,
)

SEG = "seg_a"
TS = 1_553_735_853_462_203


def camera_box(path: Path, rows: list[dict], types: dict[str, pa.DataType] | None = None) -> Path:
    """A camera_box file from dict rows (missing keys: a valid default), column types overridable."""
    defaults = {SEGMENT: SEG, TIMESTAMP: TS, CAMERA: 1, OBJECT_ID: "o", BOX_CENTER_X: 100.0, BOX_CENTER_Y: 100.0,
                BOX_SIZE_X: 20.0, BOX_SIZE_Y: 10.0, BOX_TYPE: 1, DIFFICULTY: 1}
    kinds = {SEGMENT: pa.string(), TIMESTAMP: pa.int64(), CAMERA: pa.int8(), OBJECT_ID: pa.string(),
             BOX_CENTER_X: pa.float64(), BOX_CENTER_Y: pa.float64(), BOX_SIZE_X: pa.float64(), BOX_SIZE_Y: pa.float64(),
             BOX_TYPE: pa.int16(), DIFFICULTY: pa.int8()} | (types or {})
    table = pa.table({c: pa.array([r.get(c, d) for r in rows], kinds[c]) for c, d in defaults.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path
