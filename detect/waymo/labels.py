"""Waymo's 2D camera labels for one segment: the v2 `camera_box` component or v1 `camera_labels`.

v2: the `camera_box` file beside the `camera_image` file (`<split>/camera_box/<segment>.parquet`,
or the flat `<split>_camera_box_<segment>.parquet`), or the file or folder `--gt` names. Only the
label columns are read, and only the segment's rows (a row filter), so a folder of many segments'
labels costs one segment's worth. v1: the frames' `camera_labels`, collected by the key pass.
Boxes are Waymo's center and size in pixels; they become pixel `xyxy` here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import FrameKey, Labels
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
from detect.waymo.sources import split_uri
from detect.waymo.tfrecord import TFRecordKeys

CAMERA_BOX_COMPONENT = "camera_box"
DIFFICULTY = "[CameraBoxComponent].difficulty_level.detection"
REQUIRED = (SEGMENT, TIMESTAMP, CAMERA, BOX_CENTER_X, BOX_CENTER_Y, BOX_SIZE_X, BOX_SIZE_Y, BOX_TYPE)


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentLabels:
    """Every labeled image of a segment, and where the labels came from."""

    origin: str
    by_key: Mapping[FrameKey, Labels]

    @property
    def count(self) -> int:
        return sum(len(labels) for labels in self.by_key.values())

    def get(self, key: FrameKey) -> Labels:
        return self.by_key.get(key) or Labels.empty()


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
                  for (ts, camera), labels in keys.reader_keys.labels.items() if camera in CameraName._value2member_map_}
        return SegmentLabels(f"camera_labels in {keys.source.uri}", by_key)
    sibling = sibling_component(keys.source.path, CAMERA_BOX_COMPONENT)
    if sibling is None or keys.source.filesystem.get_file_info(sibling).type != pafs.FileType.File:
        return None
    prefix = keys.source.uri[: len(keys.source.uri) - len(keys.source.path)] if "://" in keys.source.uri else ""
    return _from_camera_box(prefix + sibling, segment)


def labels_from_camera_box(gt: str, segment: str) -> SegmentLabels:
    """The segment's labels in `gt`: a camera_box file, or a folder holding the segment's one."""
    return _from_camera_box(_camera_box_file(gt, segment), segment)


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
    try:
        table = pq.read_table(path, filesystem=fs, columns=columns, filters=[(SEGMENT, "==", segment)])
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{uri}: cannot read the camera_box rows ({first_line(err)})") from None
    if any(table.column(c).null_count for c in REQUIRED):
        raise InputError(f"{uri}: camera_box columns hold null values")
    data = {c: table.column(c).to_numpy() for c in columns if c != OBJECT_ID}
    ids = table.column(OBJECT_ID).to_pylist() if OBJECT_ID in columns else [str(i) for i in range(table.num_rows)]
    difficulty = data.get(DIFFICULTY, np.ones(table.num_rows, np.int8))
    order = np.lexsort((data[CAMERA], data[TIMESTAMP]))
    by_key: dict[FrameKey, Labels] = {}
    keys = np.stack([data[TIMESTAMP][order], data[CAMERA][order]], axis=1) if len(order) else np.zeros((0, 2), np.int64)
    starts = np.flatnonzero(np.r_[True, (np.diff(keys, axis=0) != 0).any(axis=1)]) if len(order) else np.zeros(0, int)
    for begin, end in zip(starts, [*starts[1:], len(order)], strict=True):
        rows = order[begin:end]
        camera = int(data[CAMERA][rows[0]])
        if camera not in CameraName._value2member_map_:
            raise InputError(f"{uri}: unknown {CAMERA} value {camera}; expected 1-5")
        key = FrameKey(segment, int(data[TIMESTAMP][rows[0]]), CameraName(camera))
        by_key[key] = Labels.from_centers(data[BOX_CENTER_X][rows], data[BOX_CENTER_Y][rows], data[BOX_SIZE_X][rows],
                                          data[BOX_SIZE_Y][rows], data[BOX_TYPE][rows], difficulty[rows],
                                          tuple(str(ids[r]) for r in rows))
    return SegmentLabels(f"camera_box file {uri}", by_key)
