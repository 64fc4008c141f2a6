"""Track ids and trails while a segment runs, so the frames drawn during the run show them.

The run's table is tracked again when the segment finishes (`detect.track.table_tracks`: that
table, not this, is what the column holds). Both feed each camera's images in time order with an
image's boxes in the table's order (best score first, ties by box), and each camera takes ids
from its own sequence, so both give the same ids whatever the order in which the model saw the
cameras. A camera whose images are read out of time order (a file not sorted by time, a frame
filter over a resumed segment) is not tracked live from that image on: its later frames are drawn
without ids, and `held_back` says which cameras, so the run can say that `detect redraw` draws them.
"""

from __future__ import annotations

import numpy as np

from detect.core.records import Detections, FrameKey
from detect.model.classmap import ClassMap
from detect.track.groups import group_keys
from detect.track.params import TrackerParams
from detect.track.segment_tracker import SegmentTracker
from detect.track.trail_history import DEFAULT_TRAIL_SECONDS, Trails


class LiveTracks:
    """The segment's tracker fed image by image as the model's detections arrive."""

    def __init__(self, params: TrackerParams, class_map: ClassMap, trail_seconds: float = DEFAULT_TRAIL_SECONDS) -> None:
        self.class_map = class_map
        self._tracker = SegmentTracker(params)
        self._trails = Trails(trail_seconds)
        self._held_back: set[int] = set()
        self._ids: dict[FrameKey, np.ndarray] = {}

    def update(self, key: FrameKey, detections: Detections) -> tuple[Detections, dict[int, np.ndarray]]:
        """This image's detections with their track ids set (`NO_TRACK`: none) and each track's
        trail, `[n, 2]` bottom-centre points, oldest first, ending at this image's box, keyed by its
        id; the detections as given and no trails when its camera is no longer tracked live."""
        camera = int(key.camera_name)
        if camera in self._held_back:
            return detections, {}
        xyxy, scores = detections.xyxy, detections.scores
        order = image_order(xyxy, scores)
        try:
            ids_in_order = self._tracker.update(camera, key.frame_timestamp_micros, xyxy[order], scores[order],
                                                group_keys(detections.class_ids[order], self.class_map))
        except ValueError:  # time went back for this camera: no live ids from here on
            self._held_back.add(camera)
            return detections, {}
        ids = np.empty(len(order), np.int64)
        ids[order] = ids_in_order
        self._ids[key] = ids
        return detections.with_track_ids(ids), self._trails.update(camera, key.frame_timestamp_micros, ids, xyxy)

    def seed(self, done: dict[FrameKey, Detections]) -> None:
        """Images an earlier run of the segment finished (a resume), in time order, before the rest."""
        for key in sorted(done, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name))):
            self.update(key, done[key])

    @property
    def held_back(self) -> frozenset[int]:
        """Cameras not tracked live to the end (their later frames were drawn without ids)."""
        return frozenset(self._held_back)

    def drawn_ids(self, key: FrameKey) -> np.ndarray | None:
        """The ids this image was given live (None: not tracked live)."""
        return self._ids.get(key)


def image_order(xyxy: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """An image's boxes as the table tracks them: best score first, ties by the box."""
    xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
    return np.lexsort((xyxy[:, 3], xyxy[:, 2], xyxy[:, 1], xyxy[:, 0], -np.asarray(scores, np.float64)))
