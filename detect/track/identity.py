"""Identity (IDF1): each label id given at most one track id, the assignment that keeps the most
boxes, found on the pairs of ids whose boxes overlap; memory grows with those pairs, not with the ids.

TrackEval 1.3.0's `Identity.eval_sequence` builds two dense (label ids + track ids)^2 float64 cost
matrices and runs the Hungarian algorithm on their sum: 4,800 ids take 0.7 GB, 12,000 ids > 3 GB,
100,000 ids (a label converter that writes one id per box) ~240 GB. Its optimum is a maximum-weight
matching: an unmatched id costs its boxes, a matched pair its boxes less twice the images where the
two overlap at the IoU threshold, so only pairs that overlap somewhere can gain and the best total
is found on those alone. Here, as a sparse assignment (scipy's LAPJVsp) over those pairs, each
label id given a private "unmatched" partner so that every label id has one. IDTP is the matched
pairs' overlaps (the optimum's value is unique, whichever matching reaches it), IDFN and IDFP the
boxes of each side left over: TrackEval's numbers exactly (the tests hold it to the library).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class IdentityMatch:
    """The assignment of one sequence (dense ids, as `to_trackeval` numbers them) and its counts."""

    assigned: np.ndarray  # per label id: its track id, -1 for none
    idtp: int  # boxes of a label and of the track assigned to its id that overlap
    label_boxes: int
    track_boxes: int

    def result(self) -> dict[str, int]:
        """TrackEval's integer fields of `Identity` (its `_compute_final_fields` adds IDF1, IDR, IDP)."""
        return {"IDTP": self.idtp, "IDFN": self.label_boxes - self.idtp, "IDFP": self.track_boxes - self.idtp}


def identity_match(gt_ids: Sequence[np.ndarray], tracker_ids: Sequence[np.ndarray], similarity: Sequence[np.ndarray],
                   n_gt: int, iou: float) -> IdentityMatch:
    """Per image (TrackEval's data): the dense label and track ids and their [labels, tracks]
    similarity; `iou`: what a pair's boxes need to overlap."""
    assigned = np.full(n_gt, -1, np.int64)
    label_boxes = int(sum(len(g) for g in gt_ids))
    track_boxes = int(sum(len(r) for r in tracker_ids))
    overlaps = [(g[mg], r[mr]) for g, r, sim in zip(gt_ids, tracker_ids, similarity, strict=True)
                for mg, mr in [np.nonzero(np.asarray(sim) >= iou)]]
    labels = np.concatenate([np.zeros(0, np.int64), *(np.asarray(g, np.int64) for g, _ in overlaps)])
    tracks = np.concatenate([np.zeros(0, np.int64), *(np.asarray(r, np.int64) for _, r in overlaps)])
    if not len(labels):
        return IdentityMatch(assigned, 0, label_boxes, track_boxes)
    # each (label id, track id) pair once, weighed by the images where their boxes overlap
    pairs, weights = np.unique(np.stack([labels, tracks], axis=1), axis=0, return_counts=True)
    rows, row_of = np.unique(pairs[:, 0], return_inverse=True)
    cols, col_of = np.unique(pairs[:, 1], return_inverse=True)
    chosen_rows, chosen_cols = _max_weight_matching(row_of.reshape(-1), col_of.reshape(-1), weights, len(rows),
                                                    len(cols))
    real = chosen_cols < len(cols)
    assigned[rows[chosen_rows[real]]] = cols[chosen_cols[real]]
    won = {(int(r), int(c)) for r, c in zip(chosen_rows[real], chosen_cols[real], strict=True)}
    idtp = int(sum(int(w) for r, c, w in zip(row_of.reshape(-1), col_of.reshape(-1), weights, strict=True)
                   if (int(r), int(c)) in won))
    return IdentityMatch(assigned, idtp, label_boxes, track_boxes)


def _max_weight_matching(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, n_rows: int,
                         n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns of the matching of greatest total weight over the edges given (weights
    > 0); column `n_cols + i` stands for row i left unmatched."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import min_weight_full_bipartite_matching

    # a cost per edge: top - weight, and top for staying unmatched (all > 0: LAPJVsp reads 0 as no edge);
    # every row is matched once, so the least total cost is the greatest total weight
    top = int(weights.max()) + 1
    costs = np.concatenate([top - weights, np.full(n_rows, top)]).astype(np.float64)
    graph = csr_array((costs, (np.concatenate([rows, np.arange(n_rows)]), np.concatenate([cols, n_cols + np.arange(n_rows)]))),
                      shape=(n_rows, n_cols + n_rows))
    chosen_rows, chosen_cols = min_weight_full_bipartite_matching(graph)
    return np.asarray(chosen_rows, np.int64), np.asarray(chosen_cols, np.int64)
