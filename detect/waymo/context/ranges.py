"""How far each 2D box is from the car: its tied 3D label's range, else where the ray through its
bottom centre meets the ground (pure numpy over one image's boxes).

The rule, in order: the 3D label the association component ties a camera label to; else the 3D
label whose box projected into the same camera overlaps the box best, at IoU >= 0.5; else the
ground-plane estimate from the camera's calibration; else unknown. Range is measured over the
ground from the vehicle's origin (the norm of x and y), as Waymo's RANGE breakdown does.

The ground plane sits at `GROUND_Z_M` in the vehicle frame: the median bottom of the 3D labels that
stand on the ground (vehicles, pedestrians, cyclists: signs hang above it) on the real frame. The
lens distortion is undone before the ray is cast: it moves a pixel by up to ~3% of its distance
from the image centre at the corners, which becomes the same share of a far object's range; near
the bottom centre it changes nothing measurable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from detect.core.boxes import box_iou
from detect.waymo.context.frame_context import BoxRanges, CameraCalibration, Labels3D, ProjectedBoxes, RangeSource

GROUND_Z_M = -0.19  # median bottom of the 50 ground-standing 3D labels of the real frame (-0.18 within 15 m)
MIN_TIE_IOU = 0.5
# Past this the ray meets the ground within ~0.1 degree of the horizon: a pitch of the road or of the
# car, or a pixel, moves the estimate by kilometres. Such a box is far, but how far is not known.
MAX_GROUND_RANGE_M = 1000.0
UNDISTORT_ITERATIONS = 20  # fixed-point steps: Waymo's lenses (|k| < 0.4) converge to < 1e-9 px in ~8


def undistort(x: np.ndarray, y: np.ndarray, distortion: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Normalized image coordinates with the lens distortion undone (Waymo's and OpenCV's model:
    radial k1, k2, k3 and tangential p1, p2), by fixed-point iteration as OpenCV's undistortPoints."""
    k1, k2, p1, p2, k3 = distortion
    xu, yu = np.array(x, np.float64), np.array(y, np.float64)
    for _ in range(UNDISTORT_ITERATIONS):
        r2 = xu * xu + yu * yu
        radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        dx = 2 * p1 * xu * yu + p2 * (r2 + 2 * xu * xu)
        dy = p1 * (r2 + 2 * yu * yu) + 2 * p2 * xu * yu
        with np.errstate(all="ignore"):
            xu, yu = (x - dx) / radial, (y - dy) / radial
    return xu, yu


def distort(x: np.ndarray, y: np.ndarray, distortion: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """The lens's own mapping of normalized coordinates (what `undistort` inverts)."""
    k1, k2, p1, p2, k3 = distortion
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    r2 = x * x + y * y
    radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
    return x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x), y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y


def ground_plane_range(calibration: CameraCalibration, u: np.ndarray, v: np.ndarray,
                       ground_z: float = GROUND_Z_M) -> np.ndarray:
    """float64 `[N]`: where the ray through each pixel (u, v) meets the ground plane, as its range
    over the ground from the vehicle's origin; NaN where it meets no ground ahead of the camera (at
    or above the horizon) or only past `MAX_GROUND_RANGE_M`."""
    x, y = undistort((np.asarray(u, np.float64) - calibration.c_u) / calibration.f_u,
                     (np.asarray(v, np.float64) - calibration.c_v) / calibration.f_v, calibration.distortion)
    camera = np.stack([np.ones_like(x), -x, -y], axis=1)  # camera frame: x forward, y left, z up
    rotation, origin = calibration.extrinsic[:3, :3], calibration.extrinsic[:3, 3]
    direction = camera @ rotation.T
    with np.errstate(all="ignore"):
        steps = (ground_z - origin[2]) / direction[:, 2]
        points = origin[None, :2] + steps[:, None] * direction[:, :2]
        ranges = np.hypot(points[:, 0], points[:, 1])
    ahead = np.isfinite(x) & np.isfinite(y) & (direction[:, 2] < 0) & (steps > 0) & (ranges <= MAX_GROUND_RANGE_M)
    return np.where(ahead, ranges, np.nan)


def box_ranges(xyxy: np.ndarray, labels3d: Labels3D | None = None, projected: ProjectedBoxes | None = None,
               associated: Sequence[str | None] | None = None, calibration: CameraCalibration | None = None,
               image_size: tuple[int, int] | None = None) -> BoxRanges:
    """The range and its source for each of one camera image's boxes (pixel `xyxy` `[N, 4]`).

    `labels3d`: the frame's 3D labels; `projected`: their boxes in this camera; `associated`: for
    each box, the id of the 3D label the association component ties it to (camera labels only);
    `calibration`: this camera's; `image_size` (width, height): the image the boxes are in, when
    known: an image of another size than the calibration's gets no ground-plane estimate (its
    pixels are not the calibration's)."""
    boxes = np.asarray(xyxy, np.float64).reshape(-1, 4)
    n = len(boxes)
    range_m = np.full(n, np.nan)
    source = np.zeros(n, np.int8)
    if labels3d is not None and len(labels3d):
        label_range = labels3d.range_m.astype(np.float64)
        row_of = {object_id: row for row, object_id in reversed(list(enumerate(labels3d.object_ids)))}
        if associated is not None:
            for box, object_id in enumerate(associated):
                row = row_of.get(object_id) if object_id is not None else None
                if row is not None:
                    range_m[box], source[box] = label_range[row], RangeSource.ASSOCIATION
        if projected is not None and len(projected):
            rows = np.array([row_of.get(i, -1) for i in projected.object_ids])
            known = rows >= 0
            open_boxes = np.flatnonzero(source == RangeSource.NONE)
            if known.any() and len(open_boxes):
                iou = box_iou(boxes[open_boxes], projected.xyxy[known])
                best = iou.argmax(axis=1)
                tied = iou[np.arange(len(open_boxes)), best] >= MIN_TIE_IOU
                range_m[open_boxes[tied]] = label_range[rows[known][best[tied]]]
                source[open_boxes[tied]] = RangeSource.PROJECTED_BOX
    if calibration is not None and (image_size is None or image_size == (calibration.width, calibration.height)):
        open_boxes = np.flatnonzero(source == RangeSource.NONE)
        if len(open_boxes):
            bottom = boxes[open_boxes]
            estimate = ground_plane_range(calibration, (bottom[:, 0] + bottom[:, 2]) / 2, bottom[:, 3])
            found = np.isfinite(estimate)
            range_m[open_boxes[found]] = estimate[found]
            source[open_boxes[found]] = RangeSource.GROUND_PLANE
    return BoxRanges(range_m.astype(np.float32), source)
