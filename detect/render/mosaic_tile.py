"""A camera image drawn for the mosaic at the size the mosaic is shown, not shrunk from its frame.

The frames' chips are sized for a frame read in its 640-wide GIF. The mosaic puts five such images
in 1920 px and the report shows it about `MOSAIC_DISPLAY_WIDTH` wide: shrunk from the frames, its
chips came out 7-10 px tall and the five in-frame legends 5 px. So each tile is the raw image
shrunk first, then drawn: the same boxes in the same colors and line styles, laid out by the same
rules as the frames (`detect.render.chip_layout`), lines and chips sized for the shown size; no
legend, since the mosaic has one for all its tiles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image

from detect.core.errors import UsageError
from detect.core.records import Detections
from detect.render.chip_layout import font_size_for
from detect.render.chips import RGB, chip_height, chip_width, paint_chip
from detect.render.draw import WATERMARK_COLOR, DrawStyle, chosen_boxes, draw_boxes
from detect.render.trails import NO_TRAILS, TRACK_LEGEND, TrackTrails
from detect.render.verdicts import COLORS, LINES, MISSED, OTHER, Judged, LegendEntry

# The report page's content width: the mosaic is shown this wide (the README's copy, ~880 px, a
# little smaller). Three tiles side by side.
MOSAIC_DISPLAY_WIDTH = 1180
MIN_LEGEND_DISPLAY_PX = 16  # the mosaic legend's rows, as shown
LINE_DISPLAY_PX = 1.5  # a tile's box lines, as shown


def display_scale(tile_width: int) -> float:
    """Shown pixels per pixel of a tile `tile_width` wide (below 1: the mosaic is shown smaller)."""
    return MOSAIC_DISPLAY_WIDTH / (3 * max(1, tile_width))


def display_font_size(tile_width: int, min_display_px: float) -> int:
    """The smallest text size whose chip is at least `min_display_px` tall as shown."""
    size = 6
    while chip_height(size) * display_scale(tile_width) < min_display_px:
        size += 1
    return size


def tile_font_size(tile_width: int) -> int:
    """A tile's chip text size: readable as the mosaic is shown (`chip_layout.MIN_TEXT_SHOWN_PX`)."""
    return font_size_for(display_scale(tile_width))


def tile_line_width(tile_width: int) -> int:
    return max(1, round(LINE_DISPLAY_PX / display_scale(tile_width)))


@dataclasses.dataclass(frozen=True, eq=False)
class TileBoxes:
    """One image's boxes as its tile draws them, in the frame's order, in frame pixels."""

    xyxy: np.ndarray
    texts: tuple[tuple[str, ...], ...]  # each box's chip texts, longest first
    colors: tuple[RGB, ...]
    lines: tuple[str, ...]
    thin: tuple[bool, ...]  # drawn half as wide (classes no Waymo type covers)
    optional: tuple[bool, ...]  # a chip the tile can do without (missed labels: the dotted box says it)
    legend: tuple[LegendEntry, ...]  # what the mosaic's legend says for this image
    trails: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)
    trail_colors: Mapping[int, RGB] = dataclasses.field(default_factory=dict)


def error_boxes(judged: Judged, legend: tuple[LegendEntry, ...]) -> TileBoxes:
    """A judged frame's boxes as `judge` lists them: the detections, best score first, then the
    missed labels."""
    states = judged.states
    ids = judged.track_ids if judged.track_ids is not None else (None,) * len(judged.states)
    trail_colors = {i: COLORS[s] for i, s in zip(ids, judged.states, strict=True) if i is not None and i in judged.trails}
    return TileBoxes(judged.xyxy.reshape(-1, 4), tuple(judged.chip_texts()),
                     tuple(COLORS[s] for s in states), tuple(LINES[s] for s in states),
                     tuple(s == OTHER for s in states), tuple(s == MISSED for s in states), legend,
                     judged.trails, trail_colors)


def detection_boxes(detections: Detections, style: DrawStyle, trails: TrackTrails | None = None) -> TileBoxes:
    """The boxes `draw_detections` draws, best score first, in their class colors (a tracked
    image's with their trails and the track legend)."""
    chosen, texts, colors, ids = chosen_boxes(detections, style)
    n = len(chosen)
    tracked = detections.track_ids is not None
    drawn_trails, trail_colors = (trails or NO_TRAILS).of(ids, colors) if tracked else ({}, {})
    legend: tuple[LegendEntry, ...] = ((None, TRACK_LEGEND),) if tracked else ()
    line = "dashed" if style.dashed else "solid"
    return TileBoxes(np.asarray(chosen.xyxy, np.float64).reshape(-1, 4), tuple(texts), tuple(colors), (line,) * n,
                     (False,) * n, (False,) * n, legend, drawn_trails, trail_colors)


@dataclasses.dataclass(frozen=True)
class MosaicTile:
    """One camera image drawn for the mosaic, with what the mosaic's legend and caption say of it."""

    image: Image.Image = dataclasses.field(repr=False)  # RGB
    legend: tuple[LegendEntry, ...] = ()
    chips_left_out: int = 0
    # the chips drawn, (x0, y0, x1, y1) ends exclusive (not kept on disk)
    chips: tuple[tuple[int, int, int, int], ...] = dataclasses.field(default=(), compare=False)


def shrunk_size(width_in: int, height_in: int, width: int) -> tuple[int, int]:
    """The size `downscale_to_width` gives an image of `width_in` x `height_in` (a tile's size,
    known from its frame's)."""
    if width_in <= width:
        return width_in, height_in
    if width_in % width == 0:
        factor = width_in // width
        return width, -(-height_in // factor)  # `reduce` rounds up
    return width, max(1, round(height_in * width / width_in))


def downscale_to_width(image: Image.Image, width: int) -> Image.Image:
    """Shrink to `width` (never enlarge): `reduce` by an exact integer factor, else bilinear."""
    if width < 1:
        raise UsageError(f"animation width must be at least 1, got {width}")
    if image.width <= width:
        return image
    if image.width % width == 0:
        return image.reduce(image.width // width)
    height = max(1, round(image.height * width / image.width))
    return image.resize((width, height), Image.Resampling.BILINEAR, reducing_gap=2.0)


def shrink(frame: np.ndarray, width: int) -> tuple[np.ndarray, tuple[float, float]]:
    """`frame` shrunk to `width` as the animations shrink (an integer `reduce` where it divides,
    else bilinear) and its (x, y) scale from frame pixels to tile pixels."""
    height_in, width_in = frame.shape[:2]
    small = downscale_to_width(Image.fromarray(frame), width)
    if small.width == width_in:
        return np.array(small), (1.0, 1.0)
    if width_in % small.width == 0:  # `reduce`: pixel i of the tile covers pixels f*i .. f*i + f - 1
        factor = 1.0 / (width_in // small.width)
        return np.array(small), (factor, factor)
    return np.array(small), (small.width / width_in, small.height / height_in)


def draw_mosaic_tile(tile: np.ndarray, boxes: TileBoxes, scale: tuple[float, float],
                     watermark: str | None = None) -> MosaicTile:
    """`boxes` (frame pixels, scaled by `scale`) drawn on `tile` (a shrunk raw image, drawn in place)."""
    height, width = tile.shape[:2]
    size = tile_font_size(width)
    lw = tile_line_width(width)
    sx, sy = scale
    xyxy = boxes.xyxy * np.array([sx, sy, sx, sy])
    widths = [max(1, lw // 2) if thin else lw for thin in boxes.thin]
    reserved = [(0, height - chip_height(size), chip_width(watermark, size), height)] if watermark else []
    placed = draw_boxes(tile, xyxy, boxes.texts, list(boxes.colors), line_width=lw, font_size=size, lines=boxes.lines,
                        widths=widths, optional=boxes.optional, reserved=reserved,
                        trails=({i: np.asarray(p, np.float64) * (sx, sy) for i, p in boxes.trails.items()},
                                boxes.trail_colors) if boxes.trails else None)
    if watermark:
        paint_chip(tile, (0, height, 0, height), watermark, WATERMARK_COLOR, size)
    return MosaicTile(Image.fromarray(tile, mode="RGB"), boxes.legend, placed.left_out, placed.rects)


def merged_legend(legends: Sequence[tuple[LegendEntry, ...]]) -> tuple[LegendEntry, ...]:
    """One legend for several tiles: every row any of them has, once, the states first in their
    usual order."""
    seen: dict[LegendEntry, None] = {}
    for legend in legends:
        seen.update(dict.fromkeys(legend))
    states = [e for e in seen if e[0] is not None]
    order = list(COLORS)
    return tuple(sorted(states, key=lambda e: order.index(e[0]) if e[0] in order else len(order))
                 + [e for e in seen if e[0] is None])
