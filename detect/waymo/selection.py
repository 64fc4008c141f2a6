"""Which camera images to read and in which order: pure functions over the small key columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

import numpy as np

from detect.core.cameras import CameraName

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class FrameFilter:
    """Cameras, a frame range (by index among the segment's sorted timestamps) and a time window."""

    cameras: tuple[CameraName, ...] | None = None
    first_frame: int = 0
    max_frames: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None

    def __post_init__(self) -> None:
        if self.first_frame < 0:
            raise ValueError(f"first frame must be >= 0, got {self.first_frame}")
        if self.max_frames is not None and self.max_frames < 1:
            raise ValueError(f"max frames must be >= 1, got {self.max_frames}")


@dataclasses.dataclass(frozen=True, eq=False)
class KeyIndex:
    """The key columns of a segment file, one entry per camera image, in file order.

    `position[i]` is where row i sits in the file (row number for Parquet, record number for
    TFRecord): what a reader needs to find the image again.
    """

    timestamps: np.ndarray
    cameras: np.ndarray
    positions: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.timestamps)
        for name in ("cameras", "positions"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have {n} entries, got {len(getattr(self, name))}")

    def __len__(self) -> int:
        return len(self.timestamps)


def select(index: KeyIndex, frame_filter: FrameFilter = FrameFilter()) -> np.ndarray:
    """Row numbers of `index` to read, sorted by (timestamp, camera), one per key.

    A (timestamp, camera) key that appears more than once keeps its first row in file order;
    `duplicate_rows` names the others, which are reported, never read.
    """
    rows = _selected(index, frame_filter)
    return rows[_first_of_each_key(index, rows)]


def duplicate_rows(index: KeyIndex, frame_filter: FrameFilter = FrameFilter()) -> np.ndarray:
    """Rows that repeat the (timestamp, camera) key of an earlier row in the selection."""
    rows = _selected(index, frame_filter)
    return rows[~_first_of_each_key(index, rows)]


def _first_of_each_key(index: KeyIndex, rows: np.ndarray) -> np.ndarray:
    """Mask over `rows` (sorted by key, file order within a key): True for each key's first row."""
    if len(rows) == 0:
        return np.zeros(0, dtype=bool)
    ts, cams = index.timestamps[rows], index.cameras[rows]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (ts[1:] != ts[:-1]) | (cams[1:] != cams[:-1])
    return first


def _selected(index: KeyIndex, frame_filter: FrameFilter) -> np.ndarray:
    keep = np.ones(len(index), dtype=bool)
    if frame_filter.cameras is not None:
        keep &= np.isin(index.cameras, np.asarray([int(c) for c in frame_filter.cameras]))
    if frame_filter.min_timestamp is not None:
        keep &= index.timestamps >= frame_filter.min_timestamp
    if frame_filter.max_timestamp is not None:
        keep &= index.timestamps <= frame_filter.max_timestamp
    rows = np.flatnonzero(keep)
    # lexsort is stable: rows with the same key stay in file (position) order.
    order = np.lexsort((index.positions[rows], index.cameras[rows], index.timestamps[rows]))
    rows = rows[order]
    if frame_filter.first_frame or frame_filter.max_frames is not None:
        frame_times = np.unique(index.timestamps[rows])
        stop = None if frame_filter.max_frames is None else frame_filter.first_frame + frame_filter.max_frames
        wanted = frame_times[frame_filter.first_frame:stop]
        rows = rows[np.isin(index.timestamps[rows], wanted)]
    return rows


def in_order(
    order: Sequence[int],
    scan: Callable[[set[int]], Iterable[tuple[int, T]]],
    capacity: int,
) -> Iterator[T]:
    """Yield items in `order` from a source that can only be scanned front to back.

    `scan(wanted)` yields `(position, item)` in file order for (at least) the positions in
    `wanted`. Items arriving early are held back, at most `capacity` of them; those further ahead
    are dropped and picked up by another scan. A sorted file takes one scan and holds nothing; a
    shuffled one takes at most ceil(len(order) / capacity) scans. Memory stays bounded either way.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    rank = {int(position): r for r, position in enumerate(order)}
    if len(rank) != len(order):
        raise ValueError("order names a position twice")
    total = len(order)
    next_rank = 0
    held: dict[int, T] = {}
    while next_rank < total:
        progress_before = next_rank
        wanted = {int(p) for p in order[next_rank:]}
        for position, item in scan(wanted):
            r = rank.get(position)
            if r is None or r < next_rank or r in held:
                continue
            if r >= next_rank + capacity:
                continue
            if r == next_rank:
                yield item
                next_rank += 1
                while next_rank in held:
                    yield held.pop(next_rank)
                    next_rank += 1
                if next_rank == total:
                    return
            elif len(held) < capacity:
                held[r] = item
        if next_rank == progress_before:
            missing = order[next_rank]
            raise LookupError(f"position {missing} never arrived from the scan")
