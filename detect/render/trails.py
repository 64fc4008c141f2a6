"""Trails behind tracked boxes: a line through the bottom-centre points of the object's last second,
thinner and fading towards its oldest point, drawn on a uint8 `(H, W, 3)` canvas in place."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from detect.render.chips import RGB


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
