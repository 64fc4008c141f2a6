"""Label chips: a word-cached text chip, where each one goes so that chips do not hide each other,
and how much they still do (`chip_overlap`, which the tests and the drawing benchmark measure)."""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Sequence

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
    on `canvas` in place. `draw_boxes` picks a spot per chip with `place_chips` instead."""
    height, width = canvas.shape[:2]
    spot = _spot(box, (chip_width(text, size), chip_height(size)), "above", width, height)
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


# Where a chip may go, in order of preference: above the box's top-left corner (the usual place),
# just inside it, below the box, inside its bottom, the same at the right edge, beside the box, a
# chip's height further above or below. `place_chips`
# takes the first spot that covers no chip placed before it (as supervision's label placement
# does), else the one covering the least.
CHIP_SPOTS = ("above", "inside top", "below", "inside bottom", "above right", "inside top right",
              "below right", "inside bottom right", "beside left", "beside right", "second row above",
              "second row below")


def place_chips(boxes: Sequence[tuple[int, int, int, int] | None], sizes: Sequence[tuple[int, int] | None],
                width: int, height: int, spots: Sequence[str] = CHIP_SPOTS, *,
                fit: bool = False) -> list[tuple[int, int] | None]:
    """The top-left corner of each box's chip (`sizes`: chip width and height; None: no chip),
    chips placed in order (the first box's chip first: it gets the best spot) inside the image.
    With `fit`, a chip that would cover part of one placed before it, or is larger than the
    image, gets no spot (None): it is left out (the mosaic's small tiles)."""
    placed = np.zeros((0, 4), np.int64)
    out: list[tuple[int, int] | None] = []
    for box, size in zip(boxes, sizes, strict=True):
        if box is None or size is None or fit and (size[0] > width or size[1] > height):
            out.append(None)
            continue
        candidates = np.array([_spot(box, size, name, width, height) for name in spots], np.int64)
        rects = np.concatenate([candidates, candidates + np.array(size, np.int64)], 1)
        covered = _overlap(rects, placed).sum(1) if len(placed) else np.zeros(len(rects), np.int64)
        best = int(np.argmin(covered))  # the first of the least covered: the preferred spot when free
        if fit and covered[best] > 0:
            out.append(None)
            continue
        out.append((int(candidates[best, 0]), int(candidates[best, 1])))
        placed = np.concatenate([placed, rects[best:best + 1]])
    return out


def chip_overlap(spots: Sequence[tuple[int, int] | None], sizes: Sequence[tuple[int, int] | None]) -> int:
    """The pixels covered by more than one chip (each pair's shared area, summed): 0 when no chip
    hides another."""
    rects = np.array([(x, y, x + s[0], y + s[1]) for p, s in zip(spots, sizes, strict=True) if p is not None
                      and s is not None for x, y in [p]], np.int64).reshape(-1, 4)
    shared = _overlap(rects, rects)
    return int((shared.sum() - np.trace(shared)) // 2)


def _overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shared area of each rectangle of `a` with each of `b` (x0, y0, x1, y1, ends exclusive)."""
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


def _spot(box: tuple[int, int, int, int], size: tuple[int, int], name: str, width: int, height: int) -> tuple[int, int]:
    """The chip's top-left corner at spot `name` of `box` (inclusive pixel bounds), inside the image."""
    x0, y0, x1, y1 = box
    chip_w, chip_h = size
    x = x1 + 1 - chip_w if name.endswith("right") else x0
    if name.startswith("beside"):
        x, y = (x0 - chip_w, y0) if name.endswith("left") else (x1 + 1, y0)
    elif name == "second row above":
        y = y0 - 2 * chip_h
    elif name == "second row below":
        y = y1 + 1 + chip_h
    elif name.startswith("above"):
        y = y0 - chip_h if y0 - chip_h >= 0 else y0  # no room above: just inside, as before
    elif name.startswith("inside top"):
        y = y0
    elif name.startswith("below"):
        y = y1 + 1
    else:
        y = y1 + 1 - chip_h
    return max(0, min(x, width - chip_w)), max(0, min(y, height - chip_h))


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
