"""`make bench`'s tracking row: the images of a table, the repeated segment, the memory samples and
the lines (the timing itself is measured by `make bench`, never asserted here)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from detect.tools.bench_tracking import TrackingCost, drifting_rows, images_of, repeated, timed, tracking_lines
from detect.track import TrackerParams
from detect.waymo.schema import CAMERA, TIMESTAMP


def table() -> pa.Table:
    return pa.table({TIMESTAMP: pa.array([200, 100, 100, 200, 100], pa.int64()), CAMERA: pa.array([1, 2, 1, 1, 1], pa.int8())})


def test_images_of_a_table_in_time_then_camera_order():
    assert [(ts, cam, rows.tolist()) for ts, cam, rows in images_of(table())] == [
        (100, 1, [2, 4]), (100, 2, [1]), (200, 1, [0, 3])]


def test_a_longer_segment_repeats_the_boxes_at_10_hz():
    images = repeated(table(), 7)  # two cameras: a timestamp every two images
    assert [cam for _, cam, _ in images] == [1, 2, 1, 1, 2, 1, 1]  # the table's images in turn
    assert [ts for ts, _, _ in images] == [0, 0, 100_000, 100_000, 200_000, 200_000, 300_000]
    assert [rows.tolist() for _, _, rows in images[:4]] == [[2, 4], [1], [0, 3], [2, 4]]


@pytest.mark.slow
def test_the_tracker_holds_as_much_late_as_early():
    at, kb, held = drifting_rows(300, TrackerParams(), boxes=10, every=60)
    assert at == [60, 120, 180, 240, 300]
    assert max(held) <= 2 * min(held) and max(kb) <= 2 * kb[0]  # dead tracks are dropped: no growth


def test_the_lines_say_the_share_against_its_target():
    cost = TrackingCost(200, 18480, [121.8, 42.0, 61.4], [1.03, 0.11, 0.5], [0.78, 0.1, 0.16], 0.005,
                        [200, 400, 600, 800, 1000], [69.0, 69.0, 69.0, 69.0, 69.4], [41] * 5, [16.0, 19.0, 17.0, 16.0, 18.0],
                        [24, 29, 25, 23, 26])
    lines = tracking_lines(cost)
    assert lines[1:] == [
        "tracking in `detect segment`, default outputs, 200 images (18480 boxes in the table):",
        "  share of the run 0.50% (target <= 3: met)",
        "  per repeat, s (live + at the end / run): 1.03+0.78/121.8; 0.11+0.10/42.0; 0.50+0.16/61.4",
        "  tracker KB/tracks every 200 of 1000 images: 69/41 69/41 69/41 69/41 69/41",
        "  the same on drifting objects born and dying: 16/24 19/29 17/25 16/23 18/26"]
    assert all(len(line) < 100 for line in lines)
    assert np.isclose(cost.to_json()["share"], 0.005)


def test_timed_counts_each_call_and_puts_the_function_back():
    class Owner:
        def work(self, x: int) -> int:
            return 2 * x

    seconds: list[float] = []
    with timed(Owner, "work", seconds):
        assert Owner().work(3) == 6 and Owner().work(4) == 8
    assert len(seconds) == 2 and all(s >= 0 for s in seconds)
    Owner().work(5)
    assert len(seconds) == 2  # no longer timed
