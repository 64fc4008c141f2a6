"""`detect compare`'s one resampler: frames numbered segment by segment, blocks of at least 2 s of
consecutive frames (a shorter segment whole), resamples of whole blocks, and verdicts only from 10
blocks."""

from __future__ import annotations

import numpy as np
import pytest

from detect.compare.comparison import Change
from detect.core.cameras import CameraName
from detect.core.records import FrameKey
from detect.core.resample import BlockBootstrap, FrameIndex, SegmentFrames

T0 = 1_600_000_000_000_000


def keys(segment: str, frames: int, hz: float, cameras: int = 1) -> list[FrameKey]:
    return [FrameKey(segment, T0 + round(i * 1e6 / hz), CameraName(c + 1)) for i in range(frames) for c in range(cameras)]


def bootstrap(*segments: tuple[str, int, float]) -> BlockBootstrap:
    return BlockBootstrap.of(FrameIndex.of([k for s in segments for k in keys(*s)]))


def test_frames_are_numbered_segment_by_segment_in_time_order_with_every_camera_in_one():
    images = keys("b", 3, 10, cameras=5) + keys("a", 2, 10)
    index = FrameIndex.of(reversed(images))
    assert len(index) == 5 and [s.name for s in index.segments] == ["a", "b"]
    assert [index.number(k) for k in keys("a", 2, 10)] == [0, 1]
    assert {index.number(k) for k in keys("b", 3, 10, cameras=5)[5:10]} == {3}  # every camera of b's 2nd timestamp


@pytest.mark.parametrize("frames, hz, length, blocks", [
    (200, 10, 20, 10),  # a full Waymo segment: 20 s
    (199, 10, 20, 9),  # 19.9 s: nine whole blocks of 2 s
    (7, 30, 7, 1),  # MOT17-11's 0.23 s: one block
    (6, 14, 6, 1),
    (1, 10, 1, 1),
    (20, 1, 2, 10),  # one frame a second
    (120, 30, 60, 2),  # 30 Hz, its timestamps rounded to microseconds
])
def test_a_block_is_at_least_two_seconds_of_a_segment_or_all_of_a_shorter_one(frames, hz, length, blocks):
    segment = SegmentFrames("s", 0, np.array([k.frame_timestamp_micros for k in keys("s", frames, hz)]))
    assert (segment.block_length(), segment.blocks()) == (length, blocks)


def test_a_resample_takes_whole_blocks_of_consecutive_frames():
    drawn = bootstrap(("s", 200, 10))
    assert drawn.blocks == 10
    for weights in drawn.weights(50, seed=1):
        assert weights.sum() == 10 * 20
        starts = np.flatnonzero(np.diff(np.concatenate([[0], weights])) > 0)
        assert all(np.all(weights[s:s + 20] >= 1) for s in starts)  # each block covers 20 frames in a row


def test_segments_shorter_than_a_block_are_taken_whole_and_the_same_seed_draws_the_same():
    drawn = bootstrap(("clip_a", 6, 14), ("clip_b", 7, 30))
    assert drawn.blocks == 2
    seen = set()
    for weights in drawn.weights(40, seed=3):
        assert len(set(weights[:6])) == 1 and len(set(weights[6:])) == 1  # a clip is in a resample whole, or not
        seen.add((weights[0], weights[6]))
    assert seen == {(2.0, 0.0), (1.0, 1.0), (0.0, 2.0)}
    again = list(drawn.weights(40, seed=3))
    assert all(np.array_equal(x, y) for x, y in zip(again, drawn.weights(40, seed=3), strict=True))


def test_longer_segments_are_drawn_in_proportion_to_their_blocks():
    drawn = bootstrap(("long", 400, 10), ("short", 5, 10))  # 20 blocks and 1
    times = np.mean([w[400:].sum() / 5 for w in drawn.weights(2000, seed=0)])  # the short one, per resample
    assert drawn.blocks == 21 and times == pytest.approx(1.0, abs=0.1)  # 21 draws, 1 in 21 of them


def test_intervals_are_percentiles_of_the_differences_and_absent_from_one_block():
    drawn = bootstrap(("s", 200, 10))
    frames = np.arange(200)
    [[interval]] = drawn.intervals([lambda w: [float(w @ frames) / w.sum()]], 400, seed=0)
    assert interval is not None and interval[0] < 99.5 < interval[1]  # the mean frame number, resampled
    [[constant, undefined]] = drawn.intervals([lambda w: [0.25, np.nan]], 10, seed=0)
    assert constant == (0.25, 0.25) and undefined is None
    assert drawn.intervals([lambda w: [1.0]], 0, seed=0) == [[None]]  # --bootstrap 0
    assert bootstrap(("s", 19, 10)).intervals([lambda w: [1.0, 2.0]], 100, seed=0) == [[None, None]]  # one block


@pytest.mark.parametrize("change, verdict", [
    (Change(0.3, 0.5, 0.1, 0.3, 10), "B better"),
    (Change(0.5, 0.3, -0.3, -0.1, 10), "A better"),
    (Change(0.5, 0.3, -0.3, 0.1, 10), "within noise"),
    (Change(0.3, 0.5, 0.1, 0.3, 9), "too little data (9 blocks)"),
    (Change(0.3, 0.5, None, None, 1), "too little data (1 block)"),
    (Change(0.3, 0.5, None, None, 10), "-"),  # --bootstrap 0
    (Change(0.3, None, None, None, 10), "-"),  # B cannot output the type
])
def test_a_verdict_needs_ten_blocks_and_an_interval_that_excludes_zero(change, verdict):
    assert change.verdict == verdict
