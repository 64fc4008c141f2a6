"""The Parquet tables of a results folder read back (detections.parquet, ground_truth.parquet,
matches.parquet, tracking.parquet): one link policy, one row cap, one rule for a box and one for
track ids, so that every reader (eval, export, compare, report, track) sees the same rows of an
edited table and none can be made to use gigabytes by a small file.

- **Links**: only a regular file is read, a symbolic link is refused (`core.files.open_regular`):
  a results folder is shared, and a link could pull in any file of the machine.
- **The row cap**: a table's row count is read from its footer before any row is decoded. Parquet's
  dictionary and run-length encodings store 5,000,000 identical rows in ~200 KB, which pyarrow and
  pandas then hold as gigabytes; a table is refused (one line naming it) when it holds more rows than
  the images it describes could: `ROWS_PER_IMAGE` an image, or twice the boxes the run's journal
  records (a run that kept more, down to a low score floor with tiles), and never fewer than
  `MIN_ROWS`. The images are counted from what the folder holds (its journal, else its frames on
  disk), never from a count a file states.
- **A box** (`box_rows`, `detection_rows`): a row with its image's key (a segment name, a whole
  timestamp, a camera Waymo has) and finite coordinates with xmax >= xmin and ymax >= ymin; a detection also
  has a finite score and a class id of 0 to 2**31 - 1. Other rows (an edited table: NaN, infinite,
  inverted, null) are not boxes: eval, the report and the tracker leave them out alike.
- **Track ids** (`read_track_ids`): whole numbers >= 0 (an integer column, or a float column with NaN
  for none, as pandas writes an integer column with nulls); null and negative values are "no track".
  A column of another type (strings) or with other values (1.5, infinity), or a track id on two
  boxes of one image (an edited or merged table), cannot say which box an id follows: the table's
  track ids are left out, with a note naming the file, and `detect track` writes them again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.files import open_regular
from detect.core.records import NO_TRACK, TRACK_ID_DTYPE
from detect.results.frames import list_frames
from detect.results.journal import journal_path
from detect.results.results_folder import finished_frames, read_manifest
from detect.results.run_folder import find_segment_folders
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP

MIN_ROWS = 100_000  # a table this long is always read (tens of MB in the readers at most)
# Rows an image may add: CenterNet keeps its top 1,000 peaks a pass, a tiled run at the default
# score floor ~100-250 boxes an image; labels (Waymo: tens an image) and matches (boxes + labels) fit too.
ROWS_PER_IMAGE = 1_000
COORDINATES = ("xmin", "ymin", "xmax", "ymax")
BOX_COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, *COORDINATES)
DETECTION_COLUMNS = (*BOX_COLUMNS, "class_id", "score")
MAX_TRACK_ID = 2**53  # a float64 holds every whole number below it exactly
_CAMERAS = [int(c) for c in CameraName]


@dataclasses.dataclass(frozen=True)
class RowBudget:
    """What a results table may hold: the images it describes and the boxes their journal records."""

    images: int
    boxes: int = 0

    @property
    def rows(self) -> int:
        return MIN_ROWS + max(ROWS_PER_IMAGE * self.images, 2 * self.boxes)

    def __add__(self, other: RowBudget) -> RowBudget:
        return RowBudget(self.images + other.images, self.boxes + other.boxes)

    def refusal(self, path: Path, rows: int) -> str:
        return f"{path} holds {rows:,} rows, far more than {self.images:,} image(s) can ({self.rows:,} at most); not read"


# Each journal's budget by the identity of the file counted (device, inode, size, modification
# time) and the segment: a run's report reads its segments' budgets for every page.
_counted: dict[tuple[int, int, int, int, str], RowBudget] = {}


def segment_budget(directory: Path, segment: str | None = None) -> RowBudget:
    """A segment folder's budget: its journal's images and boxes, else its frames on disk
    (`segment`: its name, None: the one its manifest records)."""
    if segment is None:
        try:
            segment = read_manifest(directory).segment_context_name
        except InputError:
            return RowBudget(len(list_frames(directory)))
    try:
        info = journal_path(directory).lstat()
        identity: tuple[int, int, int, int, str] | None = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns,
                                                           segment)
    except OSError:
        identity = None
    if identity is not None and identity in _counted:
        return _counted[identity]
    done = finished_frames(directory, segment)
    if not done:
        return RowBudget(len(list_frames(directory)))
    budget = RowBudget(len(done), sum(len(r.detections) for r in done.values()))
    if identity is not None:
        _counted[identity] = budget
    return budget


def folder_budget(directory: Path) -> RowBudget:
    """The budget of every segment at or under `directory` (a run's tables hold all of theirs)."""
    total = RowBudget(0)
    for folder in find_segment_folders(directory).with_manifest():
        total += segment_budget(folder)
    return total


def read_table(path: Path, columns: Sequence[str], budget: RowBudget, what: str) -> pa.Table:
    """The `columns` of the table at `path` that it has (the caller checks for missing ones), read
    when `path` is a regular file within `budget`; else one `InputError` naming it."""
    fd = open_regular(path, follow_links=False)
    with os.fdopen(fd, "rb") as handle:
        try:
            parquet = pq.ParquetFile(handle)
            rows = max(parquet.metadata.num_rows,
                       sum(parquet.metadata.row_group(i).num_rows for i in range(parquet.metadata.num_row_groups)))
            if rows > budget.rows:
                raise InputError(budget.refusal(path, rows))
            names = parquet.schema_arrow.names
            return parquet.read(columns=[c for c in dict.fromkeys(columns) if c in names])
        except (pa.ArrowException, OSError, ValueError) as err:
            raise InputError(f"{path}: not a readable {what} ({first_line(err)})") from None


def missing(table: pa.Table, columns: Sequence[str]) -> list[str]:
    """The `columns` `table` does not have."""
    return [c for c in columns if c not in table.column_names]


def numbers(table: pa.Table, column: str) -> np.ndarray:
    """A column as float64, NaN for null; InputError-free: the caller catches what cannot be cast."""
    return np.asarray(table.column(column).cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def box_rows(table: pa.Table) -> np.ndarray:
    """Which rows are boxes (the module docstring): a key and finite, ordered coordinates.
    ArrowException / ValueError when a column holds what is not a number."""
    n = table.num_rows
    with np.errstate(invalid="ignore"):
        xmin, ymin, xmax, ymax = (numbers(table, c) for c in COORDINATES)
        timestamps = numbers(table, TIMESTAMP)
        ok = np.isfinite(xmin) & np.isfinite(ymin) & np.isfinite(xmax) & np.isfinite(ymax)
        ok &= (xmax >= xmin) & (ymax >= ymin)
        ok &= np.isfinite(timestamps) & (np.abs(timestamps) < 2**62) & (timestamps == np.floor(timestamps))
        ok &= np.isin(numbers(table, CAMERA), _CAMERAS)
    ok &= np.asarray(table.column(SEGMENT).is_valid().to_numpy(zero_copy_only=False), bool) if n else np.zeros(0, bool)
    return ok


def detection_rows(table: pa.Table) -> np.ndarray:
    """`box_rows` that also have a finite score and a class id of 0 to 2**31 - 1."""
    ok = box_rows(table)
    with np.errstate(invalid="ignore"):
        classes, scores = numbers(table, "class_id"), numbers(table, "score")
        ok &= np.isfinite(scores) & (classes >= 0) & (classes < 2**31) & (classes == np.floor(classes))
    return ok


def not_boxes(path: Path, rows: np.ndarray, then: str = "left out") -> str | None:
    """One line when some of a table's rows are not boxes (`rows`: the ones that are), else None."""
    count = int(len(rows) - np.count_nonzero(rows))
    return (f"{path}: {count:,} row(s) are not boxes (a null key, a camera Waymo does not have, a NaN, infinite or "
            f"inverted box, no score or class); {then}") if count else None


@dataclasses.dataclass(frozen=True, eq=False)
class TrackIds:
    """A table's track ids: `TRACK_ID_DTYPE` per row, `NO_TRACK` for none (None: none it can use) and
    why they were left out (None: they were not, or the table has no track_id column)."""

    ids: np.ndarray | None
    note: str | None = None


def read_track_ids(table: pa.Table, rows: np.ndarray, path: Path) -> TrackIds:
    """The track ids of `table`'s rows (the module docstring), checked on the rows `rows` marks
    (the boxes): no id twice on one image."""
    if "track_id" not in table.column_names:
        return TrackIds(None)
    column = table.column("track_id")
    left_out = "its track ids are left out (`detect track` writes them again)"
    kind = column.type
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_null(kind)):
        return TrackIds(None, f"{path}: track_id holds {kind} values, not whole numbers; {left_out}")
    values = numbers(table, "track_id")
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ((values != np.floor(values)) | (np.abs(values) >= MAX_TRACK_ID))
    if bad.any():
        return TrackIds(None, f"{path}: track_id holds {float(values[bad][0])!r}, not a whole number; {left_out}")
    with np.errstate(invalid="ignore"):
        ids = np.where(values >= 0, values, NO_TRACK).astype(TRACK_ID_DTYPE)
    twice = _twice(table, ids, rows)
    if twice is not None:
        return TrackIds(None, f"{path}: {twice} (an edited or merged table): which box it follows is unknown, so its "
                              f"track ids are left out, its detections kept (`detect track` writes them again)")
    return TrackIds(ids)


def _twice(table: pa.Table, ids: np.ndarray, rows: np.ndarray) -> str | None:
    """The first track id given to two boxes of one image, said in words; None when there is none."""
    kept = np.flatnonzero(rows & (ids >= 0))
    if not len(kept):
        return None
    codes = pc.fill_null(table.column(SEGMENT).dictionary_encode().combine_chunks().indices, -1)
    segments = np.asarray(codes.to_numpy(zero_copy_only=False), np.int64)[kept]
    timestamps = numbers(table, TIMESTAMP)[kept].astype(np.int64)
    cameras = numbers(table, CAMERA)[kept].astype(np.int64)
    order = np.lexsort((ids[kept], cameras, timestamps, segments))
    keys = np.stack([segments, timestamps, cameras, ids[kept]], axis=1)[order]
    same = np.flatnonzero(np.all(keys[1:] == keys[:-1], axis=1))
    if not len(same):
        return None
    _, timestamp, camera, track = keys[same[0]].tolist()
    return f"track id {track} is on two boxes of image {CameraName(camera).name} {timestamp}"
