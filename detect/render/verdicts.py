"""A frame's errors made visible: hits, false alarms and missed labels drawn apart.

With Waymo's labels, each drawn box says what the evaluation made of it. The detections become
Waymo types as `detect eval` maps them (`ClassMap.to_waymo`: a rider and its bicycle one CYCLIST)
and are matched to the labels by `detect.judge` (COCO's rule, the protocol's IoU; every label
counts, as at LEVEL_2), so the picture and `matches.parquet` name the same objects:

- hit: a detection at or above the threshold that matched a label: solid, sky blue;
- false alarm: one that matched none: dashed, vermillion, its chip starts with "FA";
- missed label: a label no detection at or above the threshold matched: dotted, yellow;
- other classes, not evaluated (the model's classes no Waymo type covers, e.g. traffic light, and
  those of a type the segment has no labels of, e.g. a stop sign): thin, grey.

Colors from Okabe and Ito's palette (told apart with each common color-vision deficiency), each
state with its own line style too, so grey-scale prints and every reader can tell them apart.
Labels of types the model cannot output are left out (the legend says which). In a tracked
segment a detection's chip starts with its track id (`#17 car 0.83`, `FA #17 car 0.31`) and its
trail follows it in its state's color; the legend says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.boxes import box_area
from detect.core.records import Detections, Labels, WaymoType
from detect.judge import FALSE_ALARM, HIT, MISSED, OTHER, ErrorRules
from detect.render.chip_layout import Rect
from detect.render.chip_text import chip_text, chip_texts, short_chip_text
from detect.render.chips import RGB, chip_height, chip_width, paint_chip_at
from detect.render.draw import (
    DrawStyle,
    PlacedChips,
    draw_boxes,
    legend_font_size,
    scaled_line_width,
    selected_rows,
)
from detect.render.outline import paint_outline
from detect.render.trails import NO_TRAILS, TRACK_LEGEND, TrackTrails

COLORS: dict[str, RGB] = {HIT: (86, 180, 233), FALSE_ALARM: (213, 94, 0), MISSED: (240, 228, 66), OTHER: (150, 150, 150)}
LINES = {HIT: "solid", FALSE_ALARM: "dashed", MISSED: "dotted", OTHER: "solid"}
LEGEND = {HIT: "hit", FALSE_ALARM: "FA: false alarm", MISSED: "missed label", OTHER: "other class, not evaluated"}
LEGEND_FILL: RGB = (40, 40, 40)  # a legend row's chip: light words on dark, the line sample carries the color


@dataclasses.dataclass(frozen=True, eq=False)
class Judged:
    """One frame's verdicts, in drawing terms: boxes (pixel xyxy), their state and chip text (the
    long one, and the short one a small box gets: `#17 .83`)."""

    xyxy: np.ndarray
    states: tuple[str, ...]
    texts: tuple[str | None, ...]
    left_out: tuple[int, ...]  # label types the model cannot output (not drawn)
    track_ids: tuple[int | None, ...] | None = None  # per box in a tracked segment (None: no id); None: untracked
    trails: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)  # the drawn tracks' trails
    shorts: tuple[str | None, ...] | None = None  # per box (None: the long text only)

    def chip_texts(self) -> list[tuple[str, ...]]:
        """Each box's chip texts, longest first (`draw_boxes`' texts)."""
        shorts = self.shorts if self.shorts is not None else (None,) * len(self.texts)
        return [chip_texts(t, s) for t, s in zip(self.texts, shorts, strict=True)]

    @property
    def tracked(self) -> bool:
        return self.track_ids is not None

    def count(self, state: str) -> int:
        return sum(1 for s in self.states if s == state)


def judge(detections: Detections, labels: Labels, rules: ErrorRules, style: DrawStyle,
          trails: TrackTrails | None = None) -> Judged:
    """Every box to draw on one frame with its state, best-scoring detections first, then the
    missed labels (largest first); a tracked image (`detections.track_ids` set) adds each
    detection's id and its trail (of `trails`)."""
    frame = rules.match(detections, labels)
    mapped, dt, gt = frame.boxes, frame.detections, frame.labels
    label_kept = np.zeros(len(labels), bool)
    label_kept[gt] = True
    # (score, box, state, text, short text, id)
    boxes: list[tuple[float, np.ndarray, str, str | None, str | None, int | None]] = []
    for j, i in enumerate(dt):
        score = float(mapped.scores[i])
        if score < style.threshold or not _wanted(mapped.rows[i], detections, style):
            continue
        state = HIT if frame.hits[j] else FALSE_ALARM
        name = _name(mapped.rows[i], detections, int(mapped.types[i]))
        track_id = _track_id(mapped.rows[i], detections)
        text = chip_text(name, int(mapped.class_ids[i]), score, style, track_id)
        boxes.append((score, mapped.xyxy[i], state, f"FA {text}" if state == FALSE_ALARM and text else text,
                      short_chip_text(score, style, track_id), track_id))
    for row in frame.unjudged_rows(len(detections)) if style.unscored != "none" else ():
        score = float(detections.scores[row])
        if score < style.threshold or not _wanted((row,), detections, style):
            continue
        track_id = _track_id((row,), detections)
        text = chip_text(detections.labels[row], int(detections.class_ids[row]), score, style, track_id)
        chips = style.unscored == "chips"
        boxes.append((score, detections.xyxy[row].astype(np.float64), OTHER, text if chips else None,
                      short_chip_text(score, style, track_id) if chips else None, track_id))
    boxes.sort(key=lambda b: -b[0])
    if style.max_boxes is not None:
        boxes = boxes[: style.max_boxes]
    unfound = np.flatnonzero(~frame.labels_found(style.threshold))
    area = box_area(labels.xyxy[gt[unfound]])
    missed = [int(g) for _, g in sorted(zip(area, unfound, strict=True), key=lambda p: -p[0])]
    xyxy = [b[1] for b in boxes] + [labels.xyxy[gt[g]].astype(np.float64) for g in missed]
    states = [b[2] for b in boxes] + [MISSED] * len(missed)
    texts = [b[3] for b in boxes] + [f"MISS {WaymoType(int(labels.types[gt[g]])).name}" for g in missed]
    shorts = [b[4] for b in boxes] + [None] * len(missed)
    left_out = sorted({int(t) for t in labels.types[~label_kept]})
    judged = Judged(np.asarray(xyxy, np.float64).reshape(-1, 4), tuple(states), tuple(texts), tuple(left_out),
                    shorts=tuple(shorts))
    if detections.track_ids is None:
        return judged
    ids = [b[5] for b in boxes] + [None] * len(missed)
    drawn_trails, _ = (trails or NO_TRAILS).of(ids, [COLORS[s] for s in states])
    return dataclasses.replace(judged, track_ids=tuple(ids), trails=drawn_trails)


def draw_errors(canvas: np.ndarray, judged: Judged, *, line_width: int | None = None) -> PlacedChips:
    """The judged boxes and a legend, drawn on `canvas` (uint8 `(H, W, 3)`) in place; returns the
    chips drawn. A missed label's chip is drawn only where the box is large enough to carry it (far
    objects: the dotted box alone)."""
    height, width = canvas.shape[:2]
    lw = line_width or scaled_line_width(width, height)
    widths = [max(1, lw // 2) if s == OTHER else lw for s in judged.states]
    legend = judged_legend(judged)
    reserved = error_legend_rect(width, height, legend)
    # Missed labels under the detections: drawn first, listed last (draw_boxes puts the first on top).
    ids = judged.track_ids if judged.track_ids is not None else (None,) * len(judged.states)
    trail_colors = {i: COLORS[s] for i, s in zip(ids, judged.states, strict=True) if i is not None and i in judged.trails}
    placed = draw_boxes(canvas, judged.xyxy, judged.chip_texts(), [COLORS[s] for s in judged.states], line_width=lw,
                        lines=[LINES[s] for s in judged.states], widths=widths,
                        optional=[s == MISSED for s in judged.states], reserved=[reserved] if reserved is not None else [],
                        trails=(judged.trails, trail_colors) if judged.trails else None)
    paint_error_legend(canvas, [OTHER] if OTHER in judged.states else [], judged.left_out, tracked=judged.tracked)
    return placed


# A legend row: the state whose line sample it shows (None: a chip alone), and its words.
LegendEntry = tuple[str | None, str]


def error_legend(extra: list[str], left_out: tuple[int, ...], *, tracked: bool = False) -> tuple[LegendEntry, ...]:
    """The rows of a frame's legend: the states, `extra` ones (OTHER when drawn), the label types
    left out, if any, and the track ids' line when the segment is tracked."""
    entries: list[LegendEntry] = [(s, LEGEND[s]) for s in (HIT, FALSE_ALARM, MISSED, *extra)]
    if left_out:
        entries.append((None, f"not drawn: {', '.join(WaymoType(t).name for t in left_out)} labels (model has no such class)"))
    if tracked:
        entries.append((None, TRACK_LEGEND))
    return tuple(entries)


def judged_legend(judged: Judged) -> tuple[LegendEntry, ...]:
    """The rows of the legend `draw_errors` paints for `judged`."""
    return error_legend([OTHER] if OTHER in judged.states else [], judged.left_out, tracked=judged.tracked)


def paint_error_legend(canvas: np.ndarray, extra: list[str], left_out: tuple[int, ...], *, tracked: bool = False) -> None:
    """The states (a line sample and a chip each) stacked in the top-right corner, sized to fit
    within half the image's width; then the label types left out, if any, and the track ids'
    line when the segment is tracked."""
    height, width = canvas.shape[:2]
    entries = error_legend(extra, left_out, tracked=tracked)
    size = _error_legend_size(width, height, entries)
    if size is None:
        return  # an image too small for any legend: the boxes alone
    step = chip_height(size)
    for row, (state, text) in enumerate(entries):
        right = width - chip_width(text, size)
        paint_chip_at(canvas, (right, row * step), text, LEGEND_FILL, size)
        if state is not None and right - 2 * step >= 0:
            _paint_sample(canvas, state, right - 2 * step, row * step, step)


def error_legend_rect(width: int, height: int, entries: tuple[LegendEntry, ...]) -> Rect | None:
    """Where `paint_error_legend` paints `entries` (None: nowhere, the image is too small)."""
    size = _error_legend_size(width, height, entries)
    if size is None:
        return None
    block_w, block_h = legend_size(entries, size)
    return max(0, width - block_w), 0, width, block_h


def _error_legend_size(width: int, height: int, entries: tuple[LegendEntry, ...]) -> int | None:
    """The legend's text size: the chips' (~10 px in the 640-wide GIF), smaller where half the
    image's width is too narrow for it; None when the image is too small for any legend."""
    size = legend_font_size(width, height)
    while size > 8 and max(chip_width(text, size) + 2 * chip_height(size) for _, text in entries) > width // 2:
        size -= 1
    return None if chip_height(size) * len(entries) > height else size


def legend_size(entries: tuple[LegendEntry, ...], size: int) -> tuple[int, int]:
    """The width and height `paint_legend_at` takes for `entries` at text `size`."""
    step = chip_height(size)
    return max((2 * step + chip_width(text, size) for _, text in entries), default=0), step * len(entries)


def paint_legend_at(canvas: np.ndarray, entries: tuple[LegendEntry, ...], size: int, origin: tuple[int, int]) -> None:
    """`entries` as rows of a line sample and a chip, left-aligned from `origin` (the top-left
    corner), on `canvas` in place (the mosaic's one legend); rows that do not fit are left out."""
    height, width = canvas.shape[:2]
    step = chip_height(size)
    x, y = origin
    for row, (state, text) in enumerate(entries):
        top = y + row * step
        if top < 0 or top + step > height or x < 0 or x + 2 * step + chip_width(text, size) > width:
            continue
        paint_chip_at(canvas, (x + 2 * step, top), text, LEGEND_FILL, size)
        if state is not None:
            _paint_sample(canvas, state, x, top, step)


def _paint_sample(canvas: np.ndarray, state: str, left: int, top: int, step: int) -> None:
    """A state's line sample, `2 * step` wide and `step` tall, on a dark ground."""
    lw = max(1, round(step / 8))
    right, bottom = left + 2 * step, top + step
    canvas[top:bottom, left:right] = (20, 20, 20)
    paint_outline(canvas, (left + lw, top + lw, right - lw - 1, bottom - lw - 1), COLORS[state], lw, LINES[state])


def _track_id(rows: tuple[int, ...], detections: Detections) -> int | None:
    """A drawn box's track id: its first tracked row's (a rider and its bicycle: the rider's)."""
    ids = detections.track_ids
    if ids is None:
        return None
    return next((int(ids[r]) for r in rows if ids[r] >= 0), None)


def _wanted(rows: tuple[int, ...], detections: Detections, style: DrawStyle) -> bool:
    return style.classes is None or any(int(detections.class_ids[r]) in style.classes for r in rows)


def _name(rows: tuple[int, ...], detections: Detections, waymo_type: int) -> str:
    """The model's class name; a paired rider is named for what it became."""
    if len(rows) > 1:
        return "rider" if waymo_type == WaymoType.CYCLIST else WaymoType(waymo_type).name.lower()
    return detections.labels[rows[0]]


def boxes_drawn(detections: Detections, style: DrawStyle, rules: ErrorRules | None = None,
                labels: Labels | None = None) -> int:
    """How many detection boxes one image's drawing shows: what `draw_detections` draws (at or above
    the threshold, of the style's classes, at most `max_boxes`), or with `rules` and `labels` what
    `judge` keeps (a paired rider and its bicycle one CYCLIST box; missed labels are labels, not
    counted). The one count of "boxes drawn" that manifests, pages and the run table record."""
    if rules is None or labels is None:
        return len(selected_rows(detections, style))
    return sum(1 for state in judge(detections, labels, rules, style).states if state != MISSED)
