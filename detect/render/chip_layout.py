"""Where each box's chip goes and what it says: one layout for every picture (the full-size frames,
the camera animations shrunk from them, the mosaic's tiles).

A chip is drawn at the smallest size that reads where the picture is shown (text at least
`MIN_TEXT_SHOWN_PX` tall there; a frame is read in its 640-wide animation) and says as much as its
box can carry: the long text (`#17 person 0.83`) where the chip is no wider than the box and the
chips placed so far, with it, cover at most `LONG_TEXT_COVER` of the picture, else the first of the
shorter ones with a free spot (`#17 .83`; `car .83`, then `.83`).
A chip the picture can do without (a missed label's: its dotted box says it) is a long text: drawn
only on a box two chips tall and as wide as it, within the same share. A chip goes at the first free spot next to its box
(above, just inside, below, beside; a row further off with a leader line as a last resort), and
never covers
- another chip, the picture's legend or watermark,
- more than `OTHER_BOX_SHARE` of another box's inside (a far car stays visible; a pedestrian in
  front of a bus keeps its chip),
- more than `OWN_BOX_SHARE` of its own box (a small far box gets its chip beside it, not on it).
A chip with no free spot is left out (its box is drawn; the table and the page keep every number).
Chips are placed in priority order: the first box's chip gets the best spot.

The checks are numpy over every candidate spot of every box at once (against the boxes near it);
only the chips against the chips placed before them go box by box, as a slice of a mask of the
chips placed so far.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Sequence

import numpy as np

from detect.render.chips import chip_height, chip_width

MIN_TEXT_SHOWN_PX = 10  # the smallest text that reads, in pixels as the picture is shown
SHOWN_WIDTH = 640  # a frame is read in its animation, this wide (and at full size)
LONG_TEXT_WIDTH = 1.0  # the long text only on a chip at most this many box widths wide
LONG_TEXT_COVER = 0.0075  # and only while the chips placed so far, with it, cover at most this share of the picture
OWN_BOX_SHARE = 1 / 3  # a chip may cover at most this share of its own box
OTHER_BOX_SHARE = 0.05  # and at most this share of another box's inside

Rect = tuple[int, int, int, int]  # x0, y0, x1, y1, ends exclusive

# Where a chip may go, in order of preference, as (x, y) of its top-left corner from the box's
# inclusive bounds x0, y0, x1, y1 and the chip's width w and height h; the last two are a chip's
# height further off, joined to the box by a leader line.
SPOTS: tuple[str, ...] = ("above", "inside top", "below", "inside bottom", "above right", "inside top right",
                          "below right", "inside bottom right", "beside left", "beside right", "beside left bottom",
                          "beside right bottom", "second row above", "second row below")
LEADER_SPOTS = frozenset({"second row above", "second row below"})
# per spot: x = a + b * (x1 + 1) + c * w  with a = x0 weight...: coefficients on (x0, x1 + 1, w) and (y0, y1 + 1, h)
_X = {"left": (1, 0, 0), "right": (0, 1, -1), "outside left": (1, 0, -1), "outside right": (0, 1, 0)}
_Y = {"above": (1, 0, -1), "top": (1, 0, 0), "below": (0, 1, 0), "bottom": (0, 1, -1), "above 2": (1, 0, -2),
      "below 2": (0, 1, 1)}
_SPOT_AXES = {
    "above": ("left", "above"), "inside top": ("left", "top"), "below": ("left", "below"),
    "inside bottom": ("left", "bottom"), "above right": ("right", "above"), "inside top right": ("right", "top"),
    "below right": ("right", "below"), "inside bottom right": ("right", "bottom"),
    "beside left": ("outside left", "top"), "beside right": ("outside right", "top"),
    "beside left bottom": ("outside left", "bottom"), "beside right bottom": ("outside right", "bottom"),
    "second row above": ("left", "above 2"), "second row below": ("left", "below 2"),
}
_XC = np.array([_X[_SPOT_AXES[s][0]] for s in SPOTS], np.int32)  # (spots, 3)
_YC = np.array([_Y[_SPOT_AXES[s][1]] for s in SPOTS], np.int32)
_LEADER = np.array([s in LEADER_SPOTS for s in SPOTS])


@dataclasses.dataclass(frozen=True)
class Chip:
    """A chip the layout placed: its top-left corner, size and text; `leader` the line
    `(x, y0, y1)` that joins a chip a row off to its box (None: the chip touches its box)."""

    x: int
    y: int
    width: int
    height: int
    text: str
    leader: tuple[int, int, int] | None = None

    @property
    def rect(self) -> Rect:
        return self.x, self.y, self.x + self.width, self.y + self.height


def font_size_for(shown_scale: float) -> int:
    """The smallest text size (pixels of the picture) that is `MIN_TEXT_SHOWN_PX` tall as shown,
    `shown_scale` shown pixels per pixel of the picture."""
    if not shown_scale > 0:
        raise ValueError(f"shown_scale must be positive, got {shown_scale}")
    return max(1, math.ceil(MIN_TEXT_SHOWN_PX / min(1.0, shown_scale) - 1e-9))


def frame_font_size(width: int) -> int:
    """A frame's chip text size: readable once the frame is shrunk to `SHOWN_WIDTH` (30 px on a
    1920-wide frame, 10 px in its GIF; 10 px on a frame no wider than the GIF)."""
    return font_size_for(SHOWN_WIDTH / max(1, width))


def lay_out_chips(boxes: Sequence[tuple[int, int, int, int] | None], texts: Sequence[Sequence[str]], size: int,
                  width: int, height: int, *, inset: int = 1,
                  reserved: Sequence[Rect] = (), optional: Sequence[bool] | None = None) -> list[Chip | None]:
    """Each box's chip (None: none), for `boxes` (inclusive pixel bounds; None: not drawn) and
    their `texts` (each box's chip texts, longest first; empty: no chip) at text `size`, on a
    `width` x `height` picture, the first box's chip first. `inset`: the boxes' line width (a chip
    may cross another box's outline); `reserved`: rectangles no chip may cover (the legend);
    `optional`: boxes whose chip the picture can do without (missed labels)."""
    n = len(boxes)
    if len(texts) != n or optional is not None and len(optional) != n:
        raise ValueError(f"expected one entry of texts (and optional) per box ({n}), got {len(texts)}")
    out: list[Chip | None] = [None] * n
    drawn = [i for i in range(n) if boxes[i] is not None]
    if not drawn:
        return out
    chip_h = chip_height(size)
    xyxy = np.array([boxes[i] for i in drawn], np.int32).reshape(-1, 4)
    inside = np.stack([xyxy[:, 0] + inset, xyxy[:, 1] + inset, xyxy[:, 2] + 1 - inset, xyxy[:, 3] + 1 - inset], 1)
    inside[:, 2:] = np.maximum(inside[:, 2:], inside[:, :2])
    inside_area = (inside[:, 2] - inside[:, 0]) * (inside[:, 3] - inside[:, 1])
    own_area = (xyxy[:, 2] + 1 - xyxy[:, 0]) * (xyxy[:, 3] + 1 - xyxy[:, 1])
    # every (box, text) a chip could say, with its width: the long texts only where narrow enough
    rows, options, widths, long = [], [], [], []
    box_widths, box_heights = (xyxy[:, 2] + 1 - xyxy[:, 0]).tolist(), (xyxy[:, 3] + 1 - xyxy[:, 1]).tolist()
    for k, i in enumerate(drawn):
        variants = [t for t in texts[i] if t and not t.isspace()]
        spare = optional is not None and optional[i]
        if spare and box_heights[k] < 2 * chip_h or chip_h > height:
            continue
        for v, text in enumerate(variants):
            text_w = chip_width(text, size)
            is_long = spare or v == 0 and len(variants) > 1  # a shorter text says the same in fewer words
            if text_w <= width and (text_w <= LONG_TEXT_WIDTH * box_widths[k] or not is_long):
                rows.append(k)
                options.append(text)
                widths.append(text_w)
                long.append(is_long)
    if not rows:
        return out
    row = np.array(rows, np.intp)
    w = np.array(widths, np.int32)[:, None]
    b = xyxy[row].T[:, :, None]  # coordinate-major: b[0] is every option's box x0, as a column
    x = _XC[None, :, 0] * b[0] + _XC[None, :, 1] * (b[2] + 1) + _XC[None, :, 2] * w
    y = _YC[None, :, 0] * b[1] + _YC[None, :, 1] * (b[3] + 1) + _YC[None, :, 2] * chip_h
    np.clip(x, 0, width - w, out=x)
    np.clip(y, 0, height - chip_h, out=y)
    rects = np.stack([x, y, x + w, y + chip_h])  # (4, options, spots): x0, y0, x1, y1 of each chip
    ok = _spares_other_boxes(rects, b, row, inside, (OTHER_BOX_SHARE * inside_area).astype(np.int32), chip_h)
    ok &= _overlap_paired(rects, b + np.array([0, 0, 1, 1], np.int32)[:, None, None]) <= (
        OWN_BOX_SHARE * own_area[row])[:, None]
    ok &= _touches(rects, b) | _LEADER[None, :] & _above_or_below(rects, b)
    if len(reserved):  # every reserved rectangle at once (a legend, each trail's): (4, options, spots, rects)
        ok &= ~np.any(_overlap_paired(rects[..., None], np.array(reserved, np.int32).reshape(-1, 4).T[:, None, None]),
                      axis=-1)
    options_of: dict[int, list[int]] = {}
    for j, k in enumerate(rows):
        options_of.setdefault(k, []).append(j)
    taken = _mask(height, width)  # the chips placed so far: a slice says whether a spot is free
    covered, long_cover = 0, LONG_TEXT_COVER * width * height
    try:
        for k in options_of:  # the boxes in their order: the first one's chip gets the best spot
            for j in options_of[k]:
                if long[j] and covered + widths[j] * chip_h > long_cover:
                    continue
                spots = np.flatnonzero(ok[j])
                free = next((int(s) for s, (x0, y0, x1, y1) in zip(spots, rects[:, j, spots].T.tolist(), strict=True)
                             if not taken[y0:y1, x0:x1].any()), None)
                if free is None:
                    continue
                x0, y0, x1, y1 = rects[:, j, free].tolist()
                taken[y0:y1, x0:x1] = True
                out[drawn[k]] = Chip(x0, y0, x1 - x0, y1 - y0, options[j],
                                     _leader((x0, y0, x1, y1), xyxy[row[j]].tolist()) if _LEADER[free] else None)
                covered += widths[j] * chip_h
                break
    finally:
        for chip in out:
            if chip is not None:
                taken[chip.y:chip.y + chip.height, chip.x:chip.x + chip.width] = False
    return out


_masks = threading.local()


def _mask(height: int, width: int) -> np.ndarray:
    """A clear `(height, width)` boolean mask of this thread's, kept between pictures (a fresh one
    costs more than the layout); the caller clears what it set."""
    mask: np.ndarray | None = getattr(_masks, "mask", None)
    if mask is None or mask.shape[0] < height or mask.shape[1] < width:  # cameras of two sizes share one
        shape = (height, width) if mask is None else (max(height, mask.shape[0]), max(width, mask.shape[1]))
        mask = _masks.mask = np.zeros(shape, bool)
    return mask[:height, :width]


def chip_overlap(chips: Sequence[Chip | None]) -> int:
    """The pixels covered by more than one chip (each pair's shared area, summed): 0 when no chip
    hides another."""
    rects = np.array([c.rect for c in chips if c is not None], np.int64).reshape(-1, 4)
    shared = _overlap(rects, rects)
    return int((shared.sum() - np.trace(shared)) // 2)


def _overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shared area of each rectangle of `a` with each of `b` (x0, y0, x1, y1, ends exclusive)."""
    w = np.minimum(a[:, None, 2], b[None, :, 2])
    w -= np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3])
    h -= np.maximum(a[:, None, 1], b[None, :, 1])
    np.maximum(w, 0, out=w)
    np.maximum(h, 0, out=h)
    w *= h
    return w


def _spares_other_boxes(rects: np.ndarray, boxes: np.ndarray, row: np.ndarray, inside: np.ndarray, limit: np.ndarray,
                        chip_h: int) -> np.ndarray:
    """Whether each chip (`rects`: 4, options, spots) covers at most `limit` pixels of every other
    box's `inside`: only the boxes within an option's reach are measured (a handful, not all)."""
    reach_w = rects[2, :, :1] - rects[0, :, :1]  # the chip's width: every spot lies within a chip of the box
    reach = np.concatenate([boxes[0] - reach_w, boxes[1] - 2 * chip_h, boxes[2] + 1 + reach_w,
                            boxes[3] + 1 + 2 * chip_h], 1)
    near = _overlap(reach, inside) > 0
    near[np.arange(len(row)), row] = False  # its own box: by the own-box rule
    options, others = np.nonzero(near)
    ok = np.ones(rects.shape[1:], bool)
    if len(options):
        bad = _overlap_paired(rects[:, options], inside.T[:, others, None]) > limit[others, None]
        first, starts = np.unique(options, return_index=True)
        ok[first] = ~np.logical_or.reduceat(bad, starts, axis=0)
    return ok


def _overlap_paired(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shared area of rectangles `a` and `b` (coordinate-major, x0, y0, x1, y1 first, broadcast)."""
    w = np.minimum(a[2], b[2])
    w -= np.maximum(a[0], b[0])
    h = np.minimum(a[3], b[3])
    h -= np.maximum(a[1], b[1])
    np.maximum(w, 0, out=w)
    np.maximum(h, 0, out=h)
    w *= h
    return w


def _touches(rects: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether each chip (4, options, spots) touches or overlaps its option's box (inclusive bounds)."""
    gap_x = np.maximum(rects[0] - (boxes[2] + 1), boxes[0] - rects[2])
    gap_y = np.maximum(rects[1] - (boxes[3] + 1), boxes[1] - rects[3])
    return (gap_x <= 0) & (gap_y <= 0)


def _above_or_below(rects: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether a chip shares columns with its box, so a vertical leader line can join them."""
    return (np.minimum(rects[2], boxes[2] + 1) - np.maximum(rects[0], boxes[0])) > 0


def _leader(rect: Sequence[int], box: Sequence[int]) -> tuple[int, int, int] | None:
    """The vertical line from a chip a row off to its box: (x, top, bottom), or None when they touch."""
    low, high = max(rect[0], box[0]), min(rect[2], box[2] + 1)
    x = low + (high - low) // 4
    if rect[3] < box[1]:
        return x, rect[3], box[1]
    if rect[1] > box[3] + 1:
        return x, box[3] + 1, rect[1]
    return None
