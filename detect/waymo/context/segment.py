"""One segment's context, by image: the frame's conditions, the camera's calibration, the frame's 3D
labels and their boxes in that camera, and the camera labels' ties to them; with each image's box
ranges drawn from them (`ranges.box_ranges`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from detect.core.cameras import CameraName
from detect.core.records import FrameKey, WaymoType
from detect.waymo.context.frame_context import (
    NO_CONTEXT,
    BoxRanges,
    CameraCalibration,
    ImageContext,
    Labels3D,
    ProjectedBoxes,
)
from detect.waymo.context.ranges import box_ranges

# What each part of a segment's context is called where it comes from (v2 component names).
STATS, CALIBRATION, LIDAR_BOX, PROJECTED_BOX, ASSOCIATION = (
    "stats", "camera_calibration", "lidar_box", "projected_lidar_box", "camera_to_lidar_box_association")
PARTS = (STATS, CALIBRATION, LIDAR_BOX, PROJECTED_BOX, ASSOCIATION)


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentContext:
    """What a segment's files say around its camera images. `found` names the parts its source has
    (v2 components beside the camera_image file; the frames' fields in v1): a part not found is "not
    available", and every image's value from it None."""

    segment_context_name: str
    found: frozenset[str] = frozenset()
    conditions: Mapping[int, ImageContext] = dataclasses.field(default_factory=dict)  # by frame timestamp
    calibrations: Mapping[CameraName, CameraCalibration] = dataclasses.field(default_factory=dict)
    labels3d: Mapping[int, Labels3D] = dataclasses.field(default_factory=dict)  # by frame timestamp
    projected: Mapping[tuple[int, int], ProjectedBoxes] = dataclasses.field(default_factory=dict)  # (ts, camera)
    # (ts, camera) -> camera label id -> 3D label id
    associations: Mapping[tuple[int, int], Mapping[str, str]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.found) - set(PARTS)
        if unknown:
            raise ValueError(f"unknown context parts {sorted(unknown)}; expected some of {PARTS}")

    def image_context(self, key: FrameKey) -> ImageContext:
        """The conditions of the image's frame (every field None where the source has none)."""
        return self.conditions.get(key.frame_timestamp_micros, NO_CONTEXT)

    def calibration(self, camera: CameraName) -> CameraCalibration | None:
        return self.calibrations.get(camera)

    def box_ranges(self, key: FrameKey, xyxy: np.ndarray, object_ids: Sequence[str] | None = None,
                   image_size: tuple[int, int] | None = None) -> BoxRanges:
        """The range of each box of one image (`ranges.box_ranges`'s rule). `object_ids`: the camera
        labels' ids, which the association component ties to 3D labels (None for detections)."""
        ts, camera = key.frame_timestamp_micros, int(key.camera_name)
        ties = self.associations.get((ts, camera))
        associated = [ties.get(i) for i in object_ids] if ties and object_ids is not None else None
        return box_ranges(xyxy, self.labels3d.get(ts), self.projected.get((ts, camera)), associated,
                          self.calibrations.get(key.camera_name), image_size)

    def ground_standing_bottoms(self) -> np.ndarray:
        """float64: the bottom heights of every 3D label that stands on the ground (vehicles,
        pedestrians, cyclists; signs hang above it): where the ground plane is (`GROUND_Z_M`)."""
        bottoms = [labels.bottom_z[labels.types != WaymoType.SIGN] for labels in self.labels3d.values()]
        return np.concatenate(bottoms) if bottoms else np.zeros(0)
