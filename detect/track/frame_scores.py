"""What each image of a sequence adds to its HOTA, MOTA and IDF1, so that the scores of any multiset of
images (a bootstrap resample) are weighted sums.

TrackEval decides some things on the whole sequence: HOTA's global alignment (which pairs the
per-image Hungarian prefers) and each (label, track) pair's association score; Identity's one-to-one
assignment of label ids to track ids; CLEAR's matching carries over from image to image. These are
kept as decided on the whole sequence (here, as in `detect.track.track_flags`, replayed step by step
from TrackEval 1.3.0's `eval_sequence`); an image then adds counts: label and tracked boxes, HOTA's
matches and their association scores per alpha, CLEAR's matches and ID switches, Identity's true
positives (`detect.track.identity`'s assignment). Summed over every image once, the counts give
TrackEval's pooled values exactly (the tests hold it to the library, to 1e-9); with bootstrap weights
they give the resample's. A sequence with more id pairs than HOTA's dense matrices take in bounded
memory raises `TooManyIds`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.track.assignment import linear_sum_assignment
from detect.track.flags import track_flags
from detect.track.identity import identity_match
from detect.track.trackeval_input import FrameTracks, to_trackeval

_EPS = np.finfo("float").eps
ALPHAS = np.arange(0.05, 0.99, 0.05)  # TrackEval's HOTA `array_labels`


@dataclasses.dataclass(frozen=True, eq=False)
class FrameCounts:
    """Per image (rows) of one or more sequences: what it adds to the pooled scores."""

    labels: np.ndarray  # [T] label boxes
    tracked: np.ndarray  # [T] tracked boxes
    hota_tp: np.ndarray  # [T, alphas] HOTA's matches
    hota_assoc: np.ndarray  # [T, alphas] the sum of those matches' association scores
    clear_tp: np.ndarray  # [T] CLEAR's matches at the protocol's IoU
    id_switches: np.ndarray  # [T]
    idtp: np.ndarray  # [T] Identity's true positives

    def __len__(self) -> int:
        return len(self.labels)

    @classmethod
    def concat(cls, parts: Sequence[FrameCounts]) -> FrameCounts:
        fields = [f.name for f in dataclasses.fields(cls)]
        empty = frame_counts([], 0.5)
        return cls(**{f: np.concatenate([getattr(empty, f), *(getattr(p, f) for p in parts)]) for f in fields})


def frame_counts(frames: Sequence[FrameTracks], iou: float) -> FrameCounts:
    """One sequence's images in time order; `iou`: the protocol's, for MOTA and IDF1. `TooManyIds`
    when its HOTA matrices would not be bounded."""
    seq = to_trackeval(frames)
    seq.check_id_pairs()
    gt_ids, tr_ids, sims = seq.gt_ids, seq.tracker_ids, seq.similarity
    n_gt, n_tr = len(seq.label_keys), seq.tracks
    steps = len(frames)
    labels = np.array([len(g) for g in gt_ids], np.float64)
    tracked = np.array([len(r) for r in tr_ids], np.float64)
    flags = track_flags(frames, iou)
    matched = ~np.isnan(flags.iou)
    clear_tp = np.bincount(flags.frame[matched], minlength=steps).astype(np.float64)
    switches = np.bincount(flags.frame[flags.switch], minlength=steps).astype(np.float64)
    hota_tp, hota_assoc = _hota(gt_ids, tr_ids, sims, n_gt, n_tr)
    assigned = identity_match(gt_ids, tr_ids, sims, n_gt, iou).assigned
    idtp = np.zeros(steps)
    for t, (g, r, sim) in enumerate(zip(gt_ids, tr_ids, sims, strict=True)):
        mg, mr = np.nonzero(sim >= iou)
        idtp[t] = np.count_nonzero(assigned[g[mg]] == r[mr])
    return FrameCounts(labels, tracked, hota_tp, hota_assoc, clear_tp, switches, idtp)


def weighted_scores(counts: FrameCounts, weights: np.ndarray | None = None) -> tuple[float, float, float]:
    """(HOTA, MOTA, IDF1) over the images taken `weights` times each (all once for None)."""
    w = np.ones(len(counts)) if weights is None else np.asarray(weights, np.float64)
    labels, tracked = float(w @ counts.labels), float(w @ counts.tracked)
    tp, assoc = w @ counts.hota_tp, w @ counts.hota_assoc
    det_a = tp / np.maximum(1.0, labels + tracked - tp)
    ass_a = assoc / np.maximum(1.0, tp)
    hota = float(np.mean(np.sqrt(det_a * ass_a)))
    clear_tp, switches = float(w @ counts.clear_tp), float(w @ counts.id_switches)
    mota = (clear_tp - (tracked - clear_tp) - switches) / max(1.0, labels)
    idf1 = float(w @ counts.idtp) / max(1.0, 0.5 * (labels + tracked))
    return hota, mota, idf1


def _hota(gt_ids: list[np.ndarray], tr_ids: list[np.ndarray], sims: list[np.ndarray], n_gt: int,
          n_tr: int) -> tuple[np.ndarray, np.ndarray]:
    """HOTA's matches per image and alpha, and the sum of their pairs' association scores."""
    steps = len(gt_ids)
    tp = np.zeros((steps, len(ALPHAS)))
    assoc = np.zeros((steps, len(ALPHAS)))
    if n_gt == 0 or n_tr == 0:
        return tp, assoc
    potential = np.zeros((n_gt, n_tr))
    gt_count, tr_count = np.zeros((n_gt, 1)), np.zeros((1, n_tr))
    for g, r, sim in zip(gt_ids, tr_ids, sims, strict=True):
        denominator = sim.sum(0)[np.newaxis, :] + sim.sum(1)[:, np.newaxis] - sim
        sim_iou = np.zeros_like(sim)
        mask = denominator > _EPS
        sim_iou[mask] = sim[mask] / denominator[mask]
        potential[g[:, np.newaxis], r[np.newaxis, :]] += sim_iou
        gt_count[g] += 1
        tr_count[0, r] += 1
    alignment = potential / (gt_count + tr_count - potential)
    counts = np.zeros((len(ALPHAS), n_gt, n_tr))
    pairs: list[list[tuple[np.ndarray, np.ndarray]]] = []
    for t, (g, r, sim) in enumerate(zip(gt_ids, tr_ids, sims, strict=True)):
        per_alpha: list[tuple[np.ndarray, np.ndarray]] = []
        if len(g) and len(r):
            rows, cols = linear_sum_assignment(-(alignment[g[:, np.newaxis], r[np.newaxis, :]] * sim))
            for a, alpha in enumerate(ALPHAS):
                ok = sim[rows, cols] >= alpha - _EPS
                pair = (g[rows[ok]], r[cols[ok]])
                tp[t, a] = len(pair[0])
                counts[a][pair] += 1
                per_alpha.append(pair)
        pairs.append(per_alpha)
    ass = counts / np.maximum(1, gt_count[np.newaxis] + tr_count[np.newaxis] - counts)
    for t, per_alpha in enumerate(pairs):
        for a, pair in enumerate(per_alpha):
            assoc[t, a] = ass[a][pair].sum()
    return tp, assoc
