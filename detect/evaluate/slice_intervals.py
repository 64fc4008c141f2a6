"""A slice's AP50 with its bootstrap interval, by the rule `detect compare` uses (`resample`): the
unit is a block of consecutive frames lasting at least 2 s (frames 0.1 s apart show nearly the same
scene, and resampling them one by one gives intervals far too narrow); a slice gets an interval only
when its images span `MIN_BLOCKS` independent blocks, else it says how many it has.

A resample takes each of the slice's frames as often as its blocks cover it, and its AP50 is COCO's
accumulation (`pooled.precision_at_recalls`) over the detections and labels of the frames taken,
each counted that many times: the library's matching is not redone (the slice's pool holds what it
came to), so the resample of every frame once is the slice's own AP50 exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from detect.core.records import FrameKey, WaymoType
from detect.core.resample import MIN_BLOCKS, BlockBootstrap, FrameIndex, percentile_interval
from detect.evaluate.pooled import Pool, Ranked

REPLICATES = 1000  # as `detect compare`'s default
SEED = 0
CHUNK = 50  # resamples computed at once (a chunk's weights are [CHUNK, detections] floats per type)
ALL = "ALL"


@dataclasses.dataclass(frozen=True)
class Intervals:
    """A slice's independent blocks and, when they are enough, each type's AP50 interval (and ALL's:
    the mean over the types with labels); empty when they are too few."""

    blocks: int
    ap50: Mapping[str, tuple[float, float] | None] = dataclasses.field(default_factory=dict)


class FrameBook:
    """Which frame (segment, timestamp) each COCO image id of a run shows, frames numbered as they come."""

    def __init__(self) -> None:
        self._frame_of: dict[int, int] = {}
        self._numbers: dict[tuple[str, int], int] = {}
        self._frames: list[tuple[str, int]] = []

    def add(self, images: Mapping[int, FrameKey]) -> None:
        """Images by their COCO id."""
        for image_id, key in images.items():
            frame = (key.segment_context_name, key.frame_timestamp_micros)
            number = self._numbers.get(frame)
            if number is None:
                number = self._numbers[frame] = len(self._frames)
                self._frames.append(frame)
            self._frame_of[image_id] = number

    def frames(self, image_ids: Iterable[int]) -> list[tuple[str, int]]:
        return [self._frames[self._frame_of[int(i)]] for i in image_ids]


def ap50_intervals(pool: Pool, area: int, types: Sequence[int], book: FrameBook,
                   replicates: int = REPLICATES, seed: int = SEED) -> Intervals:
    """The AP50 intervals of `pool`'s area range `area` (the range bands; 0: all), per type of `types`."""
    frames = book.frames(pool.image_ids)
    index = FrameIndex.of_frames(frames)
    bootstrap = BlockBootstrap.of(index)
    if bootstrap.blocks < MIN_BLOCKS or not replicates:
        return Intervals(bootstrap.blocks)
    frame_of_rank = np.array([index.frame_number(segment, timestamp) for segment, timestamp in frames], np.int64)
    recalls = np.asarray(pool.recall_thresholds, np.float64)
    curves = [_Curve.of(pool.ranked(k, 0, area), frame_of_rank, len(index)) for k in range(len(types))]
    values = []
    for weights in bootstrap.weight_chunks(replicates, seed, CHUNK):
        aps = np.stack([curve.aps(weights, recalls) for curve in curves], axis=1)  # [replicates, types]
        defined = ~np.isnan(aps)
        with np.errstate(invalid="ignore"):
            mean = np.where(defined.any(axis=1), np.nansum(aps, axis=1) / defined.sum(axis=1), np.nan)
        values.append(np.column_stack([aps, mean]))
    found = [percentile_interval(column) for column in np.concatenate(values).T]
    return Intervals(bootstrap.blocks, dict(zip([WaymoType(t).name for t in types] + [ALL], found, strict=True)))


@dataclasses.dataclass(frozen=True, eq=False)
class _Curve:
    """One type's counted detections in accumulation order, kept as what AP reads of them: the frame
    of each hit, and the false alarms between one hit and the next counted per frame (a sparse
    [hits, frames] matrix). COCO's precision, made monotone from the right and read where each
    recall is first reached, is the same read at the hits only: between hits precision only falls,
    and past the last hit no recall is reached. Its labels: the frame of each image's, and how many."""

    hit_frame: np.ndarray
    misses_before: Any  # scipy.sparse.csr_matrix [hits, frames]: false alarms after the previous hit, up to this one
    label_frame: np.ndarray
    label_count: np.ndarray

    @classmethod
    def of(cls, ranked: Ranked, frame_of_rank: np.ndarray, frames: int) -> _Curve:
        frame = frame_of_rank[ranked.image]
        hits = np.flatnonzero(ranked.hit)
        misses = np.flatnonzero(~ranked.hit)
        misses = misses[misses < (hits[-1] if len(hits) else 0)]
        gap = np.searchsorted(hits, misses)  # the hit each false alarm comes before
        from scipy import sparse  # ~0.5 s: only when an interval is computed

        matrix = sparse.csr_matrix((np.ones(len(misses)), (gap, frame[misses])), shape=(len(hits), frames))
        return cls(frame[hits], matrix, frame_of_rank[ranked.label_image], ranked.label_count.astype(np.float64))

    def aps(self, weights: np.ndarray, recalls: np.ndarray) -> np.ndarray:
        """COCO's AP with each frame taken `weights[r]` times, per resample r (NaN: no label taken),
        as `pooled.precision_at_recalls` gives it, for every resample at once."""
        labels = weights[:, self.label_frame] @ self.label_count
        out = np.full(len(weights), np.nan)
        out[labels > 0] = 0.0
        if not len(self.hit_frame):
            return out
        tp = np.cumsum(weights.T[self.hit_frame], axis=0)  # [hits, resamples]
        fp = np.cumsum(np.asarray(self.misses_before @ weights.T), axis=0)
        seen = tp + fp
        precision = np.divide(tp, seen, out=np.zeros_like(tp), where=seen > 0)
        precision = np.maximum.accumulate(precision[::-1], axis=0)[::-1]
        for r in np.flatnonzero(labels > 0):
            where = np.searchsorted(tp[:, r] / labels[r], recalls, side="left")
            valid = where < len(precision)
            out[r] = float(np.where(valid, precision[np.minimum(where, len(precision) - 1), r], 0.0).mean())
        return out


def weighted_ap(ranked: Ranked, weights: np.ndarray, frame_of_rank: np.ndarray, recalls: np.ndarray) -> float:
    """COCO's AP of one type with each frame taken `weights` times (NaN: no label taken)."""
    weights = np.asarray(weights, np.float64)
    return float(_Curve.of(ranked, frame_of_rank, len(weights)).aps(weights[None, :], recalls)[0])
