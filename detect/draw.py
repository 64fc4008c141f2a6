"""Drawing boxes and label chips: pure functions that return a new image, never touch the input."""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from detect.errors import UsageError
from detect.records import Detections

RGB = tuple[int, int, int]

# A fixed, high-contrast palette (Tableau 20 reordered so neighbouring COCO ids differ strongly).
# A class keeps its color across frames, cameras and runs: color = palette[class_id % len].
DEFAULT_PALETTE: tuple[RGB, ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (188, 189, 34),
    (23, 190, 207),
    (174, 199, 232),
    (255, 187, 120),
    (152, 223, 138),
    (255, 152, 150),
    (197, 176, 213),
    (196, 156, 148),
    (247, 182, 210),
    (219, 219, 141),
    (158, 218, 229),
    (127, 127, 127),
    (255, 255, 255),
)


WATERMARK_COLOR: RGB = (40, 40, 40)


@dataclasses.dataclass(frozen=True)
class DrawStyle:
    """What to draw and how. `None` sizes scale with the image (legible at full size and at 1/3)."""

    threshold: float = 0.5
    classes: frozenset[int] | None = None
    show_labels: bool = True
    show_scores: bool = True
    line_width: int | None = None
    font_size: int | None = None
    max_boxes: int | None = 100
    palette: tuple[RGB, ...] = DEFAULT_PALETTE
    dashed: bool = False
    # Written in the bottom-left corner, e.g. "stub model: boxes are not detections".
    watermark: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise UsageError(f"threshold must be between 0 and 1, got {self.threshold}")
        if self.classes is not None:
            object.__setattr__(self, "classes", frozenset(int(c) for c in self.classes))
        for name in ("line_width", "font_size"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise UsageError(f"{name} must be at least 1, got {value}")
        if self.max_boxes is not None and int(self.max_boxes) < 0:
            raise UsageError(f"max_boxes must be 0 or more, got {self.max_boxes}")
        palette = tuple(tuple(int(v) for v in color) for color in self.palette)
        if not palette or any(len(c) != 3 or not all(0 <= v <= 255 for v in c) for c in palette):
            raise UsageError("palette must be a non-empty sequence of (r, g, b) colors in 0-255")
        object.__setattr__(self, "palette", palette)


def scaled_line_width(width: int, height: int) -> int:
    """4 px on a 1920-wide frame: still >= 1 px after the 3x downscale for animations."""
    return max(1, round(max(width, height) / 480))


def scaled_font_size(width: int, height: int) -> int:
    """32 px on a 1920-wide frame, ~11 px once shrunk to 640 wide."""
    return max(10, round(max(width, height) / 60))


_fonts = threading.local()


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled TrueType font (Aileron via FreeType), cached per thread and size."""
    cache = _fonts.__dict__.setdefault("by_size", {})
    if size not in cache:
        cache[size] = ImageFont.load_default(size=size)
    return cache[size]


def to_canvas(image: np.ndarray | Image.Image) -> Image.Image:
    """A new RGB PIL image holding a copy of `image` (uint8 `(H, W, 3)` array or PIL image)."""
    if isinstance(image, Image.Image):
        if image.width == 0 or image.height == 0:
            raise ValueError(f"image must be non-empty, got size {image.size}")
        return image.convert("RGB") if image.mode != "RGB" else image.copy()
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a numpy array or a PIL image, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"image must have dtype uint8, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"image must have shape (H, W, 3), got {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image must be non-empty, got shape {image.shape}")
    # fromarray copies (Pillow stores RGB as 4 bytes a pixel): this copy is the drawing canvas.
    return Image.fromarray(np.ascontiguousarray(image), mode="RGB")


def select_detections(detections: Detections, style: DrawStyle) -> Detections:
    """The boxes `style` asks for: above threshold, in `classes`, at most `max_boxes`, best first."""
    keep = detections.scores >= style.threshold
    if style.classes is not None:
        keep &= np.isin(detections.class_ids, list(style.classes))
    index = np.flatnonzero(keep)
    index = index[np.argsort(-detections.scores[index], kind="stable")]
    if style.max_boxes is not None:
        index = index[: style.max_boxes]
    return detections.select(index)


def chip_text(label: str, class_id: int, score: float, style: DrawStyle) -> str | None:
    """`car 0.87`, `car`, `0.87` or None, as the style says."""
    parts = []
    if style.show_labels:
        parts.append(label or str(class_id))
    if style.show_scores:
        parts.append(f"{score:.2f}")
    return " ".join(parts) or None


def draw_detections(
    image: np.ndarray | Image.Image, detections: Detections, style: DrawStyle | None = None
) -> Image.Image:
    """A new RGB image with `detections` drawn on a copy of `image`; `image` is left untouched."""
    if not isinstance(detections, Detections):
        raise TypeError(f"detections must be a Detections, got {type(detections).__name__}")
    style = style or DrawStyle()
    canvas = to_canvas(image)
    chosen = select_detections(detections, style)
    texts = [
        chip_text(label, int(cid), float(score), style)
        for label, cid, score in zip(chosen.labels, chosen.class_ids, chosen.scores, strict=True)
    ]
    colors = [style.palette[int(cid) % len(style.palette)] for cid in chosen.class_ids]
    draw_boxes(
        canvas,
        chosen.xyxy,
        texts,
        colors,
        line_width=style.line_width,
        font_size=style.font_size,
        dashed=style.dashed,
    )
    if style.watermark:
        width, height = canvas.size
        size = style.font_size or scaled_font_size(width, height)
        _chip(ImageDraw.Draw(canvas), (0, height, 0, height), style.watermark, WATERMARK_COLOR, size, width, height)
    return canvas


def draw_boxes(
    canvas: Image.Image,
    xyxy: np.ndarray,
    texts: Sequence[str | None],
    colors: Sequence[RGB],
    *,
    line_width: int | None = None,
    font_size: int | None = None,
    dashed: bool = False,
) -> None:
    """Draw pixel `xyxy` boxes with optional chips onto `canvas` in place (a canvas you own).

    The building block for overlays: ground truth can go on the same canvas, e.g. dashed and
    without scores, before or after the detections. Boxes are clipped to the image; boxes fully
    outside, non-finite or empty after clipping draw nothing. The first box ends up on top.
    """
    xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    if not len(texts) == len(colors) == len(xyxy):
        raise ValueError(
            f"xyxy, texts and colors must have one entry per box, "
            f"got {len(xyxy)}, {len(texts)} and {len(colors)}"
        )
    width, height = canvas.size
    lw = line_width or scaled_line_width(width, height)
    size = font_size or scaled_font_size(width, height)
    draw = ImageDraw.Draw(canvas)
    clipped = [_clip(box, width, height) for box in xyxy]
    # Lowest-ranked first so the best box and its chip are drawn last, on top; all chips after
    # all boxes so no box line crosses a chip.
    order = range(len(xyxy) - 1, -1, -1)
    for i in order:
        if clipped[i] is not None:
            _rectangle(draw, clipped[i], colors[i], lw, dashed)
    for i in order:
        if clipped[i] is not None and texts[i]:
            _chip(draw, clipped[i], texts[i], colors[i], size, width, height)


def _clip(box: np.ndarray, width: int, height: int) -> tuple[int, int, int, int] | None:
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


def _rectangle(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], color: RGB, lw: int, dashed: bool
) -> None:
    x0, y0, x1, y1 = box
    if not dashed:
        draw.rectangle(box, outline=color, width=lw)
        return
    dash = max(4, 3 * lw)
    half = lw // 2
    for a, b in (((x0, y0 + half), (x1, y0 + half)), ((x0, y1 - half), (x1, y1 - half))):
        for start in range(a[0], b[0] + 1, 2 * dash):
            draw.line([(start, a[1]), (min(start + dash, b[0]), a[1])], fill=color, width=lw)
    for a, b in (((x0 + half, y0), (x0 + half, y1)), ((x1 - half, y0), (x1 - half, y1))):
        for start in range(a[1], b[1] + 1, 2 * dash):
            draw.line([(a[0], start), (a[0], min(start + dash, b[1]))], fill=color, width=lw)


def _chip(
    draw: ImageDraw.ImageDraw,
    box: tuple[int, int, int, int],
    text: str,
    color: RGB,
    size: int,
    width: int,
    height: int,
) -> None:
    words = [_word_mask(word, size) for word in text.split()]
    if not words:
        return
    space = _space_width(size)
    text_h = words[0].height
    pad = max(1, math.ceil(text_h / 8))
    chip_w = sum(w.width for w in words) + space * (len(words) - 1) + 2 * pad
    chip_h = text_h + 2 * pad
    x = min(box[0], width - chip_w)
    # Above the box when there is room, else just inside its top edge; always inside the image.
    y = box[1] - chip_h if box[1] - chip_h >= 0 else box[1]
    x, y = max(0, x), max(0, min(y, height - chip_h))
    draw.rectangle((x, y, x + chip_w - 1, y + chip_h - 1), fill=color)
    luminance = 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]
    ink = (0, 0, 0) if luminance > 140 else (255, 255, 255)
    cursor = x + pad
    for mask in words:
        draw.bitmap((cursor, y + pad), mask, fill=ink)
        cursor += mask.width + space


# FreeType rendering costs ~1-2 ms a string at 32 px, more than the rest of the drawing; labels
# and scores repeat across boxes and frames, so rendered words are cached (a few KB each).
@functools.lru_cache(maxsize=4096)
def _word_mask(word: str, size: int) -> Image.Image:
    face = font(size)
    ascent, descent = face.getmetrics()
    mask = Image.new("L", (max(1, math.ceil(face.getlength(word))), ascent + descent), 0)
    ImageDraw.Draw(mask).text((0, 0), word, font=face, fill=255, anchor="la")
    return mask


@functools.lru_cache(maxsize=256)
def _space_width(size: int) -> int:
    return max(1, round(font(size).getlength(" ")))
