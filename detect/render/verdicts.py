"""A frame's errors made visible: hits, false alarms and missed labels drawn apart.

With Waymo's labels, each drawn box says what the evaluation made of it. The detections become
Waymo types as `detect eval` maps them (`ClassMap.to_waymo`: a rider and its bicycle one CYCLIST)
and are matched to the labels by `detect.judge` (COCO's rule, the protocol's IoU; every label
counts, as at LEVEL_2), so the picture and `matches.parquet` name the same objects:

- hit: a detection at or above the threshold that matched a label: solid, sky blue;
- false alarm: one that matched none: dashed, vermillion, its chip starts with "FA";
- missed label: a label no detection at or above the threshold matched: dotted, yellow;
- other classes (the model's classes no Waymo type covers, e.g. traffic light): thin, grey.

Colors from Okabe and Ito's palette (told apart with each common color-vision deficiency), each
state with its own line style too, so grey-scale prints and every reader can tell them apart.
Labels of types the model cannot output are left out (the legend says which).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from detect.core.boxes import box_area
from detect.core.records import Detections, Labels, WaymoType
from detect.judge import FALSE_ALARM, HIT, MISSED, OTHER, ErrorRules
from detect.render.chips import RGB, chip_height, chip_width, paint_chip
from detect.render.draw import DrawStyle, chip_text, draw_boxes, paint_outline, scaled_font_size, scaled_line_width

COLORS: dict[str, RGB] = {HIT: (86, 180, 233), FALSE_ALARM: (213, 94, 0), MISSED: (240, 228, 66), OTHER: (150, 150, 150)}
LINES = {HIT: "solid", FALSE_ALARM: "dashed", MISSED: "dotted", OTHER: "solid"}
LEGEND = {HIT: "hit", FALSE_ALARM: "FA: false alarm", MISSED: "missed label", OTHER: "other class, not evaluated"}


@dataclasses.dataclass(frozen=True, eq=False)
class Judged:
    """One frame's verdicts, in drawing terms: boxes (pixel xyxy), their state and chip text."""

    xyxy: np.ndarray
    states: tuple[str, ...]
    texts: tuple[str | None, ...]
    left_out: tuple[int, ...]  # label types the model cannot output (not drawn)

    def count(self, state: str) -> int:
        return sum(1 for s in self.states if s == state)


def judge(detections: Detections, labels: Labels, rules: ErrorRules, style: DrawStyle) -> Judged:
    """Every box to draw on one frame with its state, best-scoring detections first, then the
    missed labels (largest first)."""
    frame = rules.match(detections, labels)
    mapped, dt, gt = frame.boxes, frame.detections, frame.labels
    label_kept = np.zeros(len(labels), bool)
    label_kept[gt] = True
    boxes: list[tuple[float, np.ndarray, str, str | None]] = []  # (score, box, state, text)
    for j, i in enumerate(dt):
        score = float(mapped.scores[i])
        if score < style.threshold or not _wanted(mapped.rows[i], detections, style):
            continue
        state = HIT if frame.hits[j] else FALSE_ALARM
        name = _name(mapped.rows[i], detections, int(mapped.types[i]))
        text = chip_text(name, int(mapped.class_ids[i]), score, style)
        boxes.append((score, mapped.xyxy[i], state, f"FA {text}" if state == FALSE_ALARM and text else text))
    for row in frame.unmapped_rows(len(detections)) if style.unscored != "none" else ():
        score = float(detections.scores[row])
        if score < style.threshold or not _wanted((row,), detections, style):
            continue
        text = chip_text(detections.labels[row], int(detections.class_ids[row]), score, style)
        boxes.append((score, detections.xyxy[row].astype(np.float64), OTHER, text if style.unscored == "chips" else None))
    boxes.sort(key=lambda b: -b[0])
    if style.max_boxes is not None:
        boxes = boxes[: style.max_boxes]
    unfound = np.flatnonzero(~frame.labels_found(style.threshold))
    area = box_area(labels.xyxy[gt[unfound]])
    missed = [int(g) for _, g in sorted(zip(area, unfound, strict=True), key=lambda p: -p[0])]
    xyxy = [b[1] for b in boxes] + [labels.xyxy[gt[g]].astype(np.float64) for g in missed]
    states = [b[2] for b in boxes] + [MISSED] * len(missed)
    texts = [b[3] for b in boxes] + [f"MISS {WaymoType(int(labels.types[gt[g]])).name}" for g in missed]
    left_out = sorted({int(t) for t in labels.types[~label_kept]})
    return Judged(np.asarray(xyxy, np.float64).reshape(-1, 4), tuple(states), tuple(texts), tuple(left_out))


def draw_errors(canvas: np.ndarray, judged: Judged, *, line_width: int | None = None) -> None:
    """The judged boxes and a legend, drawn on `canvas` (uint8 `(H, W, 3)`) in place. A missed
    label's chip is drawn only where the box is tall enough to carry it (far objects: the box alone)."""
    height, width = canvas.shape[:2]
    size = scaled_font_size(width, height)
    lw = line_width or scaled_line_width(width, height)
    texts = [t if s != MISSED or (b[3] - b[1]) >= 2 * chip_height(size) else None
             for t, s, b in zip(judged.texts, judged.states, judged.xyxy, strict=True)]
    widths = [max(1, lw // 2) if s == OTHER else lw for s in judged.states]
    # Missed labels under the detections: drawn first, listed last (draw_boxes puts the first on top).
    draw_boxes(canvas, judged.xyxy, texts, [COLORS[s] for s in judged.states], line_width=lw,
               lines=[LINES[s] for s in judged.states], widths=widths)
    paint_error_legend(canvas, [OTHER] if OTHER in judged.states else [], judged.left_out)


def paint_error_legend(canvas: np.ndarray, extra: list[str], left_out: tuple[int, ...]) -> None:
    """The states (a line sample and a chip each) stacked in the top-right corner, sized to fit
    within half the image's width; then the label types left out, if any."""
    height, width = canvas.shape[:2]
    entries: list[tuple[str | None, str]] = [(s, LEGEND[s]) for s in (HIT, FALSE_ALARM, MISSED, *extra)]
    if left_out:
        entries.append((None, f"not drawn: {', '.join(WaymoType(t).name for t in left_out)} labels (model has no such class)"))
    size = scaled_font_size(width, height)  # the chips' size: ~11 px in the 640-wide GIF and mosaic tiles
    while size > 8 and max(chip_width(text, size) + 2 * chip_height(size) for _, text in entries) > width // 2:
        size -= 1
    step = chip_height(size)
    if step * len(entries) > height:
        return  # an image too small for any legend: the boxes alone
    lw = max(1, round(step / 8))
    for row, (state, text) in enumerate(entries):
        top, bottom = row * step, (row + 1) * step
        right = width - chip_width(text, size)
        color = COLORS[state] if state else (40, 40, 40)
        paint_chip(canvas, (width, bottom, width, bottom), text, color, size)
        if state is not None and right - 2 * step >= 0:
            canvas[top:bottom, right - 2 * step:right] = (20, 20, 20)
            paint_outline(canvas, (right - 2 * step + lw, top + lw, right - lw - 1, bottom - lw - 1), COLORS[state], lw,
                          LINES[state])


def _wanted(rows: tuple[int, ...], detections: Detections, style: DrawStyle) -> bool:
    return style.classes is None or any(int(detections.class_ids[r]) in style.classes for r in rows)


def _name(rows: tuple[int, ...], detections: Detections, waymo_type: int) -> str:
    """The model's class name; a paired rider is named for what it became."""
    if len(rows) > 1:
        return "rider" if waymo_type == WaymoType.CYCLIST else WaymoType(waymo_type).name.lower()
    return detections.labels[rows[0]]
