"""A v2 segment's context from the components beside its camera_image file: `stats`,
`camera_calibration`, `lidar_box`, `projected_lidar_box`, `camera_to_lidar_box_association`. A
component that is not there is not available; one that is there but not Waymo's is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.core.errors import InputError
from detect.waymo.context.components import Kind, find_sibling, read_component
from detect.waymo.context.frame_context import CameraCalibration, ImageContext, Labels3D, ProjectedBoxes
from detect.waymo.context.segment import (
    ASSOCIATION,
    CALIBRATION,
    LIDAR_BOX,
    PROJECTED_BOX,
    STATS,
    SegmentContext,
)
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP
from detect.waymo.sources import SegmentSource

LASER_ID = "key.laser_object_id"
_STATS = "[StatsComponent]."
_CALIBRATION = "[CameraCalibrationComponent]."
_INTRINSICS = tuple(_CALIBRATION + "intrinsic." + k for k in ("f_u", "f_v", "c_u", "c_v", "k1", "k2", "p1", "p2", "k3"))
_EXTRINSIC = _CALIBRATION + "extrinsic.transform"
_LIDAR = "[LiDARBoxComponent].box."
_PROJECTED = "[ProjectedLiDARBoxComponent].box."
_CONDITIONS = ("time_of_day", "location", "weather")

COLUMNS: dict[str, dict[str, Kind]] = {
    STATS: {SEGMENT: "text", TIMESTAMP: "whole", **{_STATS + c: "text" for c in _CONDITIONS}},
    CALIBRATION: {SEGMENT: "text", CAMERA: "whole", **dict.fromkeys(_INTRINSICS, "number"), _EXTRINSIC: "numbers",
                  _CALIBRATION + "width": "whole", _CALIBRATION + "height": "whole"},
    LIDAR_BOX: {SEGMENT: "text", TIMESTAMP: "whole", LASER_ID: "text",
                **{_LIDAR + f"{part}.{axis}": "number" for part in ("center", "size") for axis in "xyz"},
                _LIDAR + "heading": "number", "[LiDARBoxComponent].type": "whole"},
    PROJECTED_BOX: {SEGMENT: "text", TIMESTAMP: "whole", CAMERA: "whole", LASER_ID: "text",
                    **{_PROJECTED + c: "number" for c in ("center.x", "center.y", "size.x", "size.y")}},
    ASSOCIATION: {SEGMENT: "text", TIMESTAMP: "whole", CAMERA: "whole", OBJECT_ID: "text", LASER_ID: "text"},
}


def read_v2_context(source: SegmentSource, segment: str, frames: int) -> SegmentContext:
    """The context of `segment` (`frames` frames) from the components found beside `source`."""
    conditions = _read(source, STATS, segment, frames, _conditions)
    calibrations = _read(source, CALIBRATION, segment, frames, _calibrations)
    labels3d = _read(source, LIDAR_BOX, segment, frames, _labels3d)
    projected = _read(source, PROJECTED_BOX, segment, frames, _projected)
    associations = _read(source, ASSOCIATION, segment, frames, _associations)
    found = {STATS: conditions, CALIBRATION: calibrations, LIDAR_BOX: labels3d, PROJECTED_BOX: projected,
             ASSOCIATION: associations}
    return SegmentContext(segment, frozenset(k for k, v in found.items() if v is not None), conditions or {},
                          calibrations or {}, labels3d or {}, projected or {}, associations or {})


T = TypeVar("T")


def _read(source: SegmentSource, component: str, segment: str, frames: int,
          parse: Callable[[pa.Table], T]) -> T | None:
    """The component's part of the context, None when the segment has no such file."""
    file = find_sibling(source, component)
    if file is None:
        return None
    table = read_component(file, COLUMNS[component], segment, frames)
    try:
        return parse(table)
    except ValueError as err:
        raise InputError(f"{file.uri}: {err}: not a {component} component") from None


def _conditions(table: pa.Table) -> dict[int, ImageContext]:
    timestamps = _whole(table, TIMESTAMP)
    values = [_texts(table, _STATS + c) for c in _CONDITIONS]
    conditions: dict[int, ImageContext] = {}
    for row in _first_rows(timestamps):
        conditions[int(timestamps[row])] = ImageContext(*(v[row] for v in values))
    return conditions


def _calibrations(table: pa.Table) -> dict[CameraName, CameraCalibration]:
    cameras = _cameras(table)
    lengths = pc.list_value_length(table.column(_EXTRINSIC)).to_numpy(zero_copy_only=False)
    if np.any(lengths != 16):
        raise ValueError(f"an extrinsic holds {int(lengths[lengths != 16][0])} values, expected 16 (a 4x4 transform)")
    extrinsics = _numbers(pa.chunked_array([c.flatten() for c in table.column(_EXTRINSIC).chunks],
                                           pa.float64())).reshape(-1, 16)
    intrinsics = np.stack([_numbers(table.column(c)) for c in _INTRINSICS], axis=1)
    sizes = np.stack([_whole(table, _CALIBRATION + c) for c in ("width", "height")], axis=1)
    calibrations: dict[CameraName, CameraCalibration] = {}
    for row in _first_rows(cameras):
        f_u, f_v, c_u, c_v, *distortion = intrinsics[row].tolist()
        camera = CameraName(int(cameras[row]))
        calibrations[camera] = CameraCalibration(camera, f_u, f_v, c_u, c_v, tuple(distortion), extrinsics[row],
                                                 int(sizes[row, 0]), int(sizes[row, 1]))
    return calibrations


def _labels3d(table: pa.Table) -> dict[int, Labels3D]:
    timestamps = _whole(table, TIMESTAMP)
    ids = _texts(table, LASER_ID)
    center = np.stack([_numbers(table.column(_LIDAR + f"center.{a}")) for a in "xyz"], axis=1)
    size = np.stack([_numbers(table.column(_LIDAR + f"size.{a}")) for a in "xyz"], axis=1)
    heading = _numbers(table.column(_LIDAR + "heading"))
    types = _whole(table, "[LiDARBoxComponent].type")
    return {int(ts): Labels3D(tuple(ids[r] for r in rows), center[rows], size[rows], heading[rows], types[rows])
            for (ts,), rows in _groups(timestamps).items()}


def _projected(table: pa.Table) -> dict[tuple[int, int], ProjectedBoxes]:
    timestamps, cameras = _whole(table, TIMESTAMP), _cameras(table)
    ids = _texts(table, LASER_ID)
    cx, cy, sx, sy = (_numbers(table.column(_PROJECTED + c)) for c in ("center.x", "center.y", "size.x", "size.y"))
    by_image: dict[tuple[int, int], ProjectedBoxes] = {}
    for (ts, camera), rows in _groups(timestamps, cameras).items():
        by_image[(ts, camera)] = ProjectedBoxes.from_centers(tuple(ids[r] for r in rows), cx[rows], cy[rows],
                                                             sx[rows], sy[rows])
    return by_image


def _associations(table: pa.Table) -> dict[tuple[int, int], dict[str, str]]:
    timestamps, cameras = _whole(table, TIMESTAMP), _cameras(table)
    camera_ids, laser_ids = _texts(table, OBJECT_ID), _texts(table, LASER_ID)
    ties: dict[tuple[int, int], dict[str, str]] = {}
    for (ts, camera), rows in _groups(timestamps, cameras).items():
        image = ties.setdefault((ts, camera), {})
        for row in rows:
            image.setdefault(camera_ids[row], laser_ids[row])  # a label tied twice keeps its first tie
    return ties


def _groups(*keys: np.ndarray) -> dict[tuple[int, ...], np.ndarray]:
    """Row indices by the key columns' values, in file order within each."""
    if not len(keys[0]):
        return {}
    stacked = np.stack(keys, axis=1)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    order = np.argsort(inverse.reshape(-1), kind="stable")
    bounds = np.searchsorted(inverse.reshape(-1)[order], np.arange(len(unique) + 1))
    groups: dict[tuple[int, ...], np.ndarray] = {}
    for index, values in enumerate(unique.tolist()):
        groups[tuple(values)] = order[bounds[index]:bounds[index + 1]]
    return groups


def _first_rows(keys: np.ndarray) -> np.ndarray:
    """The first row of each key, in file order (a repeated key keeps its first row)."""
    _, first = np.unique(keys, return_index=True)
    return np.sort(first)


def _whole(table: pa.Table, name: str) -> np.ndarray:
    return np.asarray(table.column(name).to_numpy(), np.int64)


def _cameras(table: pa.Table) -> np.ndarray:
    cameras = _whole(table, CAMERA)
    unknown = sorted(set(cameras.tolist()) - CAMERA_NUMBERS)
    if unknown:
        raise ValueError(f"unknown {CAMERA} value(s) {unknown[:3]}; expected 1-5")
    return cameras


def _numbers(column: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(column.cast(pa.float64()).to_numpy(), np.float64)


def _texts(table: pa.Table, name: str) -> list[str]:
    """A text column (read as dictionaries) as one str a row."""
    return [str(v) for v in table.column(name).cast(pa.string()).to_pylist()]
