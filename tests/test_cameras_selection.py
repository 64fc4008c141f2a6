import math
import random

import numpy as np
import pytest

from detect.core.cameras import CameraName, UnknownCameraError, parse_camera, parse_cameras
from detect.waymo.selection import FrameFilter, KeyIndex, in_order, select


def test_parse_camera_accepts_names_numbers_and_spellings():
    assert parse_camera("front_left") is CameraName.FRONT_LEFT
    assert parse_camera("SIDE-RIGHT") is CameraName.SIDE_RIGHT
    assert parse_camera("3") is CameraName.FRONT_RIGHT
    assert parse_camera(1) is CameraName.FRONT


def test_parse_cameras_splits_commas_dedups_and_sorts():
    assert parse_cameras(["side_left,front", "1"]) == (CameraName.FRONT, CameraName.SIDE_LEFT)
    assert parse_cameras(None) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("rear", "unknown camera 'rear': expected one of "
                 "FRONT (1), FRONT_LEFT (2), FRONT_RIGHT (3), SIDE_LEFT (4), SIDE_RIGHT (5)"),
        ("9", "unknown camera number 9: expected 1-5 "
              "(FRONT (1), FRONT_LEFT (2), FRONT_RIGHT (3), SIDE_LEFT (4), SIDE_RIGHT (5))"),
    ],
)
def test_unknown_camera_messages(value, message):
    with pytest.raises(UnknownCameraError) as error:
        parse_camera(value)
    assert str(error.value) == message


def _index(pairs):
    ts = np.array([p[0] for p in pairs], np.int64)
    cams = np.array([p[1] for p in pairs], np.int64)
    return KeyIndex(ts, cams, np.arange(len(pairs)))


def test_select_sorts_by_timestamp_then_camera():
    index = _index([(200, 2), (100, 5), (200, 1), (100, 1), (300, 3)])
    assert select(index).tolist() == [3, 1, 2, 0, 4]


def test_select_filters_cameras_frames_and_time():
    index = _index([(t, c) for t in (300, 100, 200, 400) for c in (1, 2, 4)])
    rows = select(index, FrameFilter(cameras=(CameraName.FRONT, CameraName.SIDE_LEFT), first_frame=1, max_frames=2))
    assert [(int(index.timestamps[r]), int(index.cameras[r])) for r in rows] == [(200, 1), (200, 4), (300, 1), (300, 4)]
    rows = select(index, FrameFilter(min_timestamp=250, max_timestamp=400))
    assert sorted({int(index.timestamps[r]) for r in rows}) == [300, 400]


def test_frame_filter_rejects_bad_ranges():
    with pytest.raises(ValueError, match="max frames must be >= 1, got 0"):
        FrameFilter(max_frames=0)
    with pytest.raises(ValueError, match="first frame must be >= 0, got -1"):
        FrameFilter(first_frame=-1)


@pytest.mark.parametrize("seed", range(20))
def test_in_order_restores_any_order_with_bounded_holding(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 80)
    capacity = rng.randint(1, 12)
    order = list(range(n))
    rng.shuffle(order)
    scans = 0

    def scan(wanted):
        nonlocal scans
        scans += 1
        for position in range(n):
            yield position, position

    out = []
    for item in in_order(order, scan, capacity):
        out.append(item)
    assert out == order
    assert scans <= math.ceil(n / capacity)


def test_in_order_reads_a_sorted_source_once():
    scans = []
    result = list(in_order(list(range(50)), lambda wanted: (scans.append(1) or ((p, p) for p in range(50))), 1))
    assert result == list(range(50)) and len(scans) == 1


def test_in_order_reports_a_position_that_never_arrives():
    with pytest.raises(LookupError, match="position 7 never arrived"):
        list(in_order([7], lambda wanted: iter([(1, "x")]), 4))
