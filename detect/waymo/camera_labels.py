"""Waymo's 2D camera labels for one segment: the v2 `camera_box` component or v1 `camera_labels`.

v2: the `camera_box` file beside the `camera_image` file (`<split>/camera_box/<segment>.parquet`,
or the flat `<split>_camera_box_<segment>.parquet`), or the file or folder `--gt` names. Only the
label columns are read, and only the segment's rows (a row filter), so a folder of many segments'
labels costs one segment's worth. v1: the frames' `camera_labels`, collected by the key pass.
Boxes are Waymo's center and size in pixels; they become pixel `xyxy` here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import FrameKey, Labels, valid_label_rows
from detect.waymo.readers import SegmentKeys
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
    sibling_component,
)
from detect.waymo.sources import recorded_path, split_uri
from detect.waymo.tfrecord import TFRecordKeys

CAMERA_BOX_COMPONENT = "camera_box"
DIFFICULTY = "[CameraBoxComponent].difficulty_level.detection"
REQUIRED = (SEGMENT, TIMESTAMP, CAMERA, BOX_CENTER_X, BOX_CENTER_Y, BOX_SIZE_X, BOX_SIZE_Y, BOX_TYPE)


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentLabels:
    """Every labeled image of a segment, where the labels came from, and how many rows were
    dropped as unusable (see `valid_label_rows`: NaN or negative boxes, unknown types or cameras)."""

    origin: str
    by_key: Mapping[FrameKey, Labels]
    dropped: int = 0

    @property
    def count(self) -> int:
        return sum(len(labels) for labels in self.by_key.values())

    def get(self, key: FrameKey) -> Labels:
        return self.by_key.get(key) or Labels.empty()

    @property
    def types(self) -> frozenset[int]:
        """The Waymo types among the labels."""
        return label_types(self.by_key.values())


def label_types(labels: Iterable[Labels]) -> frozenset[int]:
    """The Waymo types among some images' labels."""
    return frozenset(int(t) for image in labels for t in np.unique(image.types))


def read_labels(keys: SegmentKeys, gt: str | None = None) -> SegmentLabels | None:
    """The segment's labels from `gt` (a camera_box file or folder), else from where the input
    keeps them; None when there are none. A `gt` that cannot be read is an InputError."""
    segment = keys.segment_context_name
    if gt is not None:
        return labels_from_camera_box(gt, segment)
    if isinstance(keys.reader_keys, TFRecordKeys):
        if not keys.reader_keys.labels:
            return None
        by_key = {FrameKey(segment, ts, CameraName(camera)): labels
                  for (ts, camera), labels in keys.reader_keys.labels.items() if camera in CAMERA_NUMBERS}
        dropped = keys.reader_keys.labels_dropped + sum(
            len(labels) for (_, camera), labels in keys.reader_keys.labels.items() if camera not in CAMERA_NUMBERS)
        return SegmentLabels(f"camera_labels in {recorded_path(keys.source)}", by_key, dropped)
    sibling = sibling_component(keys.source.path, CAMERA_BOX_COMPONENT)
    if sibling is None or keys.source.filesystem.get_file_info(sibling).type != pafs.FileType.File:
        return None
    prefix = keys.source.uri[: len(keys.source.uri) - len(keys.source.path)] if "://" in keys.source.uri else ""
    return _from_camera_box(prefix + sibling, segment)


def labels_from_camera_box(gt: str, segment: str) -> SegmentLabels:
    """The segment's labels in `gt`: a camera_box file, or a folder holding the segment's one."""
    return _from_camera_box(_camera_box_file(gt, segment), segment)


def camera_box_segments(gt: str, segment: str) -> list[str]:
    """The segments the camera_box file `gt` names for `segment` holds labels of, sorted: to tell
    a user whose labels they gave when none are the segment's (only the name column is read)."""
    fs, path = split_uri(_camera_box_file(gt, segment))
    try:
        column = pq.read_table(path, filesystem=fs, columns=[SEGMENT]).column(SEGMENT)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{gt}: cannot read the camera_box rows ({first_line(err)})") from None
    return sorted(str(name) for name in pc.unique(column).to_pylist() if name is not None)


def _camera_box_file(gt: str, segment: str) -> str:
    """`gt` itself when it is a file; in a folder, this segment's camera_box file."""
    fs, path = split_uri(gt)
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File:
        return gt
    if info.type != pafs.FileType.Directory:
        raise InputError(f"{gt}: no such ground-truth file or folder")
    candidates = [f"{path}/{segment}.parquet", f"{path}/{CAMERA_BOX_COMPONENT}/{segment}.parquet"]
    entries = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    candidates += sorted(e.path for e in entries if e.base_name.endswith(f"_{CAMERA_BOX_COMPONENT}_{segment}.parquet"))
    for candidate in candidates:
        if fs.get_file_info(candidate).type == pafs.FileType.File:
            return gt.rstrip("/") + candidate[len(path.rstrip("/")):]
    raise InputError(f"{gt}: no camera_box file for segment {segment} in this folder "
                     f"(looked for {segment}.parquet, camera_box/{segment}.parquet, *_camera_box_{segment}.parquet)")


def _from_camera_box(uri: str, segment: str) -> SegmentLabels:
    fs, path = split_uri(uri)
    try:
        schema = pq.read_schema(path, filesystem=fs)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{uri}: not a readable camera_box Parquet file ({first_line(err)})") from None
    missing = [c for c in REQUIRED if c not in schema.names]
    if missing:
        raise InputError(f"{uri}: not a camera_box component (no column {', '.join(missing)})")
    columns = [*REQUIRED, *(c for c in (OBJECT_ID, DIFFICULTY) if c in schema.names)]
    for name in columns:
        _check_type(uri, name, schema.field(name).type)
    try:
        table = pq.read_table(path, filesystem=fs, columns=columns, filters=[(SEGMENT, "==", segment)])
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{uri}: cannot read the camera_box rows ({first_line(err)})") from None
    return SegmentLabels(f"camera_box file {uri}", *labels_by_image(table, segment))


def labels_by_image(table: pa.Table, segment: str) -> tuple[dict[FrameKey, Labels], int]:
    """camera_box rows (types already checked) -> labels per image, and how many rows were unusable."""
    n = table.num_rows
    data = {c: _floats(table.column(c)) for c in table.column_names if c not in (SEGMENT, OBJECT_ID)}
    ids = table.column(OBJECT_ID).to_pylist() if OBJECT_ID in table.column_names else [str(i) for i in range(n)]
    difficulty = data.get(DIFFICULTY, np.zeros(n))
    values = {"cx": data[BOX_CENTER_X], "cy": data[BOX_CENTER_Y], "size_x": data[BOX_SIZE_X],
              "size_y": data[BOX_SIZE_Y], "type": data[BOX_TYPE], "difficulty": difficulty}
    ok = valid_label_rows(values) & np.isfinite(data[TIMESTAMP]) & np.isin(data[CAMERA], list(CAMERA_NUMBERS))
    timestamps = table.column(TIMESTAMP).to_numpy(zero_copy_only=False)  # exact int64 where valid
    rows_ok = np.flatnonzero(ok)
    order = rows_ok[np.lexsort((data[CAMERA][rows_ok], timestamps[rows_ok].astype(np.int64)))]
    by_key: dict[FrameKey, Labels] = {}
    groups: dict[tuple[int, int], list[int]] = {}
    for row in order:
        groups.setdefault((int(timestamps[row]), int(data[CAMERA][row])), []).append(int(row))
    for (timestamp, camera), rows in groups.items():
        by_key[FrameKey(segment, timestamp, CameraName(camera))] = Labels.from_centers(
            values["cx"][rows], values["cy"][rows], values["size_x"][rows], values["size_y"][rows],
            values["type"][rows].astype(np.int8), np.nan_to_num(difficulty[rows]).astype(np.int8),
            tuple("" if ids[r] is None else str(ids[r]) for r in rows))  # a null id names no object (not "None")
    return by_key, int(n - len(rows_ok))


def _check_type(uri: str, name: str, kind: pa.DataType) -> None:
    """A column of the wrong type names the file and the column (a string camera, a list of centers...)."""
    whole = name in (TIMESTAMP, CAMERA, BOX_TYPE, DIFFICULTY)
    if name in (SEGMENT, OBJECT_ID):
        ok = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        expected = "strings"
    else:
        ok = pa.types.is_integer(kind) or (not whole and pa.types.is_floating(kind))
        expected = "whole numbers" if whole else "numbers"
    if not ok:
        raise InputError(f"{uri}: column {name} holds {kind}, expected {expected}: not a camera_box component")


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    """A numeric column as float64, nulls as NaN."""
    return np.asarray(column.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
