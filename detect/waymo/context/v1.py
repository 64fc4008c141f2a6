"""A v1 segment's context from its frames, gathered in the key pass: `context.stats`,
`context.camera_calibrations`, `laser_labels`, `projected_lidar_labels` (their ids end with
`_<CAMERA NAME>`) and the camera labels' `association`. A frame that repeats a timestamp adds
nothing (as for its camera labels); a value no Waymo frame holds is a ValueError."""

from __future__ import annotations

from typing import Any

import numpy as np

from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.waymo.context.components import ROWS_PER_FRAME
from detect.waymo.context.frame_context import CameraCalibration, ImageContext, Labels3D, ProjectedBoxes
from detect.waymo.context.segment import (
    ASSOCIATION,
    CALIBRATION,
    LIDAR_BOX,
    PROJECTED_BOX,
    STATS,
    SegmentContext,
)


class V1ContextBuilder:
    """Collects the context of each new frame (`add`), then makes the record (`build`)."""

    def __init__(self) -> None:
        self._conditions: dict[int, ImageContext] = {}
        self._calibrations: dict[CameraName, CameraCalibration] = {}
        self._labels3d: dict[int, Labels3D] = {}
        self._projected: dict[tuple[int, int], ProjectedBoxes] = {}
        self._associations: dict[tuple[int, int], dict[str, str]] = {}
        self._found: set[str] = set()

    def add(self, frame: Any) -> None:
        """One parsed `dataset_pb2.Frame`; a ValueError when it holds what no Waymo frame does."""
        ts = int(frame.timestamp_micros)
        if ts in self._conditions:
            return
        stats = frame.context.stats
        self._conditions[ts] = ImageContext(stats.time_of_day, stats.location, stats.weather)
        if stats.time_of_day or stats.location or stats.weather:
            self._found.add(STATS)
        for calibration in frame.context.camera_calibrations:
            camera = _camera(calibration.name, "camera calibration")
            if camera not in self._calibrations:
                self._calibrations[camera] = _calibration(camera, calibration)
                self._found.add(CALIBRATION)
        if len(frame.laser_labels):
            self._labels3d[ts] = _labels3d(frame.laser_labels)
            self._found.add(LIDAR_BOX)
        total = sum(len(image.labels) for image in frame.projected_lidar_labels)
        if total > ROWS_PER_FRAME:
            raise ValueError(f"{total:,} projected 3D labels in one frame, more than {ROWS_PER_FRAME:,}")
        for image in frame.projected_lidar_labels:
            camera = _camera(image.name, "projected 3D labels")
            if image.labels and (ts, camera) not in self._projected:
                self._projected[(ts, camera)] = _projected(camera, image.labels)
                self._found.add(PROJECTED_BOX)
        for image in frame.camera_labels:
            ties = {label.id: label.association.laser_object_id for label in image.labels
                    if label.HasField("association")}
            if ties and image.name in CAMERA_NUMBERS:
                self._associations.setdefault((ts, int(image.name)), ties)
                self._found.add(ASSOCIATION)

    def build(self, segment: str) -> SegmentContext:
        return SegmentContext(segment, frozenset(self._found), dict(self._conditions), dict(self._calibrations),
                              dict(self._labels3d), dict(self._projected), dict(self._associations))


def _camera(number: int, what: str) -> CameraName:
    if number not in CAMERA_NUMBERS:
        raise ValueError(f"{what} of unknown camera {number}; expected 1-5")
    return CameraName(number)


def _calibration(camera: CameraName, calibration: Any) -> CameraCalibration:
    intrinsic = list(calibration.intrinsic)
    if len(intrinsic) != 9:
        raise ValueError(f"{camera.name} calibration has {len(intrinsic)} intrinsic values, expected 9 "
                         "(f_u, f_v, c_u, c_v, k1, k2, p1, p2, k3)")
    f_u, f_v, c_u, c_v, *distortion = intrinsic
    return CameraCalibration(camera, f_u, f_v, c_u, c_v, (distortion[0], distortion[1], distortion[2], distortion[3],
                                                          distortion[4]),
                             np.asarray(calibration.extrinsic.transform, np.float64), calibration.width,
                             calibration.height)


def _labels3d(labels: Any) -> Labels3D:
    if len(labels) > ROWS_PER_FRAME:
        raise ValueError(f"{len(labels):,} 3D labels in one frame, more than {ROWS_PER_FRAME:,}")
    boxes = [label.box for label in labels]
    return Labels3D(tuple(label.id for label in labels),
                    np.array([(b.center_x, b.center_y, b.center_z) for b in boxes], np.float64).reshape(-1, 3),
                    np.array([(b.length, b.width, b.height) for b in boxes], np.float64).reshape(-1, 3),
                    np.array([b.heading for b in boxes], np.float64), np.array([label.type for label in labels]))


def _projected(camera: CameraName, labels: Any) -> ProjectedBoxes:
    suffix = f"_{camera.name}"
    ids = tuple(label.id[: -len(suffix)] if label.id.endswith(suffix) else label.id for label in labels)
    boxes = [label.box for label in labels]
    return ProjectedBoxes.from_centers(ids, np.array([b.center_x for b in boxes]), np.array([b.center_y for b in boxes]),
                                       np.array([b.length for b in boxes]), np.array([b.width for b in boxes]))
