"""Per tracked box: the label it stands for, and whether it is an ID switch or a fragmentation.

The same matching as TrackEval's CLEAR metric (per image, Hungarian on IoU at the protocol's
threshold, with a 1000 bonus for keeping last image's label-track pairs), replayed box by box so
that a table can say which boxes made the counts: the switch flags sum to CLEAR's IDSW and the
fragment flags to its Frag (the tests hold it to the library). As in TrackEval, an image without
labels or without tracked boxes does not reset "tracked on the previous image".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.track.assignment import linear_sum_assignment
from detect.track.trackeval_input import TrackEvalFrame, to_trackeval

_EPS = np.finfo("float").eps


@dataclasses.dataclass(frozen=True, eq=False)
class TrackFlags:
    """Aligned with the frames' tracked boxes, concatenated in frame order (boxes with track id -1
    included, never matched): the frame's index, the track id, the matched label's id (None: no
    label, or a label whose id could not identify it), the IoU with the label it matched, the two
    flags, and a switch's previous track id."""

    frame: np.ndarray
    track_id: np.ndarray
    label_id: np.ndarray  # object: str | None
    iou: np.ndarray  # with the matched label; NaN when none
    switch: np.ndarray
    fragment: np.ndarray
    previous: np.ndarray  # int64: on a switch, the track id its label had before; -1 elsewhere


def track_flags(frames: Sequence[TrackEvalFrame], iou: float) -> TrackFlags:
    """Which label each tracked box matched (CLEAR's rule at `iou`), and its switch / fragment flags."""
    seq = to_trackeval(frames)
    data = seq.data
    n_gt = int(data["num_gt_ids"])  # type: ignore[call-overload]
    track_ids = _track_ids(frames)  # dense id -> ours
    prev_track = np.full(n_gt, np.nan)
    prev_step_track = np.full(n_gt, np.nan)
    frag_count = np.zeros(n_gt, np.int64)
    out_frame, out_track, out_label, out_iou, out_switch, out_fragment, out_previous = [], [], [], [], [], [], []
    for t, frame in enumerate(frames):
        n = len(frame.track_ids)
        label, overlap = np.full(n, None, object), np.full(n, np.nan)
        switch, fragment, previous = np.zeros(n, bool), np.zeros(n, bool), np.full(n, -1, np.int64)
        gt_ids, tr_ids = data["gt_ids"][t], data["tracker_ids"][t]  # type: ignore[index]
        rows = seq.kept[t]
        if len(gt_ids) and len(tr_ids):
            similarity = data["similarity_scores"][t]  # type: ignore[index]
            score = 1000 * (tr_ids[None, :] == prev_step_track[gt_ids[:, None]]) + similarity
            score[similarity < iou - _EPS] = 0
            r, c = linear_sum_assignment(-score)
            ok = score[r, c] > _EPS
            r, c = r[ok], c[ok]
            gts, trs = gt_ids[r], tr_ids[c]
            overlap[rows[c]] = similarity[r, c]
            before = prev_track[gts]
            switched = ~np.isnan(before) & (trs != before)
            switch[rows[c]] = switched
            previous[rows[c[switched]]] = [track_ids[int(b)] for b in before[switched]]
            was_tracked = ~np.isnan(prev_step_track[gts])
            fragment[rows[c]] = ~was_tracked & (frag_count[gts] > 0)
            frag_count[gts[~was_tracked]] += 1
            prev_track[gts] = trs
            prev_step_track[:] = np.nan
            prev_step_track[gts] = trs
            keys = [seq.label_keys[g] for g in gts]
            label[rows[c]] = [k if isinstance(k, str) else None for k in keys]
        out_frame.append(np.full(n, t, np.int64))
        out_track.append(frame.track_ids)
        out_label.append(label)
        out_iou.append(overlap)
        out_switch.append(switch)
        out_fragment.append(fragment)
        out_previous.append(previous)
    cat = np.concatenate
    return TrackFlags(cat([np.zeros(0, np.int64), *out_frame]), cat([np.zeros(0, np.int64), *out_track]),
                      cat([np.zeros(0, object), *out_label]), cat([np.zeros(0), *out_iou]),
                      cat([np.zeros(0, bool), *out_switch]),
                      cat([np.zeros(0, bool), *out_fragment]), cat([np.zeros(0, np.int64), *out_previous]))


def _track_ids(frames: Sequence[TrackEvalFrame]) -> list[int]:
    """Our track ids in the order `to_trackeval` numbers them densely (first seen, first numbered)."""
    seen: dict[int, None] = {}
    for frame in frames:
        seen.update((int(i), None) for i in frame.track_ids if i >= 0)
    return list(seen)
