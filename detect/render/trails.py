"""Trails behind tracked boxes: a line through the bottom-centre points of the object's last second,
thinner and fading towards its oldest point, drawn on a uint8 `(H, W, 3)` canvas in place; and
`FrameTracks`, what the drawing takes of the tracker for one image."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from detect.core.track_numbers import camera_track_number, camera_track_numbers
from detect.render.chips import RGB

# The legend line of a tracked segment's frames (both drawing modes): a camera's tracks are numbered
# 1, 2, 3 in the order they began (the tables keep the segment's ids, `detect.core.track_numbers`).
TRACK_LEGEND = "#N: the camera's Nth track, line: last second"


@dataclasses.dataclass(frozen=True, eq=False)
class FrameTracks:
    """One image's tracks as the drawing takes them: a track id per box of its detections (in the
    detections' row order; -1: not tracked) and each track's trail, `[n, 2]` bottom-centre points
    oldest first (`detect.track.trail_history` keeps them; a redraw rebuilds them from the table)."""

    track_ids: np.ndarray
    trails: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = np.asarray(self.track_ids)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(f"track_ids must be a 1-D integer array, got shape {ids.shape} and dtype {ids.dtype}")
        object.__setattr__(self, "track_ids", ids.astype(np.int64))

    def ids_of(self, rows: Sequence[int] | np.ndarray, boxes: int) -> list[int | None]:
        """The track id of each of `rows` (None: not tracked); `boxes` is the detections' length."""
        if len(self.track_ids) != boxes:
            raise ValueError(f"expected one track id per box ({boxes}), got {len(self.track_ids)}")
        return [None if self.track_ids[r] < 0 else int(self.track_ids[r]) for r in rows]

    def trails_of(self, ids: Sequence[int | None], colors: Sequence[RGB]) -> tuple[dict[int, np.ndarray], dict[int, RGB]]:
        """The trails of the drawn boxes' tracks (`ids`, one per drawn box) and each one's color."""
        chosen = {i: c for i, c in zip(ids, colors, strict=True) if i is not None and i in self.trails}
        return {i: self.trails[i] for i in chosen}, chosen

    @classmethod
    def numbered(cls, track_ids: np.ndarray, trails: Mapping[int, np.ndarray], camera: int) -> FrameTracks:
        """One image's tracks with the numbers the pictures show: its camera's tracks 1, 2, 3, ...
        (`track_ids` and `trails` keyed by the segment's ids, as the tracker gives them)."""
        return cls(camera_track_numbers(track_ids, camera), {camera_track_number(i, camera): p for i, p in trails.items()})


def paint_trails(canvas: np.ndarray, trails: Mapping[int, np.ndarray], colors: Mapping[int, RGB], line_width: int) -> None:
    """Each track's `[n, 2]` points (oldest first) as a polyline in its color; points outside the
    image are clipped. The newest segment is `line_width` thick, the oldest half as thick and
    blended half-way into the image, so the direction of travel reads at a glance."""
    height, width = canvas.shape[:2]
    for track_id, points in trails.items():
        pts = np.asarray(points, np.float64).reshape(-1, 2)
        if len(pts) < 2 or not np.all(np.isfinite(pts)):
            continue
        color = np.array(colors[track_id], np.float64)
        segments = len(pts) - 1
        for k in range(segments):
            age = (segments - 1 - k) / max(1, segments - 1)  # 0 for the newest segment, 1 for the oldest
            thickness = max(1, round(line_width * (1 - age / 2)))
            _paint_segment(canvas, pts[k], pts[k + 1], color, thickness, 1 - age / 2, width, height)


def _paint_segment(canvas: np.ndarray, a: np.ndarray, b: np.ndarray, color: np.ndarray, thickness: int,
                   opacity: float, width: int, height: int) -> None:
    steps = int(np.ceil(np.abs(b - a).max())) + 1
    centres = np.round(a + (b - a) * np.linspace(0, 1, steps)[:, None]).astype(np.int64)
    offsets = np.arange(thickness) - thickness // 2
    xs = (centres[:, 0, None, None] + offsets[None, None, :]).repeat(thickness, 1).reshape(-1)
    ys = (centres[:, 1, None, None] + offsets[None, :, None]).repeat(thickness, 2).reshape(-1)
    inside = (xs >= 0) & (xs < width) & (ys >= 0) & (ys < height)
    pixels = np.unique(np.stack([ys[inside], xs[inside]], 1), axis=0)
    if not len(pixels):
        return
    rows, cols = pixels[:, 0], pixels[:, 1]
    blended = canvas[rows, cols].astype(np.float64) * (1 - opacity) + color * opacity
    canvas[rows, cols] = np.round(blended).astype(np.uint8)
