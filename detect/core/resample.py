"""The one resampler behind every interval of `detect compare`: a paired moving-block bootstrap over
the frames both sides processed.

Consecutive frames at 10-30 Hz show nearly the same scene: resampling single frames treats twenty
views of one moment as twenty pieces of evidence, and its intervals come out far too narrow (two
runs of two MOT17 clips, 13 frames and 0.56 s of video, got "B better" on AP and "A better" on MOTA
and IDF1). The unit is instead a block of consecutive frames of one segment lasting at least
`BLOCK_SECONDS` (a whole segment when it is shorter); segments are independent of each other. A
resample draws as many blocks as the frames hold (each segment's whole blocks, added up), each
from a segment chosen in proportion to its blocks and starting at any of its frames that leaves a
whole block (Kuensch's moving blocks), and takes every frame as often as its blocks cover it. Both
sides get the same resamples, so B - A is paired. A better/worse verdict needs `MIN_BLOCKS`;
fewer give an interval (from 2 blocks) and say "too little data".

A frame is every camera of one timestamp of one segment (they share the scene).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from detect.core.records import FrameKey

BLOCK_SECONDS = 2.0
MIN_BLOCKS = 10  # a better/worse verdict from fewer independent blocks is not to be trusted
MIN_BLOCKS_FOR_INTERVAL = 2  # one block resampled is always itself: no spread to measure
UNIT = f"blocks of consecutive frames: at least {BLOCK_SECONDS:g} s of a segment (a whole segment when shorter)"

# B - A of one or more numbers over frames taken `weights` times each; NaN where a resample leaves
# a number undefined (no label of its type drawn).
Difference = Callable[[np.ndarray], "Sequence[float] | np.ndarray"]


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentFrames:
    """One segment's frames among the common images: numbered from `first`, in time order."""

    name: str
    first: int
    timestamps: np.ndarray  # int64 microseconds, increasing

    @property
    def count(self) -> int:
        return len(self.timestamps)

    def block_length(self) -> int:
        """Frames per block: enough of them to last `BLOCK_SECONDS` at the segment's frame rate (the
        median step between its timestamps), or all of them."""
        if self.count < 2:
            return self.count
        step = float(np.median(np.diff(self.timestamps))) / 1e6
        # 1% slack: timestamps in whole microseconds make 30 Hz's step 33,333 us, and 2 s 60.0006 steps
        return min(self.count, math.ceil(BLOCK_SECONDS / step - 0.01)) if step > 0 else self.count

    def blocks(self) -> int:
        """Whole blocks in the segment (at least one: a short segment is one block)."""
        return max(1, self.count // self.block_length())


@dataclasses.dataclass(frozen=True, eq=False)
class FrameIndex:
    """The comparison's frames, numbered segment by segment in time order (the order blocks need)."""

    segments: tuple[SegmentFrames, ...]
    _numbers: dict[tuple[str, int], int]

    @classmethod
    def of(cls, images: Iterable[FrameKey]) -> FrameIndex:
        return cls.of_frames((key.segment_context_name, key.frame_timestamp_micros) for key in images)

    @classmethod
    def of_frames(cls, frames: Iterable[tuple[str, int]]) -> FrameIndex:
        """The index of frames given as (segment, timestamp), each as often as it comes."""
        times: dict[str, set[int]] = {}
        for segment, timestamp in frames:
            times.setdefault(segment, set()).add(timestamp)
        segments: list[SegmentFrames] = []
        numbers: dict[tuple[str, int], int] = {}
        for name in sorted(times):
            stamps = np.array(sorted(times[name]), np.int64)
            first = len(numbers)
            segments.append(SegmentFrames(name, first, stamps))
            numbers.update({(name, int(t)): first + n for n, t in enumerate(stamps)})
        return cls(tuple(segments), numbers)

    def __len__(self) -> int:
        return len(self._numbers)

    def number(self, key: FrameKey) -> int:
        """The frame `key`'s image belongs to."""
        return self._numbers[(key.segment_context_name, key.frame_timestamp_micros)]

    def frame_number(self, segment: str, timestamp: int) -> int:
        return self._numbers[(segment, timestamp)]


@dataclasses.dataclass(frozen=True, eq=False)
class BlockBootstrap:
    """Resamples of an index's frames, block by block; `blocks` is the count a verdict needs."""

    frames: int
    first: np.ndarray  # per segment: its first frame number
    count: np.ndarray  # per segment: its frames
    length: np.ndarray  # per segment: frames per block
    segment_blocks: np.ndarray  # per segment: its whole blocks

    @classmethod
    def of(cls, index: FrameIndex) -> BlockBootstrap:
        segments = index.segments
        return cls(len(index), np.array([s.first for s in segments], np.int64),
                   np.array([s.count for s in segments], np.int64),
                   np.array([s.block_length() for s in segments], np.int64),
                   np.array([s.blocks() for s in segments], np.int64))

    @property
    def blocks(self) -> int:
        return int(self.segment_blocks.sum())

    def weights(self, replicates: int, seed: int) -> Iterator[np.ndarray]:
        """Per resample, how many times each frame is taken (the same sequence for the same seed)."""
        rng = np.random.default_rng(seed)
        draws = self.blocks
        if not draws:
            return
        share = self.segment_blocks / draws
        for _ in range(replicates):
            segment = rng.choice(len(share), size=draws, p=share)
            starts_per_segment = self.count[segment] - self.length[segment] + 1
            start = self.first[segment] + rng.integers(0, starts_per_segment)
            edges = np.zeros(self.frames + 1)
            np.add.at(edges, start, 1.0)
            np.add.at(edges, start + self.length[segment], -1.0)
            yield np.cumsum(edges[:-1])

    def weight_chunks(self, replicates: int, seed: int, size: int) -> Iterator[np.ndarray]:
        """`weights`' resamples, `size` at a time as [size, frames] arrays (the same sequence)."""
        chunk: list[np.ndarray] = []
        for weights in self.weights(replicates, seed):
            chunk.append(weights)
            if len(chunk) == size:
                yield np.stack(chunk)
                chunk = []
        if chunk:
            yield np.stack(chunk)

    def intervals(self, differences: Sequence[Difference], replicates: int,
                  seed: int) -> list[list[tuple[float, float] | None]]:
        """Per difference, per number: the 2.5th and 97.5th percentiles of B - A over the resamples
        (None: too few blocks, no resample, or no resample where it is defined). One pass over the
        resamples serves every difference, so AP and tracking rows see the same ones."""
        if not replicates or self.blocks < MIN_BLOCKS_FOR_INTERVAL or not differences:
            return [[None] * len(d(np.ones(self.frames))) for d in differences]
        drawn: list[list[Sequence[float] | np.ndarray]] = [[] for _ in differences]
        for weights in self.weights(replicates, seed):
            for values, difference in zip(drawn, differences, strict=True):
                values.append(difference(weights))
        return [[percentile_interval(column) for column in np.asarray(values, np.float64).reshape(replicates, -1).T]
                for values in drawn]


def percentile_interval(values: np.ndarray) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the defined (not NaN) values; None when none is."""
    defined = values[~np.isnan(values)]
    if not len(defined):
        return None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(low), float(high)
