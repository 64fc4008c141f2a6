"""One camera image as tracking evaluation sees it, and its conversion to TrackEval's per-timestep input.

Label ids that cannot identify an object are each an object seen once: a null or empty id, and every
repeat of an id already used on the same image (the first box, in input order, keeps the id). Such a
box still counts for detection (a tracked box on it is a hit, not a false alarm) but cannot join a
trajectory. Track ids are our own output: -1 means "not kept" and is left out; a repeated id on one
image is a bug upstream and raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from detect.core.boxes import box_iou
from detect.core.errors import InputError

# HOTA (TrackEval's, and `frame_scores`' per image) holds ~20-40 dense float64 [label ids, track ids]
# matrices a sequence: 2,000,000 pairs (a Waymo camera has hundreds of label ids and up to a few
# thousand track ids) are 0.3-0.6 GB; a sequence with more is not scored.
MAX_ID_PAIRS = 2_000_000


class TooManyIds(InputError):
    """A sequence with more (label id, track id) pairs than its scores can be computed for in bounded memory."""


@dataclasses.dataclass(frozen=True, eq=False)
class FrameTracks:
    """One image of one (segment, camera, Waymo type): labels with their ids, tracked boxes with theirs."""

    label_ids: tuple[str | None, ...]
    label_xyxy: np.ndarray
    track_ids: np.ndarray
    track_xyxy: np.ndarray

    def __post_init__(self) -> None:
        label_xyxy = np.asarray(self.label_xyxy, np.float64).reshape(-1, 4)
        track_xyxy = np.asarray(self.track_xyxy, np.float64).reshape(-1, 4)
        track_ids = np.asarray(self.track_ids, np.int64).reshape(-1)
        if len(self.label_ids) != len(label_xyxy):
            raise ValueError(f"label_ids: expected {len(label_xyxy)} (one per label box), got {len(self.label_ids)}")
        if len(track_ids) != len(track_xyxy):
            raise ValueError(f"track_ids: expected {len(track_xyxy)} (one per tracked box), got {len(track_ids)}")
        kept = track_ids[track_ids >= 0]
        if len(np.unique(kept)) != len(kept):
            raise ValueError(f"track_ids: a track id appears twice on one image: {sorted(kept.tolist())}")
        object.__setattr__(self, "label_ids", tuple(self.label_ids))
        object.__setattr__(self, "label_xyxy", label_xyxy)
        object.__setattr__(self, "track_xyxy", track_xyxy)
        object.__setattr__(self, "track_ids", track_ids)


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceInput:
    """A sequence in TrackEval's terms (`data` for `eval_sequence`), with the dense ids' origins."""

    data: dict[str, object]
    label_keys: list[object]  # dense label id -> the label's id (or a singleton marker)
    kept: list[np.ndarray]  # per frame: the rows of track_xyxy handed to TrackEval
    singletons: int  # label boxes whose id could not identify them
    tracks: int  # track ids
    gt_ids: list[np.ndarray]  # per image: its dense label ids (`data`'s, typed)
    tracker_ids: list[np.ndarray]  # per image: its dense track ids
    similarity: list[np.ndarray]  # per image: [labels, tracks] IoU

    def check_id_pairs(self) -> None:
        """Raise `TooManyIds` when the sequence has more than `MAX_ID_PAIRS` (label id, track id) pairs."""
        labels = len(self.label_keys)
        if labels * self.tracks > MAX_ID_PAIRS:
            raise TooManyIds(f"{labels:,} label ids x {self.tracks:,} track ids, more than the {MAX_ID_PAIRS:,} id pairs "
                             f"HOTA's dense matrices are computed for")


def to_trackeval(frames: Sequence[FrameTracks]) -> SequenceInput:
    """Frames in time order -> TrackEval's data: dense ids per timestep and IoU similarity matrices."""
    label_dense: dict[object, int] = {}
    track_dense: dict[int, int] = {}
    gt_ids, tracker_ids, similarity, kept = [], [], [], []
    singletons = 0
    for t, frame in enumerate(frames):
        seen: set[str] = set()
        dense = []
        for i, object_id in enumerate(frame.label_ids):
            key: object = object_id
            if not object_id or object_id in seen:
                key, singletons = ("singleton", t, i), singletons + 1
            else:
                seen.add(object_id)
            dense.append(label_dense.setdefault(key, len(label_dense)))
        rows = np.flatnonzero(frame.track_ids >= 0)
        gt_ids.append(np.asarray(dense, np.int64))
        dense_tracks = [track_dense.setdefault(int(i), len(track_dense)) for i in frame.track_ids[rows]]
        tracker_ids.append(np.asarray(dense_tracks, np.int64))
        # [labels, tracks]: with no crowd boxes COCO's IoU is symmetric, so labels may stand in the first place
        similarity.append(box_iou(frame.label_xyxy, frame.track_xyxy[rows]))
        kept.append(rows)
    data: dict[str, object] = {
        "num_timesteps": len(frames),
        "num_gt_ids": len(label_dense),
        "num_tracker_ids": len(track_dense),
        "num_gt_dets": int(sum(len(g) for g in gt_ids)),
        "num_tracker_dets": int(sum(len(r) for r in tracker_ids)),
        "gt_ids": gt_ids,
        "tracker_ids": tracker_ids,
        "similarity_scores": similarity,
    }
    return SequenceInput(data, list(label_dense), kept, singletons, len(track_dense), gt_ids, tracker_ids, similarity)
