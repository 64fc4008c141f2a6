"""Where each tracked object has just been: the bottom-centre points of its last second, per camera.

A trail is drawn behind each tracked box (`detect.render.trails`). Points older than `seconds` go,
and so does a track not seen for that long, so a 1,000-image segment holds a second's worth of
points per live track, never the whole history.
"""

from __future__ import annotations

from collections import deque

import numpy as np

DEFAULT_TRAIL_SECONDS = 1.0


class Trails:
    """Bottom-centre points per (camera, track id), kept for `seconds`; images of a camera in time order."""

    def __init__(self, seconds: float = DEFAULT_TRAIL_SECONDS) -> None:
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0, got {seconds}")
        self._span = round(seconds * 1e6)
        self._points: dict[int, dict[int, deque[tuple[int, float, float]]]] = {}

    def update(self, camera: int, timestamp_micros: int, track_ids: np.ndarray, xyxy: np.ndarray) -> dict[int, np.ndarray]:
        """Add this image's tracked boxes (track id < 0: not tracked, ignored); returns each of them
        its trail, `[n, 2]` points oldest first, ending at this image's point."""
        ids = np.asarray(track_ids, np.int64).reshape(-1)
        boxes = np.asarray(xyxy, np.float64).reshape(-1, 4)
        if len(ids) != len(boxes):
            raise ValueError(f"expected one track id per box ({len(boxes)}), got {len(ids)}")
        ts = int(timestamp_micros)
        points = self._points.setdefault(int(camera), {})
        seen = []
        for track_id, box in zip(ids.tolist(), boxes, strict=True):
            if track_id >= 0:
                points.setdefault(track_id, deque()).append((ts, float(box[0] + box[2]) / 2, float(box[3])))
                seen.append(track_id)
        for track_id in list(points):
            trail = points[track_id]
            while trail and trail[0][0] < ts - self._span:
                trail.popleft()
            if not trail:
                del points[track_id]
        return {i: np.array([(x, y) for _, x, y in points[i]], np.float64) for i in seen}

    def held(self) -> int:
        """Points held over all cameras (flat over a long segment)."""
        return sum(len(t) for points in self._points.values() for t in points.values())
