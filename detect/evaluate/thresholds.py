"""Threshold help: precision, recall and F1 at every score a type's detections have, the
threshold with the best F1, and score histograms of hits and false alarms.

A detection at or above a threshold `s` is drawn; COCO matches in score order, so the detections
at or above `s` match exactly as they would alone, and one pass over the detections sorted by
score gives P, R and F1 at every threshold at once (precision = hits / detections kept, recall =
hits / labels). The F1-best threshold is the score of the last detection kept where F1 peaks (the
highest such score on a tie: fewer boxes for the same F1). What a user types must keep exactly
those boxes: `suggested` is the shortest decimal at or below that score and above the next lower
score.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

GRID = np.round(np.linspace(0.0, 1.0, 101), 2)  # the curves, every 0.01
BINS = np.round(np.linspace(0.0, 1.0, 21), 2)  # the histograms, every 0.05


@dataclasses.dataclass(frozen=True)
class Best:
    """The F1-best operating point."""

    score: float  # the lowest score kept
    suggested: str  # what to pass as --threshold to keep exactly those boxes
    precision: float
    recall: float
    f1: float
    hits: int
    false_alarms: int


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One type's P/R/F1 against the threshold (on `GRID`), its F1-best point, and histograms."""

    labels: int
    thresholds: list[float]
    precision: list[float | None]  # None where nothing is kept
    recall: list[float | None]
    f1: list[float | None]
    best: Best | None  # None: no hit at any threshold
    hit_histogram: list[int]  # per bin of `BINS`
    false_alarm_histogram: list[int]


def sweep(scores: np.ndarray, hits: np.ndarray, labels: int) -> Sweep:
    """From the counted detections of one type (their scores and whether each matched a label)
    and the number of labels."""
    scores = np.asarray(scores, np.float64).reshape(-1)
    hits = np.asarray(hits, bool).reshape(-1)
    order = np.argsort(-scores, kind="stable")
    scores, hits = scores[order], hits[order]
    tp = np.cumsum(hits)
    kept = np.arange(1, len(scores) + 1)
    precision, recall, f1 = _prf(tp, kept, labels)
    best = None
    # Only the last of equal scores is a threshold a user can set (all of them are kept, or none).
    last = np.r_[scores[1:] != scores[:-1], True] if len(scores) else np.zeros(0, bool)
    candidates = np.flatnonzero(last & (tp > 0))
    if len(candidates):
        peak = candidates[np.argmax(f1[candidates])]  # argmax: the first, the highest score, on a tie
        below = float(scores[peak + 1]) if peak + 1 < len(scores) else None
        best = Best(float(scores[peak]), suggest(float(scores[peak]), below), float(precision[peak]),
                    float(recall[peak]), float(f1[peak]), int(tp[peak]), int(kept[peak] - tp[peak]))
    at_grid = np.searchsorted(-scores, -GRID, side="right")  # detections with score >= each grid value
    grid_tp = np.r_[0, tp][at_grid]
    grid_p, grid_r, grid_f1 = _prf(grid_tp, at_grid, labels)
    return Sweep(labels, [float(g) for g in GRID],
                 [float(v) if n else None for v, n in zip(grid_p, at_grid, strict=True)],
                 [float(v) if labels else None for v in grid_r],
                 [float(v) if n and labels else None for v, n in zip(grid_f1, at_grid, strict=True)],
                 best, _histogram(scores[hits]), _histogram(scores[~hits]))


def suggest(score: float, below: float | None) -> str:
    """The shortest decimal `v` with below < v <= score (so `--threshold v` keeps exactly the
    detections scoring `score` or more)."""
    for digits in range(2, 8):
        value = math.floor(score * 10**digits) / 10**digits
        if below is None or value > below:
            return f"{value:.{digits}f}"
    return repr(score)


def _prf(tp: np.ndarray, kept: np.ndarray, labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tp = np.asarray(tp, np.float64)
    kept = np.asarray(kept, np.float64)
    precision = np.divide(tp, kept, out=np.zeros_like(tp), where=kept > 0)
    recall = tp / labels if labels else np.zeros_like(tp)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(tp), where=total > 0)
    return precision, recall, f1


def _histogram(scores: np.ndarray) -> list[int]:
    counts, _ = np.histogram(np.clip(scores, 0.0, 1.0), bins=BINS)
    return [int(c) for c in counts]
