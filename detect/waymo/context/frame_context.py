"""Frozen records of what Waymo says around a camera image, checked on construction.

A value no Waymo file holds (a NaN focal length, a 3D label 20 km away, a rotation that is not one)
is a ValueError naming the field and the value; the readers add the file and make it an InputError.
"""

from __future__ import annotations

import dataclasses
import enum
import math

import numpy as np

from detect.core.cameras import CameraName
from detect.core.records import WAYMO_TYPE_NUMBERS, boxes_array
from detect.waymo.images import MAX_SIDE, MIN_SIDE

MAX_TEXT = 64  # characters of a stats value ("Dawn/Dusk", "location_other"): more is not a condition
MAX_FOCAL_PX = 1e5  # Waymo's cameras: ~2,050 px
MAX_PIXEL = 1e6  # a principal point or a projected box this far from any image is not of it
MAX_DISTORTION = 1e3  # |k1..k3, p1, p2| (Waymo's: below 0.4)
MAX_MOUNT_M = 100.0  # a camera mounted farther than this from the vehicle's origin is not on it
MAX_COORDINATE_M = 10_000.0  # a 3D label's centre (lidar reaches ~75 m) and size
ROTATION_TOLERANCE = 1e-3  # |R^T R - I|: Waymo's extrinsics are orthonormal to ~1e-9


@dataclasses.dataclass(frozen=True)
class ImageContext:
    """The conditions of one frame (`[StatsComponent]`, v1 `context.stats`): None where not recorded."""

    time_of_day: str | None = None  # "Day", "Dawn/Dusk", "Night"
    location: str | None = None  # "location_sf", "location_phx", "location_other", ...
    weather: str | None = None  # "sunny", "rain"

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value == "":  # proto3's unset string
                object.__setattr__(self, field.name, None)
            elif value is not None and (not isinstance(value, str) or len(value) > MAX_TEXT):
                shown = f"{len(value)} characters" if isinstance(value, str) else type(value).__name__
                raise ValueError(f"{field.name} is {shown}, expected a short text (at most {MAX_TEXT} characters)")


NO_CONTEXT = ImageContext()


@dataclasses.dataclass(frozen=True, eq=False)
class CameraCalibration:
    """One camera's intrinsics (pixels), lens distortion (k1, k2, p1, p2, k3 as OpenCV orders them)
    and extrinsic: the 4x4 transform from the camera frame (x forward, y left, z up) to the vehicle
    frame (x forward, y left, z up, metres)."""

    camera_name: CameraName
    f_u: float
    f_v: float
    c_u: float
    c_v: float
    distortion: tuple[float, float, float, float, float]
    extrinsic: np.ndarray
    width: int
    height: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "camera_name", CameraName(int(self.camera_name)))
        for name in ("f_u", "f_v"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and 0 < value <= MAX_FOCAL_PX):
                raise ValueError(f"{self.camera_name.name} {name} is {value}, expected 0-{MAX_FOCAL_PX:g} pixels")
            object.__setattr__(self, name, value)
        for name in ("c_u", "c_v"):
            value = float(getattr(self, name))
            if not (math.isfinite(value) and abs(value) <= MAX_PIXEL):
                raise ValueError(f"{self.camera_name.name} {name} is {value}, expected a pixel position")
            object.__setattr__(self, name, value)
        distortion = tuple(float(k) for k in self.distortion)
        if len(distortion) != 5 or not all(math.isfinite(k) and abs(k) <= MAX_DISTORTION for k in distortion):
            raise ValueError(f"{self.camera_name.name} distortion is {distortion}, expected 5 finite coefficients")
        object.__setattr__(self, "distortion", distortion)
        object.__setattr__(self, "extrinsic", _rigid(self.extrinsic, self.camera_name.name))
        for name in ("width", "height"):
            value = getattr(self, name)
            if not (isinstance(value, int | np.integer) and MIN_SIDE <= value <= MAX_SIDE):
                raise ValueError(f"{self.camera_name.name} {name} is {value}, expected {MIN_SIDE}-{MAX_SIDE} pixels")
            object.__setattr__(self, name, int(value))

    def equals(self, other: CameraCalibration) -> bool:
        return (self.camera_name == other.camera_name and self.width == other.width and self.height == other.height
                and np.allclose([self.f_u, self.f_v, self.c_u, self.c_v, *self.distortion],
                                [other.f_u, other.f_v, other.c_u, other.c_v, *other.distortion])
                and np.allclose(self.extrinsic, other.extrinsic))


def _rigid(values: object, camera: str) -> np.ndarray:
    """A 4x4 float64 rotation and translation (the last row 0, 0, 0, 1), or a ValueError."""
    matrix = np.asarray(values, np.float64)
    if matrix.size != 16:
        raise ValueError(f"{camera} extrinsic has {matrix.size} values, expected 16 (a 4x4 transform)")
    matrix = matrix.reshape(4, 4)
    if not np.all(np.isfinite(matrix)):
        raise ValueError(f"{camera} extrinsic holds values that are not finite")
    rotation = matrix[:3, :3]
    if (not np.allclose(matrix[3], [0, 0, 0, 1])
            or np.abs(rotation.T @ rotation - np.eye(3)).max() > ROTATION_TOLERANCE or np.linalg.det(rotation) < 0):
        raise ValueError(f"{camera} extrinsic is not a rotation and a translation")
    if np.linalg.norm(matrix[:3, 3]) > MAX_MOUNT_M:
        raise ValueError(f"{camera} extrinsic puts the camera {np.linalg.norm(matrix[:3, 3]):.0f} m from the vehicle")
    matrix.setflags(write=False)
    return matrix


@dataclasses.dataclass(frozen=True, eq=False)
class Labels3D:
    """One frame's 3D labels (`lidar_box`, v1 `laser_labels`) in the vehicle frame: `center` and
    `size` float64 `[N, 3]` in metres, `heading` radians, `types` int8 Waymo types, the objects' ids."""

    object_ids: tuple[str, ...]
    center: np.ndarray
    size: np.ndarray
    heading: np.ndarray
    types: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.object_ids)
        center = _metres(self.center, "center", n)
        size = _metres(self.size, "size", n)
        heading = np.asarray(self.heading, np.float64).reshape(-1)
        types = np.asarray(self.types).reshape(-1)
        if heading.shape != (n,) or not np.all(np.isfinite(heading)):
            raise ValueError(f"3D label headings must be {n} finite angles, got shape {heading.shape}")
        if types.shape != (n,) or not np.all(np.isin(types, list(WAYMO_TYPE_NUMBERS))):
            bad = sorted(set(types.tolist()) - WAYMO_TYPE_NUMBERS)[:3]
            raise ValueError(f"3D label types must be {n} of Waymo's types 0-4, got {bad or types.shape}")
        if np.any(size < 0):
            raise ValueError("3D label sizes must be >= 0")
        object.__setattr__(self, "object_ids", tuple(str(i) for i in self.object_ids))
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "heading", heading)
        object.__setattr__(self, "types", types.astype(np.int8))

    def __len__(self) -> int:
        return len(self.object_ids)

    @property
    def range_m(self) -> np.ndarray:
        """float32 `[N]`: how far each label's centre is from the vehicle's origin, over the ground
        (the norm of the centre's x and y), as Waymo's RANGE breakdown measures it."""
        return np.hypot(self.center[:, 0], self.center[:, 1]).astype(np.float32)

    @property
    def bottom_z(self) -> np.ndarray:
        """float64 `[N]`: the height of each box's bottom face in the vehicle frame."""
        return self.center[:, 2] - self.size[:, 2] / 2

    @classmethod
    def empty(cls) -> Labels3D:
        return cls((), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int8))


def _metres(values: object, name: str, n: int) -> np.ndarray:
    array = np.asarray(values, np.float64)
    if array.size == 0 and n == 0:
        return np.zeros((0, 3))
    if array.shape != (n, 3):
        raise ValueError(f"3D label {name}s must have shape ({n}, 3), got {array.shape}")
    if not np.all(np.isfinite(array) & (np.abs(array) <= MAX_COORDINATE_M)):
        raise ValueError(f"3D label {name}s must be finite and within {MAX_COORDINATE_M:,.0f} m")
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class ProjectedBoxes:
    """The 3D labels seen by one camera image, each as its 2D box there (pixel `xyxy`, float32
    `[N, 4]`), keyed by the 3D label's id (`projected_lidar_box`, v1 `projected_lidar_labels`)."""

    object_ids: tuple[str, ...]
    xyxy: np.ndarray

    def __post_init__(self) -> None:
        xyxy = boxes_array(self.xyxy, "projected xyxy")
        if xyxy.shape[0] != len(self.object_ids):
            raise ValueError(f"projected boxes: {xyxy.shape[0]} boxes for {len(self.object_ids)} ids")
        if not np.all(np.isfinite(xyxy) & (np.abs(xyxy) <= MAX_PIXEL)) or np.any(xyxy[:, 2:] < xyxy[:, :2]):
            raise ValueError("projected boxes must be finite pixel boxes with a size >= 0")
        object.__setattr__(self, "object_ids", tuple(str(i) for i in self.object_ids))
        object.__setattr__(self, "xyxy", xyxy)

    def __len__(self) -> int:
        return len(self.object_ids)

    @classmethod
    def from_centers(cls, object_ids: tuple[str, ...], cx: np.ndarray, cy: np.ndarray, size_x: np.ndarray,
                     size_y: np.ndarray) -> ProjectedBoxes:
        """From Waymo's centre and size in pixels; a negative or non-finite size is refused."""
        cx, cy, sx, sy = (np.asarray(a, np.float64).reshape(-1) for a in (cx, cy, size_x, size_y))
        if not np.all(np.isfinite(sx) & np.isfinite(sy) & (sx >= 0) & (sy >= 0)):
            raise ValueError("projected box sizes must be finite and >= 0")
        xyxy = np.stack([cx - sx / 2, cy - sy / 2, cx + sx / 2, cy + sy / 2], axis=1) if len(cx) else np.zeros((0, 4))
        return cls(object_ids, xyxy)


class RangeSource(enum.IntEnum):
    """Where a box's `range_m` came from (the int8 a table stores, the name a page shows)."""

    NONE = 0  # not known: no 3D label tied, no calibration, or the ray misses the ground ahead
    ASSOCIATION = 1  # the 3D label the `camera_to_lidar_box_association` component ties the label to
    PROJECTED_BOX = 2  # the 3D label whose projected box overlaps it best, at IoU >= 0.5
    GROUND_PLANE = 3  # the ray through the box's bottom centre meets the ground there (calibration)

    @property
    def text(self) -> str | None:
        return None if self is RangeSource.NONE else self.name.lower()


@dataclasses.dataclass(frozen=True, eq=False)
class BoxRanges:
    """Each box's range over the ground from the vehicle's origin (float32 metres, NaN where not
    known) and where it came from (int8 `RangeSource`)."""

    range_m: np.ndarray
    source: np.ndarray

    def __post_init__(self) -> None:
        range_m = np.asarray(self.range_m, np.float32).reshape(-1)
        source = np.asarray(self.source).reshape(-1).astype(np.int8)
        if source.shape != range_m.shape:
            raise ValueError(f"range sources must have shape {range_m.shape}, got {source.shape}")
        if np.any(np.isnan(range_m) != (source == RangeSource.NONE)):
            raise ValueError("a range is known exactly where its source is")
        object.__setattr__(self, "range_m", range_m)
        object.__setattr__(self, "source", source)

    def __len__(self) -> int:
        return int(self.range_m.shape[0])

    def values(self) -> list[float | None]:
        """The ranges as Python numbers, None where not known (a table's nulls)."""
        return [None if math.isnan(v) else v for v in self.range_m.tolist()]

    @classmethod
    def unknown(cls, n: int) -> BoxRanges:
        return cls(np.full(n, np.nan, np.float32), np.zeros(n, np.int8))
