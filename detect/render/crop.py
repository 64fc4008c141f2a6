"""A close-up of one object: a square window centred on its box, with a fixed margin and a minimum
size, scaled to `CROP_SIDE` pixels, with only that object's outline drawn (and its partner's,
the matched or nearest box, thinner and white). Cut from the raw camera image, so no other box's
drawing fills it; pure: the input image is never touched.

Outlines are drawn after scaling, so they are as thick on a 16-px pedestrian as on a bus, and
everything outside them is the raw image, scaled. A box is taken as its part inside the image (an
edited table's box from -1e30 to 1e30 px is the whole image), so the window, and the canvas it is
cut into, is never much larger than the image."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from PIL import Image

from detect.render.chips import RGB
from detect.render.outline import paint_outline

CROP_SIDE = 240  # pixels: the picture as the page shows it (a grid of 240-px cells)
MARGIN = 24  # source pixels of context on each side of the box
MIN_WINDOW = 96  # source pixels: a 16-px object is shown 2.5 times enlarged, not 15 times
PAD: RGB = (24, 24, 24)  # past the image's edge (the object stays centred)
PARTNER: RGB = (255, 255, 255)
SUBJECT_WIDTH, PARTNER_WIDTH = 3, 2  # pixels, at CROP_SIDE


@dataclasses.dataclass(frozen=True)
class Outline:
    """A box to draw on a crop: pixel xyxy in the source image, its color and line style."""

    xyxy: tuple[float, float, float, float]
    color: RGB
    line: str = "solid"
    width: int = SUBJECT_WIDTH


def crop_window(xyxy: tuple[float, float, float, float], margin: int = MARGIN,
                minimum: int = MIN_WINDOW) -> tuple[int, int, int, int]:
    """The square (left, top, right, bottom) centred on the box: its longer side plus `margin` each
    side, at least `minimum`; it may reach past the image (`cut` pads)."""
    x0, y0, x1, y1 = xyxy
    side = int(round(max(x1 - x0, y1 - y0, 0.0) + 2 * margin))
    side = max(side, minimum)
    left = int(round((x0 + x1) / 2 - side / 2))
    top = int(round((y0 + y1) / 2 - side / 2))
    return left, top, left + side, top + side


def cut(image: Image.Image, window: tuple[int, int, int, int], side: int = CROP_SIDE) -> Image.Image:
    """The window of `image` (dark where it reaches past the edge), scaled to `side` pixels."""
    left, top, right, bottom = window
    canvas = Image.new("RGB", (right - left, bottom - top), PAD)
    inside = (max(left, 0), max(top, 0), min(right, image.width), min(bottom, image.height))
    if inside[0] < inside[2] and inside[1] < inside[3]:
        canvas.paste(image.crop(inside), (inside[0] - left, inside[1] - top))
    return canvas.resize((side, side), Image.Resampling.LANCZOS)


def inside(xyxy: tuple[float, float, float, float], width: int, height: int) -> tuple[float, float, float, float]:
    """The part of a box inside a `width` x `height` image (NaN read as 0, infinities as the edges)."""
    def clamp(value: float, high: int) -> float:
        return 0.0 if math.isnan(value) else min(max(float(value), 0.0), float(high))

    x0, y0, x1, y1 = xyxy
    return clamp(x0, width), clamp(y0, height), clamp(x1, width), clamp(y1, height)


def close_up(image: Image.Image, subject: Outline, partner: Outline | None = None,
             side: int = CROP_SIDE) -> Image.Image:
    """`subject`'s close-up: the window around its part inside the image, `partner` then `subject`
    outlined on top."""
    window = crop_window(inside(subject.xyxy, *image.size))
    canvas = np.array(cut(image, window, side))
    scale = side / (window[2] - window[0])
    for outline in (partner, subject):
        if outline is None:
            continue
        box = _scaled(inside(outline.xyxy, *image.size), window, scale, side)
        if box is not None:
            paint_outline(canvas, box, outline.color, outline.width, outline.line)
    return Image.fromarray(canvas)


def _scaled(xyxy: tuple[float, float, float, float], window: tuple[int, int, int, int], scale: float,
            side: int) -> tuple[int, int, int, int] | None:
    """The box in the crop's pixels, clipped to it (None when it lies outside)."""
    x0, y0, x1, y1 = ((v - window[i % 2]) * scale for i, v in enumerate(xyxy))
    if x1 < 0 or y1 < 0 or x0 > side - 1 or y0 > side - 1 or x1 < x0 or y1 < y0:
        return None
    x0, y0 = max(0, int(round(x0))), max(0, int(round(y0)))
    x1, y1 = min(side - 1, int(round(x1))), min(side - 1, int(round(y1)))
    return x0, y0, x1, y1
