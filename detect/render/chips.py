"""Label chips: a filled chip of text, its words rendered once and cached; its size. Where each
chip goes is `detect.render.chip_layout`'s."""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
from PIL import Image, ImageDraw, ImageFont

RGB = tuple[int, int, int]


_fonts = threading.local()


def font(size: int) -> ImageFont.FreeTypeFont:
    """Pillow's bundled TrueType font (Aileron via FreeType), cached per thread and size."""
    cache = _fonts.__dict__.setdefault("by_size", {})
    if size not in cache:
        face = ImageFont.load_default(size=size)
        if not isinstance(face, ImageFont.FreeTypeFont):  # Pillow without FreeType: no sized font
            raise RuntimeError("Pillow was built without FreeType; detect needs it to draw labels")
        cache[size] = face
    return cache[size]


def chip_height(size: int) -> int:
    """The height of a chip `paint_chip` draws with text of `size` pixels."""
    text_h = _word_alpha("Ag", size).shape[0]
    return text_h + 2 * max(1, math.ceil(text_h / 8))


@functools.lru_cache(maxsize=8192)
def chip_width(text: str, size: int) -> int:
    """The width of the chip `paint_chip` draws for `text` at `size` pixels."""
    words = text.split()
    if not words:
        return 0
    text_h = _word_alpha("Ag", size).shape[0]
    pad = max(1, math.ceil(text_h / 8))
    return sum(_word_alpha(w, size).shape[1] for w in words) + _space_width(size) * (len(words) - 1) + 2 * pad


def paint_chip(canvas: np.ndarray, box: tuple[int, int, int, int], text: str, color: RGB, size: int) -> None:
    """A filled label chip above the box (or just inside its top), always inside the image; draws
    on `canvas` in place (legends, watermarks). A box's chip goes where `detect.render.chip_layout` says."""
    height, width = canvas.shape[:2]
    spot = _spot(box, (chip_width(text, size), chip_height(size)), width, height)
    paint_chip_at(canvas, spot, text, color, size)


def paint_chip_at(canvas: np.ndarray, spot: tuple[int, int], text: str, color: RGB, size: int) -> None:
    """A filled label chip with its top-left corner at `spot` (clipped to the image), in place."""
    words = text.split()
    if not words:
        return
    x, y = spot
    space = _space_width(size)
    pad = max(1, math.ceil(_word_alpha("Ag", size).shape[0] / 8))
    canvas[y:y + chip_height(size), x:x + chip_width(text, size)] = color
    cursor = x + pad
    rgb = (int(color[0]), int(color[1]), int(color[2]))
    for word in words:
        patch = _word_patch(word, size, rgb)
        h, w = patch.shape[:2]
        region = canvas[y + pad:y + pad + h, cursor:cursor + w]
        region[...] = patch[: region.shape[0], : region.shape[1]]
        cursor += w + space


def _spot(box: tuple[int, int, int, int], size: tuple[int, int], width: int, height: int) -> tuple[int, int]:
    """The chip's top-left corner above `box` (inclusive pixel bounds), or just inside its top when
    there is no room above, inside the image."""
    x0, y0, _, _ = box
    chip_w, chip_h = size
    y = y0 - chip_h if y0 - chip_h >= 0 else y0
    return max(0, min(x0, width - chip_w)), max(0, min(y, height - chip_h))


def ink_color(color: RGB) -> RGB:
    """Black text on light chips, white on dark ones."""
    luminance = 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]
    return (0, 0, 0) if luminance > 140 else (255, 255, 255)


# A chip's words always sit on the chip's own flat color, so each word is blended once per color
# and then copied: drawing stays a handful of array copies per box (~4x less CPU than blending
# every chip, and less time holding the GIL).
@functools.lru_cache(maxsize=4096)
def _word_patch(word: str, size: int, color: RGB) -> np.ndarray:
    """`word` in the ink color, antialiased onto `color`, as a read-only uint8 `(h, w, 3)` patch."""
    a = _word_alpha(word, size)[:, :, None].astype(np.uint16)
    background = np.array(color, np.uint16)
    ink = np.array(ink_color(color), np.uint16)
    patch = ((background * (255 - a) + ink * a + 127) // 255).astype(np.uint8)
    patch.setflags(write=False)
    return patch


# FreeType rendering costs ~1-2 ms a string at 32 px, more than the rest of the drawing; labels
# and scores repeat across boxes and frames, so rendered words are cached (a few KB each).
@functools.lru_cache(maxsize=4096)
def _word_alpha(word: str, size: int) -> np.ndarray:
    """The word rendered by FreeType as a read-only uint8 coverage mask."""
    face = font(size)
    ascent, descent = face.getmetrics()
    mask = Image.new("L", (max(1, math.ceil(face.getlength(word))), ascent + descent), 0)
    ImageDraw.Draw(mask).text((0, 0), word, font=face, fill=255, anchor="la")
    alpha = np.asarray(mask).copy()
    alpha.setflags(write=False)
    return alpha


@functools.lru_cache(maxsize=256)
def _space_width(size: int) -> int:
    return max(1, round(font(size).getlength(" ")))
