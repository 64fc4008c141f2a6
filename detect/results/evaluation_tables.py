"""The evaluation's tables read back, matches.parquet, tracking.parquet and images.parquet, each by one typed
reader (a DataFrame of the columns the pages read, in the types they read them): through
`results_tables.read_table` (links refused, the row cap), the rows that are boxes (`box_rows`),
one line naming the file when it is not such a table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from detect.core.errors import InputError, first_line
from detect.results.results_tables import COORDINATES, RowBudget, box_rows, missing, numbers, read_table
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

MATCHES_COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, "kind", "type_name", "score", "iou", "matched", OBJECT_ID, "xmin", "ymin",
                   "xmax", "ymax", "class_id")
RANGE = "range_m"  # a box's distance from the car, metres (optional: NaN where the table has none)
IMAGE_COUNTS = ("labels", "hits", "false_alarms", "misses")
IMAGES_COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, "type_name", *IMAGE_COUNTS)
TRACKING_COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, "type_name", "track_id", OBJECT_ID, "id_switch", "previous_track_id",
                    "xmin", "ymin", "xmax", "ymax")


def read_matches_table(path: Path, budget: RowBudget) -> pd.DataFrame:
    """matches.parquet's boxes with its columns in the types the page reads (numbers: float, NaN for
    none; `RANGE` NaN throughout when the table has no such column)."""
    table = read_table(path, [*MATCHES_COLUMNS, RANGE], budget, "matches table")
    absent = missing(table, MATCHES_COLUMNS)
    if absent:
        raise InputError(f"{path}: not a matches table (no {', '.join(absent)} column)")
    try:
        rows = pa.array(np.flatnonzero(box_rows(table)))
        frame = pd.DataFrame({c: table.column(c).cast(pa.string()).take(rows).to_pandas()
                              for c in (SEGMENT, "kind", "type_name", OBJECT_ID)})
        frame["matched"] = pc.fill_null(table.column("matched").cast(pa.bool_()), False).take(rows).to_pandas()
        for column in (TIMESTAMP, CAMERA, "score", "iou", "xmin", "ymin", "xmax", "ymax", "class_id"):
            frame[column] = numbers(table, column)[rows.to_numpy()]
        frame[RANGE] = numbers(table, RANGE)[rows.to_numpy()] if RANGE in table.column_names else np.nan
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a readable matches table ({first_line(err)})") from None
    frame[TIMESTAMP] = frame[TIMESTAMP].astype("int64")
    frame[CAMERA] = frame[CAMERA].astype("int64")
    return frame[[*MATCHES_COLUMNS, RANGE]]


def read_tracking_table(path: Path, budget: RowBudget) -> pd.DataFrame:
    """tracking.parquet's boxes (`box_rows`) with the columns the ID switches need; track ids as
    floats (NaN: none or not a whole number)."""
    table = read_table(path, TRACKING_COLUMNS, budget, "tracking table")
    absent = missing(table, TRACKING_COLUMNS)
    if absent:
        raise InputError(f"{path}: not a tracking table (no {', '.join(absent)} column)")
    try:
        rows = np.flatnonzero(box_rows(table))
        frame = pd.DataFrame({c: table.column(c).cast(kind).take(pa.array(rows)).to_pandas()
                              for c, kind in ((SEGMENT, pa.string()), ("type_name", pa.string()),
                                              (OBJECT_ID, pa.string()), ("id_switch", pa.bool_()))})
        for column in (TIMESTAMP, CAMERA, "track_id", "previous_track_id", *COORDINATES):
            values = numbers(table, column)[rows]
            with np.errstate(invalid="ignore"):
                frame[column] = np.where(values == np.floor(values), values, np.nan) if "track_id" in column else values
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a readable tracking table ({first_line(err)})") from None
    frame[TIMESTAMP] = frame[TIMESTAMP].astype("int64")
    frame[CAMERA] = frame[CAMERA].astype("int64")
    return frame


def read_images_table(path: Path, budget: RowBudget) -> pd.DataFrame:
    """images.parquet: per camera image and Waymo type, its labels, hits, false alarms and misses
    (whole numbers; a null reads as 0)."""
    table = read_table(path, IMAGES_COLUMNS, budget, "images table")
    absent = missing(table, IMAGES_COLUMNS)
    if absent:
        raise InputError(f"{path}: not an images table (no {', '.join(absent)} column)")
    try:
        frame = pd.DataFrame({SEGMENT: table.column(SEGMENT).cast(pa.string()).to_pandas(),
                              "type_name": table.column("type_name").cast(pa.string()).to_pandas()})
        for column in (TIMESTAMP, CAMERA, *IMAGE_COUNTS):
            values = numbers(table, column)
            frame[column] = np.nan_to_num(values, nan=0.0).astype(np.int64)
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a readable images table ({first_line(err)})") from None
    return frame
