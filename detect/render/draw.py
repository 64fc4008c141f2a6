"""Drawing boxes and label chips: pure functions that return a new image, never touch the input."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from PIL import Image

from detect.core import json_fields as jf
from detect.core.errors import UsageError
from detect.core.records import Detections
from detect.render.chip_layout import Chip, Rect, frame_font_size, lay_out_chips
from detect.render.chip_text import chip_text, chip_texts, short_chip_text
from detect.render.chips import RGB, chip_height, chip_width, paint_chip, paint_chip_at
from detect.render.outline import clip_all, paint_outline
from detect.render.trails import NO_TRAILS, TRACK_LEGEND, TrackTrails, drawn_track_ids, paint_trails, trail_rects

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
UNSCORED = ("boxes", "chips", "none")
# Bounds of what a drawing may ask for (`--line-width`, `--max-boxes`; a style read back from a
# manifest is held to them too): wider lines hide the image, more boxes than this hide each other.
MAX_LINE_WIDTH = 64
MAX_BOXES = 10_000
MAX_FONT_SIZE = 512  # no flag sets it: 30 px labels a 1920-wide frame
MAX_CLASS_ID = 2**31 - 1
MAX_CLASSES = 10_000  # --classes names a few


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
    # When boxes are judged against labels: classes with no Waymo type (traffic lights, benches...) are
    # drawn thin without a chip ("boxes"), with their chip ("chips"), or not at all ("none"), so the
    # scored objects stand out.
    unscored: str = "boxes"

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise UsageError(f"threshold must be between 0 and 1, got {self.threshold}")
        if self.classes is not None:
            object.__setattr__(self, "classes", frozenset(int(c) for c in self.classes))
        for name in ("line_width", "font_size"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise UsageError(f"{name} must be at least 1, got {value}")
        if self.unscored not in UNSCORED:
            raise UsageError(f"unscored must be one of {', '.join(UNSCORED)}, got {self.unscored!r}")
        if self.max_boxes is not None and int(self.max_boxes) < 0:
            raise UsageError(f"max_boxes must be 0 or more, got {self.max_boxes}")
        palette = tuple(tuple(int(v) for v in color) for color in self.palette)
        if not palette or any(len(c) != 3 or not all(0 <= v <= 255 for v in c) for c in palette):
            raise UsageError("palette must be a non-empty sequence of (r, g, b) colors in 0-255")
        object.__setattr__(self, "palette", palette)

    def to_json(self) -> dict[str, object]:
        """How a manifest records the style (`settings.draw`): the palette as its length."""
        return {"threshold": self.threshold, "classes": None if self.classes is None else sorted(self.classes),
                "show_labels": self.show_labels, "show_scores": self.show_scores, "line_width": self.line_width,
                "font_size": self.font_size, "max_boxes": self.max_boxes, "palette": len(self.palette),
                "dashed": self.dashed, "watermark": self.watermark, "unscored": self.unscored}

    @classmethod
    def from_json(cls, value: object, field: str) -> DrawStyle:
        """The style `to_json` recorded at `field`, every value checked (`RecordError` naming the
        first that is not usable); a key it lacks takes the default. The palette drawn is the
        default one (a manifest records only its length)."""
        f = jf.Fields(jf.section(value, field), field)
        default = cls()

        def classes(v: object, name: str) -> frozenset[int]:
            return frozenset(jf.whole(c, f"{name}[]", 0, MAX_CLASS_ID) for c in jf.items(v, name, MAX_CLASSES))

        def sized(high: int) -> Callable[[object, str], int | None]:
            return lambda v, name: jf.optional(v, lambda x: jf.whole(x, name, 1, high))

        f.get("palette", 0, lambda v, name: jf.whole(v, name, 1, 1 << 16))
        return cls(threshold=f.get("threshold", default.threshold, lambda v, name: jf.number(v, name, 0.0, 1.0)),
                   classes=f.get("classes", None, lambda v, name: jf.optional(v, lambda x: classes(x, name))),
                   show_labels=f.get("show_labels", default.show_labels, jf.flag),
                   show_scores=f.get("show_scores", default.show_scores, jf.flag),
                   line_width=f.get("line_width", None, sized(MAX_LINE_WIDTH)),
                   font_size=f.get("font_size", None, sized(MAX_FONT_SIZE)),
                   max_boxes=f.get("max_boxes", default.max_boxes, sized(MAX_BOXES)),
                   dashed=f.get("dashed", default.dashed, jf.flag),
                   watermark=f.get("watermark", None, lambda v, name: jf.optional(v, lambda x: jf.text(x, name))),
                   unscored=f.get("unscored", default.unscored, lambda v, name: jf.choice(v, name, UNSCORED)))


def scaled_line_width(width: int, height: int) -> int:
    """4 px on a 1920-wide frame: still >= 1 px after the 3x downscale for animations."""
    return max(1, round(max(width, height) / 480))


def scaled_font_size(width: int, height: int) -> int:
    """A frame's chip text size: 30 px on a 1920-wide frame, 10 px once shrunk to its 640-wide
    animation (`detect.render.chip_layout.frame_font_size`)."""
    del height  # the animations shrink a frame to a width
    return frame_font_size(width)


def to_array(image: np.ndarray | Image.Image) -> np.ndarray:
    """A new C-contiguous uint8 `(H, W, 3)` copy of `image` (array or PIL image): the canvas."""
    if isinstance(image, Image.Image):
        if image.width == 0 or image.height == 0:
            raise ValueError(f"image must be non-empty, got size {image.size}")
        return np.array(image.convert("RGB") if image.mode != "RGB" else image)
    return np.array(_checked(image), order="C", copy=True)


def to_canvas(image: np.ndarray | Image.Image) -> Image.Image:
    """A new RGB PIL image holding a copy of `image` (uint8 `(H, W, 3)` array or PIL image)."""
    if isinstance(image, Image.Image):
        if image.width == 0 or image.height == 0:
            raise ValueError(f"image must be non-empty, got size {image.size}")
        return image.convert("RGB") if image.mode != "RGB" else image.copy()
    # fromarray copies (Pillow stores RGB as 4 bytes a pixel): the result is a new image.
    return Image.fromarray(np.ascontiguousarray(_checked(image)), mode="RGB")


def _checked(image: object) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a numpy array or a PIL image, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise ValueError(f"image must have dtype uint8, got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"image must have shape (H, W, 3), got {image.shape}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image must be non-empty, got shape {image.shape}")
    return image


def select_detections(detections: Detections, style: DrawStyle) -> Detections:
    """The boxes `style` asks for: above threshold, in `classes`, at most `max_boxes`, best first."""
    return detections.select(selected_rows(detections, style))


def selected_rows(detections: Detections, style: DrawStyle) -> np.ndarray:
    """The rows `select_detections` keeps, in its order."""
    keep = detections.scores >= style.threshold
    if style.classes is not None:
        keep &= np.isin(detections.class_ids, list(style.classes))
    index = np.flatnonzero(keep)
    index = index[np.argsort(-detections.scores[index], kind="stable")]
    if style.max_boxes is not None:
        index = index[: style.max_boxes]
    return index


def draw_detections(
    image: np.ndarray | Image.Image, detections: Detections, style: DrawStyle | None = None,
    *, in_place: bool = False, trails: TrackTrails | None = None,
) -> np.ndarray | Image.Image:
    """`detections` drawn on a copy of `image`, returned as the same kind of image (array in,
    array out; PIL in, PIL out). The input is left untouched, unless `in_place` asks to draw on
    `image` itself (a writable C-contiguous array the caller owns; saves a full-frame copy).
    A tracked image (`detections.track_ids` set): each box's id in its chip (`#17 car 0.83`), its
    trail (`trails`, keyed by those ids) behind it in its class color, and a legend line that says so.

    Drawing works on the numpy array: on a 1920x1280 frame this avoids two full-frame copies
    through Pillow's 4-byte pixel layout (~20 ms a frame here) and hands fpng its input as is.
    """
    if not isinstance(detections, Detections):
        raise TypeError(f"detections must be a Detections, got {type(detections).__name__}")
    style = style or DrawStyle()
    if in_place:
        if not isinstance(image, np.ndarray) or not image.flags.writeable or not image.flags.c_contiguous:
            raise ValueError("in_place drawing needs a writable, C-contiguous numpy array")
        canvas = _checked(image)
    else:
        canvas = to_array(image)
    chosen, texts, colors, ids = chosen_boxes(detections, style)
    tracked = detections.track_ids is not None
    height, width = canvas.shape[:2]
    reserved = [r for r in (track_legend_rect(width, height) if tracked else None,
                            watermark_rect(width, height, style)) if r is not None]
    draw_boxes(canvas, chosen.xyxy, texts, colors, line_width=style.line_width, font_size=style.font_size,
               dashed=style.dashed, reserved=reserved, trails=(trails or NO_TRAILS).of(ids, colors) if tracked else None)
    if tracked:
        paint_track_legend(canvas)
    paint_watermark(canvas, style)
    return Image.fromarray(canvas, mode="RGB") if isinstance(image, Image.Image) else canvas


def chosen_boxes(detections: Detections, style: DrawStyle
                 ) -> tuple[Detections, list[tuple[str, ...]], list[RGB], list[int | None]]:
    """The boxes `draw_detections` draws, best first: their detections, chip texts (longest first:
    `#17 car 0.83`, `car .83`, `.83`), class colors and track ids (None: untracked)."""
    chosen = detections.select(selected_rows(detections, style))
    ids = drawn_track_ids(chosen)
    texts = [
        chip_texts(chip_text(label, int(cid), score, style, track_id),
                   short_chip_text(score, style, track_id, label or str(int(cid))), short_chip_text(score, style))
        for label, cid, score, track_id in zip(chosen.labels, chosen.class_ids, chosen.scores.tolist(), ids, strict=True)
    ]
    colors = [style.palette[int(cid) % len(style.palette)] for cid in chosen.class_ids]
    return chosen, texts, colors, ids


def legend_font_size(width: int, height: int) -> int:
    """The text size of a frame's legends: the chips' (readable once the frame is shrunk for the GIF)."""
    return scaled_font_size(width, height)


def track_legend_rect(width: int, height: int) -> Rect | None:
    """Where `paint_track_legend` paints (None: the image is too small for it)."""
    size = legend_font_size(width, height)
    chip_w = chip_width(TRACK_LEGEND, size)
    return (width - chip_w, 0, width, chip_height(size)) if chip_height(size) <= height and chip_w <= width else None


def paint_track_legend(canvas: np.ndarray) -> None:
    """`TRACK_LEGEND` in the top-right corner of `canvas`, in place (a tracked segment's frames)."""
    height, width = canvas.shape[:2]
    rect = track_legend_rect(width, height)
    if rect is not None:
        paint_chip_at(canvas, rect[:2], TRACK_LEGEND, WATERMARK_COLOR, legend_font_size(width, height))


def watermark_rect(width: int, height: int, style: DrawStyle) -> Rect | None:
    """Where `paint_watermark` paints (None: the style has no watermark)."""
    if not style.watermark:
        return None
    size = style.font_size or scaled_font_size(width, height)
    chip_w, chip_h = min(width, chip_width(style.watermark, size)), min(height, chip_height(size))
    return 0, height - chip_h, chip_w, height


def paint_watermark(canvas: np.ndarray, style: DrawStyle) -> np.ndarray:
    """The style's watermark (if any) in the bottom-left corner of `canvas`, in place; returns it."""
    if style.watermark:
        height, width = canvas.shape[:2]
        size = style.font_size or scaled_font_size(width, height)
        paint_chip(canvas, (0, height, 0, height), style.watermark, WATERMARK_COLOR, size)
    return canvas


def draw_boxes(
    canvas: np.ndarray,
    xyxy: np.ndarray,
    texts: Sequence[str | Sequence[str] | None],
    colors: Sequence[RGB],
    *,
    line_width: int | None = None,
    font_size: int | None = None,
    dashed: bool = False,
    lines: Sequence[str] | None = None,
    widths: Sequence[int] | None = None,
    optional: Sequence[bool] | None = None,
    reserved: Sequence[Rect] = (),
    trails: tuple[Mapping[int, np.ndarray], Mapping[int, RGB]] | None = None,
) -> PlacedChips:
    """Draw pixel `xyxy` boxes with their chips onto `canvas` (uint8 `(H, W, 3)`) in place;
    returns the chips drawn and how many were left out.

    The building block for overlays: ground truth can go on the same canvas you own, e.g. dashed
    and without scores, before or after the detections. Boxes are clipped to the image; boxes
    fully outside, non-finite or empty after clipping draw nothing. The first box ends up on top.
    `texts` gives each box its chip: a text, its texts longest first (`chip_texts`), or None.
    Chips go where `detect.render.chip_layout.lay_out_chips` puts them, the first box's chip first,
    never on `reserved` rectangles (a legend); a chip with no room is left out.
    `lines` gives each box its own line style (see `LINE_STYLES`; default: all dashed or all
    solid, as `dashed` says), `widths` its own line width; `optional` marks boxes whose chip the
    picture can do without (missed labels: a far or narrow one is its dotted box alone). `trails`:
    tracks' trail points and colors (`detect.render.trails.paint_trails`), over the boxes' lines
    (a trail along a box's bottom edge would hide under it); no chip covers them.
    """
    if not isinstance(canvas, np.ndarray) or canvas.dtype != np.uint8 or canvas.ndim != 3 or canvas.shape[2] != 3:
        raise ValueError("canvas must be a uint8 numpy array of shape (H, W, 3)")
    xyxy = np.asarray(xyxy, dtype=np.float64).reshape(-1, 4)
    if not len(texts) == len(colors) == len(xyxy):
        raise ValueError(
            f"xyxy, texts and colors must have one entry per box, "
            f"got {len(xyxy)}, {len(texts)} and {len(colors)}"
        )
    for name, given in (("lines", lines), ("widths", widths), ("optional", optional)):
        if given is not None and len(given) != len(xyxy):
            raise ValueError(f"{name} must have one entry per box ({len(xyxy)})")
    height, width = canvas.shape[:2]
    lw = line_width or scaled_line_width(width, height)
    size = font_size or scaled_font_size(width, height)
    styles = lines or ["dashed" if dashed else "solid"] * len(xyxy)
    clipped = clip_all(xyxy, width, height)
    # Lowest-ranked first so the best box is drawn last, on top; all chips after all boxes so no
    # box line crosses a chip.
    for i in range(len(xyxy) - 1, -1, -1):
        box = clipped[i]
        if box is not None:
            paint_outline(canvas, box, colors[i], widths[i] if widths is not None else lw, styles[i])
    if trails is not None:
        paint_trails(canvas, *trails, lw)
    variants = [(t,) if isinstance(t, str) else tuple(t or ()) for t in texts]
    if trails is not None:
        reserved = [*reserved, *trail_rects(trails[0], lw)]
    chips = lay_out_chips(clipped, variants, size, width, height, inset=lw, reserved=reserved,
                          optional=optional)
    lead = max(1, lw // 2)
    for chip, color in zip(chips, colors, strict=True):
        if chip is not None and chip.leader is not None:
            x, top, bottom = chip.leader
            canvas[top:bottom, max(0, x - lead // 2):max(0, x - lead // 2) + lead] = color
    for chip, color in zip(chips, colors, strict=True):
        if chip is not None:
            paint_chip_at(canvas, (chip.x, chip.y), chip.text, color, size)
    left_out = sum(1 for box, v, chip in zip(clipped, variants, chips, strict=True) if box and v and chip is None)
    return PlacedChips(tuple(c for c in chips if c is not None), left_out)


@dataclasses.dataclass(frozen=True)
class PlacedChips:
    """The chips `draw_boxes` drew, in box order, and how many chips it left out."""

    chips: tuple[Chip, ...]
    left_out: int

    @property
    def rects(self) -> tuple[Rect, ...]:
        """Each chip's `(x0, y0, x1, y1)`, ends exclusive."""
        return tuple(c.rect for c in self.chips)
