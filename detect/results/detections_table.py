"""detections.parquet read back: the one typed reader eval, the report's pages, its tracks section
and its galleries share, so all of them see the same boxes of an edited table.

It reads through `results_tables.read_table` (links refused, the row cap) and keeps the rows that
are detections by `detection_rows` (the one validity rule); the track ids are read by
`read_track_ids` (the one track-id rule). Each optional column is None when the table lacks it
(`label` only when asked: the evaluation does not read it).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import CLASS_ID_DTYPE, SCORE_DTYPE, XYXY_DTYPE, FrameKey
from detect.results import box_context
from detect.results.results_tables import (
    COORDINATES,
    DETECTION_COLUMNS,
    RowBudget,
    detection_rows,
    missing,
    not_boxes,
    numbers,
    read_table,
    read_track_ids,
)
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP


@dataclasses.dataclass(frozen=True, eq=False)
class DetectionTable:
    """The boxes of one detections.parquet (its rows that are detections, in the table's order): the
    columns of `Detections`, in its dtypes (`detect.core.records`), for every image, with each box's
    image key and the optional columns."""

    path: Path
    segments: list[str]  # each box's segment name
    timestamps: np.ndarray  # int64
    cameras: np.ndarray  # int64, a camera Waymo has
    xyxy: np.ndarray  # XYXY_DTYPE [N, 4] as the table holds them: finite, ordered
    scores: np.ndarray  # SCORE_DTYPE, finite
    class_ids: np.ndarray  # CLASS_ID_DTYPE, 0 to 2**31 - 1
    labels: np.ndarray | None = None  # str per box; None: not asked for
    track_ids: np.ndarray | None = None  # TRACK_ID_DTYPE per box, NO_TRACK for none; None: no track ids it can use
    range_m: np.ndarray | None = None  # float32 metres per box, NaN where unknown; None: no range column
    conditions: np.ndarray | None = None  # object [N, 3]: each box's image's time of day, location, weather
    not_boxes: str | None = None  # one line when some rows were left out as not boxes
    track_note: str | None = None  # one line when its track ids were left out, and why

    def __len__(self) -> int:
        return len(self.scores)

    @functools.cached_property
    def keys(self) -> list[FrameKey]:
        """Each box's image key; one FrameKey per image, shared by its boxes (a tiled run's table has
        a few hundred images and tens of thousands of boxes)."""
        made: dict[tuple[str, int, int], FrameKey] = {}
        keys = []
        for segment, timestamp, camera in zip(self.segments, self.timestamps.tolist(), self.cameras.tolist(), strict=True):
            key = made.get((segment, timestamp, camera))
            if key is None:
                key = made[segment, timestamp, camera] = FrameKey(segment, int(timestamp), CameraName(camera))
            keys.append(key)
        return keys

    @classmethod
    def empty(cls, path: Path, labels: bool = False) -> DetectionTable:
        """No boxes (a segment whose run wrote no table)."""
        return cls(path, [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 4), np.float32),
                   np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(0, str) if labels else None)

    def image_conditions(self) -> dict[FrameKey, tuple[str | None, ...]]:
        """Each image's conditions (`box_context.CONDITIONS`) from its first box; None where not recorded."""
        out: dict[FrameKey, tuple[str | None, ...]] = {}
        for position, key in enumerate(self.keys):
            if key not in out:
                out[key] = (tuple(None for _ in box_context.CONDITIONS) if self.conditions is None
                            else tuple(self.conditions[position].tolist()))
        return out

    def take(self, rows: np.ndarray) -> DetectionTable:
        """The boxes at `rows` (indices or a mask)."""
        index = np.flatnonzero(rows) if np.asarray(rows).dtype == bool else np.asarray(rows, np.int64)
        return dataclasses.replace(
            self, segments=[self.segments[i] for i in index.tolist()], timestamps=self.timestamps[index],
            cameras=self.cameras[index], xyxy=self.xyxy[index], scores=self.scores[index],
            class_ids=self.class_ids[index], labels=None if self.labels is None else self.labels[index],
            track_ids=None if self.track_ids is None else self.track_ids[index],
            range_m=None if self.range_m is None else self.range_m[index],
            conditions=None if self.conditions is None else self.conditions[index])


def read_detections(path: Path, budget: RowBudget, *, labels: bool = False) -> DetectionTable:
    """The detections table at `path` (`labels`: its `label` column too, which it must then have);
    `InputError` naming it when it cannot be read or is not a detections table."""
    columns = [*DETECTION_COLUMNS, "label"] if labels else list(DETECTION_COLUMNS)
    table = read_table(path, [*columns, "track_id", *box_context.NAMES], budget, "detections table")
    absent = missing(table, columns)
    if absent:
        raise InputError(f"{path}: not a detections table (no {', '.join(absent)} column)")
    try:
        ok = detection_rows(table)
        rows = np.flatnonzero(ok)
        taken = pa.array(rows, pa.int64())
        timestamps = table.column(TIMESTAMP).cast(pa.int64()).take(taken).to_numpy(zero_copy_only=False)
        names = table.column("label").cast(pa.string()).take(taken).to_pandas().astype(str).to_numpy() if labels else None
        segments = [str(s) for s in table.column(SEGMENT).take(taken).to_pylist()]
        xyxy = np.stack([numbers(table, c)[rows].astype(XYXY_DTYPE) for c in COORDINATES], axis=1).reshape(-1, 4)
        scores = numbers(table, "score")[rows].astype(SCORE_DTYPE)
        class_ids = numbers(table, "class_id")[rows].astype(CLASS_ID_DTYPE)
        cameras = numbers(table, CAMERA)[rows].astype(np.int64)
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a detections table ({first_line(err)})") from None
    tracks = read_track_ids(table, ok, path)
    return DetectionTable(path, segments, np.asarray(timestamps, np.int64), cameras, xyxy, scores, class_ids, names,
                          None if tracks.ids is None else tracks.ids[rows], range_m=_ranges(table, rows),
                          conditions=_conditions(table, rows), not_boxes=not_boxes(path, ok), track_note=tracks.note)


def _ranges(table: pa.Table, rows: np.ndarray) -> np.ndarray | None:
    """The kept rows' ranges; None without a range column, or with one of another type (an edited table)."""
    if box_context.RANGE not in table.column_names:
        return None
    try:
        return box_context.ranges_of(numbers(table, box_context.RANGE)[rows])
    except (pa.ArrowException, ValueError):
        return None


def _conditions(table: pa.Table, rows: np.ndarray) -> np.ndarray | None:
    """The kept rows' image conditions, texts only (anything else, as in an edited table, is None);
    None when the table has none of the columns."""
    present = [name for name in box_context.CONDITIONS if name in table.column_names]
    if not present:
        return None
    out = np.full((len(rows), len(box_context.CONDITIONS)), None, object)
    taken = pa.array(rows, pa.int64())
    for column, name in enumerate(box_context.CONDITIONS):
        if name in present:
            values = table.column(name).take(taken).to_pylist()
            out[:, column] = [v if isinstance(v, str) else None for v in values]
    return out
