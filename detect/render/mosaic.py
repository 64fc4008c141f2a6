"""All cameras of one frame tiled like the car sees them; a pure function of small tiles.

    FRONT_LEFT | FRONT   | FRONT_RIGHT     (1920x1280 cameras)
    SIDE_LEFT  | caption | SIDE_RIGHT      (1920x886 cameras)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from PIL import Image, ImageDraw

from detect.core.cameras import CameraName
from detect.render.chips import font

GRID: tuple[tuple[CameraName | None, ...], ...] = (
    (CameraName.FRONT_LEFT, CameraName.FRONT, CameraName.FRONT_RIGHT),
    (CameraName.SIDE_LEFT, None, CameraName.SIDE_RIGHT),
)
# Waymo's camera sizes set the row heights, so tiles downscaled from real frames fit exactly.
_ROW_ASPECT = ((1280, 1920), (886, 1920))
MIN_TILE_WIDTH = 8
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
    tiles: Mapping[CameraName, Image.Image], layout: MosaicLayout, caption: Sequence[str] = ()
) -> Image.Image:
    """A new RGB image: tiles in their cells with camera names; missing cameras say "no image".

    Tiles of another size than their cell are fitted (aspect kept) and centered.
    """
    canvas = Image.new("RGB", layout.size, BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    label_size = max(8, round(layout.tile_width / 22))
    for row, cameras in enumerate(GRID):
        for col, camera in enumerate(cameras):
            x, y, w, h = layout.cell(row, col)
            if camera is None:
                _caption(draw, (x, y, w, h), caption, label_size)
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


def _caption(
    draw: ImageDraw.ImageDraw, cell: tuple[int, int, int, int], lines: Sequence[str], size: int
) -> None:
    x, y, w, h = cell
    if not lines:
        return
    # Shrink until the longest line (a 37-character segment name) fits the cell.
    margin = max(2, w // 32)
    while size > 7 and max(draw.textlength(s, font=font(size)) for s in lines) > w - 2 * margin:
        size -= 1
    face = font(size)
    line_h = round(size * 1.3)
    top = y + (h - line_h * len(lines)) // 2
    for i, line in enumerate(lines):
        fill = TEXT if i == 0 else MUTED
        draw.text((x + w / 2, top + i * line_h), line, font=face, fill=fill, anchor="ma")
