"""All cameras of one frame tiled like the car sees them; a pure function of small tiles.

    FRONT_LEFT | FRONT            | FRONT_RIGHT     (1920x1280 cameras)
    SIDE_LEFT  | legend + caption | SIDE_RIGHT      (1920x886 cameras)

The tiles carry no legend of their own (`detect.render.mosaic_tile`): the mosaic has one, in the
empty cell, sized to read at the size the page shows the mosaic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from detect.core.cameras import CameraName
from detect.render.chips import chip_height, font
from detect.render.mosaic_tile import MIN_LEGEND_DISPLAY_PX, display_font_size
from detect.render.verdicts import LegendEntry, legend_size, paint_legend_at

GRID: tuple[tuple[CameraName | None, ...], ...] = (
    (CameraName.FRONT_LEFT, CameraName.FRONT, CameraName.FRONT_RIGHT),
    (CameraName.SIDE_LEFT, None, CameraName.SIDE_RIGHT),
)
# Waymo's camera sizes set the row heights, so tiles downscaled from real frames fit exactly.
_ROW_ASPECT = ((1280, 1920), (886, 1920))
MIN_TILE_WIDTH = 8
MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH = 16, 7680  # `--gif-width` and `detect gif --width`
BACKGROUND = (24, 24, 24)
MISSING_FILL = (48, 48, 48)
TEXT = (235, 235, 235)
MUTED = (150, 150, 150)


@dataclasses.dataclass(frozen=True)
class MosaicLayout:
    """Cell sizes of the 3x2 mosaic: every cell `tile_width` wide, rows of fixed heights."""

    tile_width: int
    row_heights: tuple[int, int]

    @property
    def size(self) -> tuple[int, int]:
        return 3 * self.tile_width, sum(self.row_heights)

    def cell(self, row: int, col: int) -> tuple[int, int, int, int]:
        """(x, y, width, height) of one cell."""
        return col * self.tile_width, sum(self.row_heights[:row]), self.tile_width, self.row_heights[row]


def mosaic_layout(tile_width: int) -> MosaicLayout:
    """Row heights follow Waymo's aspect ratios (rounded up, as `Image.reduce` rounds)."""
    if tile_width < MIN_TILE_WIDTH:
        raise ValueError(f"tile_width must be at least {MIN_TILE_WIDTH}, got {tile_width}")
    heights = tuple(math.ceil(tile_width * h / w) for h, w in _ROW_ASPECT)
    return MosaicLayout(tile_width, (heights[0], heights[1]))


def compose_mosaic(
    tiles: Mapping[CameraName, Image.Image], layout: MosaicLayout, caption: Sequence[str] = (),
    legend: tuple[LegendEntry, ...] = (),
) -> Image.Image:
    """A new RGB image: tiles in their cells with camera names; missing cameras say "no image";
    the empty cell holds `legend` (what the boxes' colors and lines mean) above the caption.

    Tiles of another size than their cell are fitted (aspect kept) and centered.
    """
    canvas = Image.new("RGB", layout.size, BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    label_size = max(8, round(layout.tile_width / 22))
    for row, cameras in enumerate(GRID):
        for col, camera in enumerate(cameras):
            x, y, w, h = layout.cell(row, col)
            if camera is None:
                top = _legend(canvas, (x, y, w, h), legend)
                _caption(draw, (x, top, w, y + h - top), caption, label_size)
                continue
            tile = tiles.get(camera)
            if tile is None:
                draw.rectangle((x + 1, y + 1, x + w - 2, y + h - 2), fill=MISSING_FILL)
                face = font(label_size)
                draw.text((x + w / 2, y + h / 2), "no image", font=face, fill=MUTED, anchor="mm")
            else:
                _paste_fitted(canvas, tile, (x, y, w, h))
            _name_chip(draw, (x, y), camera.name, label_size)
    return canvas


def letterbox(image: Image.Image, size: tuple[int, int], fill: tuple[int, int, int] = (0, 0, 0)) -> Image.Image:
    """A new RGB image of `size`: `image` scaled to fit (aspect kept) and centered on `fill`."""
    canvas = Image.new("RGB", size, fill)
    _paste_fitted(canvas, image, (0, 0, *size))
    return canvas


def _paste_fitted(canvas: Image.Image, tile: Image.Image, cell: tuple[int, int, int, int]) -> None:
    x, y, w, h = cell
    tile = tile if tile.mode == "RGB" else tile.convert("RGB")
    if tile.size != (w, h):
        scale = min(w / tile.width, h / tile.height)
        size = (max(1, round(tile.width * scale)), max(1, round(tile.height * scale)))
        tile = tile.resize(size, Image.Resampling.BILINEAR)
    canvas.paste(tile, (x + (w - tile.width) // 2, y + (h - tile.height) // 2))


def _name_chip(draw: ImageDraw.ImageDraw, origin: tuple[int, int], text: str, size: int) -> None:
    face = font(size)
    ascent, descent = face.getmetrics()
    pad = max(1, size // 5)
    width = math.ceil(draw.textlength(text, font=face)) + 2 * pad
    x, y = origin
    draw.rectangle((x, y, x + width - 1, y + ascent + descent + 2 * pad - 1), fill=(0, 0, 0))
    draw.text((x + pad, y + pad), text, font=face, fill=TEXT, anchor="la")


def _legend(canvas: Image.Image, cell: tuple[int, int, int, int], legend: tuple[LegendEntry, ...]) -> int:
    """`legend` centered at the top of `cell`, sized to read as shown (smaller only when the cell
    is too small for it); returns the y below it."""
    x, y, w, h = cell
    if not legend:
        return y
    size = display_font_size(w, MIN_LEGEND_DISPLAY_PX)
    margin = max(2, w // 32)
    while size > 6 and (legend_size(legend, size)[0] > w - 2 * margin or legend_size(legend, size)[1] > h * 2 // 3):
        size -= 1
    block_w, block_h = legend_size(legend, size)
    if block_w > w - 2 * margin or block_h > h * 2 // 3:
        return y  # a cell too small for any legend
    region = np.array(canvas.crop((x, y, x + w, y + h)))
    paint_legend_at(region, legend, size, ((w - block_w) // 2, margin))
    canvas.paste(Image.fromarray(region, mode="RGB"), (x, y))
    return y + margin + block_h + chip_height(size) // 2


def _caption(
    draw: ImageDraw.ImageDraw, cell: tuple[int, int, int, int], lines: Sequence[str], size: int
) -> None:
    x, y, w, h = cell
    if not lines:
        return
    # Shrink until the longest line (a 37-character segment name) fits the cell.
    margin = max(2, w // 32)
    while size > 7 and (max(draw.textlength(s, font=font(size)) for s in lines) > w - 2 * margin
                        or round(size * 1.3) * len(lines) > h):
        size -= 1
    face = font(size)
    line_h = round(size * 1.3)
    top = y + (h - line_h * len(lines)) // 2
    for i, line in enumerate(lines):
        fill = TEXT if i == 0 else MUTED
        draw.text((x + w / 2, top + i * line_h), line, font=face, fill=fill, anchor="ma")
