"""A box's outline on an image: clipped to the image as inclusive pixel bounds, and painted solid,
dashed or dotted, inside those bounds as Pillow draws it (the frames, the close-ups, the legend)."""

from __future__ import annotations

import numpy as np

from detect.render.chips import RGB


def clip_all(xyxy: np.ndarray, width: int, height: int) -> list[tuple[int, int, int, int] | None]:
    """Each box clipped to the image, as rounded inclusive bounds (None: nothing of it to draw)."""
    return [clip(box, width, height) for box in xyxy]


def clip(box: np.ndarray, width: int, height: int) -> tuple[int, int, int, int] | None:
    """A box clipped to the image as rounded inclusive bounds; None when nothing of it is in it."""
    if not np.all(np.isfinite(box)):
        return None
    x0, y0, x1, y1 = (float(v) for v in box)
    if x1 < 0 or y1 < 0 or x0 > width - 1 or y0 > height - 1 or x1 < x0 or y1 < y0:
        return None
    return (
        int(round(min(max(x0, 0), width - 1))),
        int(round(min(max(y0, 0), height - 1))),
        int(round(min(max(x1, 0), width - 1))),
        int(round(min(max(y1, 0), height - 1))),
    )


LINE_STYLES = ("solid", "dashed", "dotted")


def paint_outline(canvas: np.ndarray, box: tuple[int, int, int, int], color: RGB, lw: int, line: str = "solid") -> None:
    """An outline `lw` pixels wide, inside the box's inclusive bounds (as Pillow draws it), on
    `canvas` in place: solid, dashed (dashes 3 line widths long) or dotted (dots 1 line width)."""
    if line not in LINE_STYLES:
        raise ValueError(f"line must be one of {', '.join(LINE_STYLES)}, got {line!r}")
    x0, y0, x1, y1 = box
    t = min(lw, (x1 - x0) // 2 + 1, (y1 - y0) // 2 + 1)
    edges = (
        (slice(y0, y0 + t), slice(x0, x1 + 1), 1),  # top: dashes run along x
        (slice(y1 - t + 1, y1 + 1), slice(x0, x1 + 1), 1),  # bottom
        (slice(y0, y1 + 1), slice(x0, x0 + t), 0),  # left: dashes run along y
        (slice(y0, y1 + 1), slice(x1 - t + 1, x1 + 1), 0),  # right
    )
    for rows, cols, axis in edges:
        region = canvas[rows, cols]
        if line == "solid":
            region[...] = color
            continue
        dash, gap = (max(4, 3 * lw), max(4, 3 * lw)) if line == "dashed" else (max(2, lw), max(2, lw))
        length = region.shape[axis]
        for start in range(0, length, dash + gap):
            if axis == 1:
                region[:, start:start + dash] = color
            else:
                region[start:start + dash, :] = color


