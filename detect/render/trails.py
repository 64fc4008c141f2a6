"""Trails behind tracked boxes: a line through the bottom-centre points of the object's last second,
2-3 times as thick as the boxes' lines over a dark edge, thinner and fainter towards its oldest point,
drawn on a uint8 `(H, W, 3)` canvas in place; and `TrackTrails`, one image's trails as its picture
numbers them (the boxes' ids travel in `Detections.track_ids`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from detect.core.records import Detections
from detect.core.track_numbers import camera_track_number, camera_track_numbers
from detect.render.chips import RGB

# The legend line of a tracked segment's frames (both drawing modes): a camera's tracks are numbered
# 1, 2, 3 in the order they began (the tables keep the segment's ids, `detect.core.track_numbers`).
TRACK_LEGEND = "#N: the camera's Nth track, line: last second"


@dataclasses.dataclass(frozen=True, eq=False)
class TrackTrails:
    """One image's trails as its picture shows them: each track's `[n, 2]` bottom-centre points,
    oldest first, keyed by the number the picture gives the track (the number its boxes carry in
    `Detections.track_ids`; `numbered`). `detect.track.trail_history` keeps them while a segment
    runs; a redraw rebuilds them from the table."""

    points: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)

    def of(self, ids: Sequence[int | None], colors: Sequence[RGB]) -> tuple[dict[int, np.ndarray], dict[int, RGB]]:
        """The trails of the drawn boxes' tracks (`ids`, one per drawn box) and each one's color."""
        chosen = {i: c for i, c in zip(ids, colors, strict=True) if i is not None and i in self.points}
        return {i: self.points[i] for i in chosen}, chosen


NO_TRAILS = TrackTrails()


def numbered(detections: Detections, trails: Mapping[int, np.ndarray], camera: int) -> tuple[Detections, TrackTrails]:
    """A tracked image's boxes and trails with the numbers its picture shows: its camera's tracks 1,
    2, 3, ... (`detections.track_ids` and `trails` keyed by the segment's ids, as the tracker gives them)."""
    if detections.track_ids is None:
        raise ValueError("numbered needs the detections of a tracked image (track_ids is None)")
    return (detections.with_track_ids(camera_track_numbers(detections.track_ids, camera)),
            TrackTrails({camera_track_number(i, camera): p for i, p in trails.items()}))


def drawn_track_ids(detections: Detections) -> list[int | None]:
    """Each box's track id as the drawing takes it (None: not tracked, or the image was not)."""
    if detections.track_ids is None:
        return [None] * len(detections)
    return [None if i < 0 else i for i in detections.track_ids.tolist()]


def trail_rects(trails: Mapping[int, np.ndarray], line_width: int) -> list[tuple[int, int, int, int]]:
    """The rectangles each trail's segments take (x0, y0, x1, y1, ends exclusive, with its dark
    edge): where no chip goes, so a chip never hides where its object went."""
    reach = line_width + max(1, line_width // 2) + 1
    rects = []
    for points in trails.values():
        pts = np.asarray(points, np.float64).reshape(-1, 2)
        if len(pts) < 2 or not np.all(np.isfinite(pts)):
            continue
        low, high = np.minimum(pts[:-1], pts[1:]), np.maximum(pts[:-1], pts[1:])
        for (x0, y0), (x1, y1) in zip(np.floor(low - reach).astype(int).tolist(), np.ceil(high + reach).astype(int).tolist(),
                                      strict=True):
            rects.append((x0, y0, x1, y1))
    return rects


def paint_trails(canvas: np.ndarray, trails: Mapping[int, np.ndarray], colors: Mapping[int, RGB], line_width: int) -> None:
    """Each track's `[n, 2]` points (oldest first) as a polyline in its color over a dark edge, so it
    reads on asphalt and sky alike, in place; points outside the image are clipped. The newest segment
    is three times the boxes' `line_width` thick (4 px in the 640-wide GIF of a 1920 frame, where a
    line as thin as the boxes' was a 1-2 px wiggle), the oldest twice and a little faded, so the
    direction of travel reads at a glance. Each trail is drawn by Pillow into two
    small coverage masks around it and blended once (~0.1 ms a trail)."""
    height, width = canvas.shape[:2]
    edge = max(1, line_width // 2)
    for track_id, points in trails.items():
        pts = np.asarray(points, np.float64).reshape(-1, 2)
        if len(pts) < 2 or not np.all(np.isfinite(pts)):
            continue
        segments = len(pts) - 1
        ages = [(segments - 1 - k) / max(1, segments - 1) for k in range(segments)]  # 0: the newest, 1: the oldest
        thickness = [max(1, round(line_width * (3 - age))) for age in ages]
        opacity = [1 - TRAIL_FADE * age for age in ages]
        pad = max(thickness) // 2 + edge + 1
        x0, y0 = np.maximum(np.floor(pts.min(0)) - pad, 0).astype(int).tolist()
        x1, y1 = np.minimum(np.ceil(pts.max(0)) + pad + 1, (width, height)).astype(int).tolist()
        if x1 <= x0 or y1 <= y0:
            continue
        local = (pts - (x0, y0)).tolist()
        under, over = Image.new("L", (x1 - x0, y1 - y0)), Image.new("L", (x1 - x0, y1 - y0))
        dark, line = ImageDraw.Draw(under), ImageDraw.Draw(over)
        for k, (thick, alpha) in enumerate(zip(thickness, opacity, strict=True)):  # oldest first: newer on top
            segment = [tuple(local[k]), tuple(local[k + 1])]
            dark.line(segment, fill=round(255 * TRAIL_EDGE_OPACITY * alpha), width=thick + 2 * edge)
            line.line(segment, fill=round(255 * alpha), width=thick)
        region = canvas[y0:y1, x0:x1].astype(np.float32)
        region *= 1 - np.asarray(under, np.float32)[:, :, None] / 255
        region += (np.array(colors[track_id], np.float32) - region) * (np.asarray(over, np.float32)[:, :, None] / 255)
        canvas[y0:y1, x0:x1] = np.round(region).astype(np.uint8)


TRAIL_EDGE_OPACITY = 0.6  # the dark edge under a trail, at its newest end
TRAIL_FADE = 0.3  # the oldest end is blended this far into the image
