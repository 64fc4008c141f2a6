"""The text of a box's chip: its track id, class and score, long and short, as the style shows them."""

from __future__ import annotations

from typing import Protocol


class ShownParts(Protocol):
    """What a drawing style says a chip shows (`detect.render.draw.DrawStyle`)."""

    @property
    def show_labels(self) -> bool: ...

    @property
    def show_scores(self) -> bool: ...


def chip_text(label: str, class_id: int, score: float, style: ShownParts, track_id: int | None = None) -> str | None:
    """`car 0.87`, `car`, `0.87` or None, as the style says; a tracked box's id first: `#17 car 0.87`."""
    parts = [] if track_id is None or track_id < 0 else [f"#{track_id}"]
    if style.show_labels:
        parts.append(label or str(class_id))
    if style.show_scores:
        parts.append(f"{score:.2f}")
    return " ".join(parts) or None


def short_chip_text(score: float, style: ShownParts, track_id: int | None = None, label: str | None = None) -> str | None:
    """The chip of a box too small for the long one: its id and score, `#17 .87` (the errors
    drawing: its color says what the evaluation made of it); with `label`, the class and score,
    `car .87` (the detections drawing: no id). None when the style shows nothing of it."""
    parts = [] if track_id is None or track_id < 0 or label is not None else [f"#{track_id}"]
    if label is not None and style.show_labels:
        parts.append(label)
    if style.show_scores:
        text = f"{score:.2f}"
        parts.append(text[1:] if text.startswith("0") else text)
    return " ".join(parts) or None


def chip_texts(*texts: str | None) -> tuple[str, ...]:
    """A box's chip texts, longest first, for `draw_boxes` (none: no chip)."""
    return tuple(t for t in dict.fromkeys(texts) if t)
