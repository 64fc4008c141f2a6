"""Trails: a second of bottom-centre points per track, drawn fading behind the box."""

from __future__ import annotations

import numpy as np
import pytest

from detect.render.trails import paint_trails
from detect.track.trail_history import Trails


def box_at(x: float, y: float) -> np.ndarray:
    return np.array([[x - 10, y - 40, x + 10, y]], np.float64)


def test_a_trail_holds_the_last_second_of_bottom_centre_points_oldest_first():
    trails = Trails(seconds=1.0)
    for k in range(15):  # 10 Hz: 1.4 s
        out = trails.update(1, 1_000_000 + k * 100_000, np.array([7]), box_at(100 + 5 * k, 300))
    assert list(out) == [7]
    np.testing.assert_array_equal(out[7], [(100 + 5 * k, 300) for k in range(4, 15)])  # 1.0 s back, inclusive


def test_untracked_boxes_have_no_trail_and_cameras_and_tracks_are_apart():
    trails = Trails()
    out = trails.update(1, 0, np.array([-1, 3]), np.vstack([box_at(0, 50), box_at(10, 60)]))
    assert list(out) == [3]
    out = trails.update(2, 0, np.array([3]), box_at(500, 500))  # another camera, same id: its own trail
    np.testing.assert_array_equal(out[3], [(500, 500)])
    out = trails.update(1, 100_000, np.array([3]), box_at(20, 60))
    np.testing.assert_array_equal(out[3], [(10, 60), (20, 60)])


def test_a_track_not_seen_for_longer_than_the_trail_is_forgotten_and_memory_stays_flat():
    trails = Trails(seconds=0.5)
    for k in range(1000):  # a new object every image, each seen once: nothing older than 0.5 s stays
        trails.update(1, k * 100_000, np.array([k]), box_at(k % 1900, 600))
    assert trails.held() == 6


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="seconds must be > 0"):
        Trails(seconds=0)
    with pytest.raises(ValueError, match="one track id per box"):
        Trails().update(1, 0, np.array([1, 2]), box_at(0, 0))


def test_a_trail_is_drawn_in_the_tracks_color_thickest_and_opaque_at_the_newest_end():
    """Three times the boxes' line width at its newest end (4 px once a 1920 frame is shrunk to its
    GIF), twice at its oldest, 30% blended into the image there."""
    canvas = np.zeros((60, 120, 3), np.uint8)
    paint_trails(canvas, {4: np.array([(10.0, 30.0), (60.0, 30.0), (110.0, 30.0)])}, {4: (200, 100, 0)}, 4)
    newest, oldest = canvas[:, 100], canvas[:, 20]
    assert (np.all(newest == (200, 100, 0), -1).sum(), np.any(oldest > 0, -1).sum()) == (12, 8)
    assert tuple(oldest[30]) == (140, 70, 0)  # 30% blended into the black image
    assert not canvas[:25].any() and not canvas[37:].any()


def test_a_trail_has_a_dark_edge_so_it_reads_on_a_light_ground():
    canvas = np.full((60, 120, 3), 200, np.uint8)
    paint_trails(canvas, {4: np.array([(10.0, 30.0), (110.0, 30.0)])}, {4: (86, 180, 233)}, 4)
    column = canvas[:, 60].astype(int)
    assert (column[25:37] == (86, 180, 233)).all()  # the line, 12 px
    assert (column[23:25] < 100).all() and (column[37:39] < 100).all()  # 2 px of dark edge either side
    assert (column[:23] == 200).all() and (column[39:] == 200).all()


def test_points_outside_the_image_are_clipped_and_single_points_draw_nothing():
    canvas = np.zeros((40, 40, 3), np.uint8)
    paint_trails(canvas, {1: np.array([(-50.0, 20.0), (100.0, 20.0)]), 2: np.array([(5.0, 5.0)])},
                 {1: (255, 255, 255), 2: (255, 0, 0)}, 2)
    assert np.all(canvas[18:24].all(-1)) and not canvas[:18].any() and not canvas[24:].any()


def test_a_tracked_boxs_chip_starts_with_its_id():
    from detect.render.chip_text import chip_text
    from detect.render.draw import DrawStyle

    style = DrawStyle()
    assert chip_text("car", 3, 0.834, style, track_id=17) == "#17 car 0.83"
    assert chip_text("car", 3, 0.834, style, track_id=-1) == chip_text("car", 3, 0.834, style) == "car 0.83"
    assert chip_text("car", 3, 0.834, DrawStyle(show_labels=False, show_scores=False), track_id=5) == "#5"
