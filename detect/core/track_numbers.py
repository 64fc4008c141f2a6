"""Track ids and the numbers people read. A segment's tracks take their ids camera by camera (camera
c: c, c + 5, c + 10, ...: unique in the segment, and the id alone names the camera); the pictures and
pages number each camera's tracks 1, 2, 3, ... in the order they began, and the tables keep the id."""

from __future__ import annotations

import numpy as np

from detect.core.cameras import CAMERA_NUMBERS

ID_STEP = max(CAMERA_NUMBERS)  # ids of camera c: c, c + ID_STEP, c + 2 * ID_STEP, ...


def camera_track_number(track_id: int, camera: int) -> int:
    """The number shown for track `track_id` of `camera`: FRONT's ids 1, 6, 11 read 1, 2, 3 (an id
    outside the camera's sequence, from another tracker, is shown as it is)."""
    if camera in CAMERA_NUMBERS and track_id >= camera and (track_id - camera) % ID_STEP == 0:
        return (track_id - camera) // ID_STEP + 1
    return track_id


def camera_track_numbers(track_ids: np.ndarray, camera: int) -> np.ndarray:
    """`camera_track_number` of each id (negative: no track, kept as it is)."""
    ids = np.asarray(track_ids, np.int64)
    ours = (camera in CAMERA_NUMBERS) & (ids >= camera) & ((ids - camera) % ID_STEP == 0)
    return np.where(ours, (ids - camera) // ID_STEP + 1, ids)
