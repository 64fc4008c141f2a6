"""The trackers of one segment: one ByteTracker per (camera, group); ids unique in the segment.

Each camera takes its ids from its own sequence: camera c (1-5, Waymo's numbers) gives c, c + 5,
c + 10, ... so the id alone says the camera (FRONT 1, 6, 11; FRONT_LEFT 2, 7, 12), and a camera's
ids depend on its own images only (the pictures number them 1, 2, 3: `detect.core.track_numbers`).
A run tracks while it reads (images of different sizes go through the model in different batches,
so the cameras interleave differently there than in the table): both give the same ids.
"""

from __future__ import annotations

import numpy as np

from detect.core.cameras import CAMERA_NUMBERS
from detect.core.track_numbers import ID_STEP
from detect.track.bytetrack import ByteTracker, IdAllocator
from detect.track.params import TrackerParams


class SegmentTracker:
    """Track ids for every detection of one segment; frames of each camera come in time order."""

    def __init__(self, params: TrackerParams) -> None:
        self.params = params
        self._ids: dict[int, IdAllocator] = {}
        self._trackers: dict[tuple[int, int], ByteTracker] = {}
        self._last_ts: dict[int, int] = {}

    def update(self, camera: int, timestamp_micros: int, xyxy: np.ndarray, scores: np.ndarray,
               groups: np.ndarray) -> np.ndarray:
        """One camera image's boxes -> track ids (int64, -1 for boxes not kept)."""
        xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
        scores = np.asarray(scores, np.float64).reshape(-1)
        groups = np.asarray(groups, np.int64).reshape(-1)
        if not len(xyxy) == len(scores) == len(groups):
            raise ValueError(f"expected one score and group per box ({len(xyxy)}), got {len(scores)} and {len(groups)}")
        camera, ts = int(camera), int(timestamp_micros)
        if camera not in CAMERA_NUMBERS:
            raise ValueError(f"camera {camera}: expected a Waymo camera number, {min(CAMERA_NUMBERS)}-{ID_STEP}")
        if camera in self._last_ts and ts <= self._last_ts[camera]:
            raise ValueError(f"camera {camera}: timestamps must increase, got {ts} after {self._last_ts[camera]}")
        self._last_ts[camera] = ts
        out = np.full(len(xyxy), -1, np.int64)
        order = np.argsort(groups, kind="stable")  # each group's rows, in row order: one sort, not a scan per group
        present, starts = np.unique(groups[order], return_index=True)
        ends = [*starts[1:].tolist(), len(order)][: len(starts)]
        rows_of = {int(g): order[a:b] for g, a, b in zip(present.tolist(), starts.tolist(), ends, strict=True)}
        none = np.zeros(0, np.int64)
        # a box below the low score is never matched nor born from: its group's tracker still sees the
        # frame (it ages its tracks, and its first frame is this one), without it
        usable = scores >= self.params.low_score
        # every tracker of the camera sees every frame, so lost tracks age even when a group has no box;
        # groups in a fixed order: they take new ids from the camera's one sequence
        for group in sorted({g for (c, g) in self._trackers if c == camera} | set(rows_of)):
            tracker = self._trackers.get((camera, group))
            if tracker is None:
                ids = self._ids.setdefault(camera, IdAllocator(first=camera, step=ID_STEP))
                tracker = self._trackers[camera, group] = ByteTracker(self.params, ids)
            rows = rows_of.get(group, none)
            rows = rows[usable[rows]]
            out[rows] = tracker.update(ts, xyxy[rows], scores[rows])
        return out

    def tracks_held(self) -> int:
        return sum(len(t) for t in self._trackers.values())
