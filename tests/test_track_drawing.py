"""Track ids and trails in the frames: `#17 car 0.83` chips, a trail behind each tracked box (a crafted
3-image sequence), the legend line in both drawing modes, and errors mode keeping its colors."""

from __future__ import annotations

import numpy as np
import pytest

from detect.core.matching import PROTOCOLS
from detect.core.records import Detections, Labels, WaymoType
from detect.core.track_numbers import camera_track_number, camera_track_numbers
from detect.judge import ErrorRules
from detect.model.classmap import default_class_map
from detect.render.chips import chip_height, chip_width
from detect.render.draw import (
    WATERMARK_COLOR,
    DrawStyle,
    draw_boxes,
    draw_detections,
    legend_font_size,
    paint_track_legend,
)
from detect.render.trails import TRACK_LEGEND, TrackTrails, numbered, trail_rects
from detect.render.verdicts import COLORS, FALSE_ALARM, HIT, draw_errors, judge, paint_error_legend
from detect.track.trail_history import Trails

W, H = 640, 480


def dets(xyxy, scores, classes) -> Detections:
    labels = {3: "car", 1: "person"}
    return Detections(np.asarray(xyxy, np.float32).reshape(-1, 4), np.asarray(scores, np.float32),
                      np.asarray(classes, np.int32), tuple(labels[c] for c in classes))


def blank() -> np.ndarray:
    return np.zeros((H, W, 3), np.uint8)


def test_a_tracked_box_chip_starts_with_its_id_and_the_frame_carries_the_track_legend():
    d = dets([[100, 100, 200, 200], [300, 100, 360, 260]], [0.875, 0.75], [3, 1])
    style = DrawStyle(threshold=0.5)
    drawn = draw_detections(blank(), d.with_track_ids(np.array([17, -1])), style)
    expected = blank()
    palette = style.palette
    draw_boxes(expected, d.xyxy, ["#17 car 0.88", "person 0.75"], [palette[3], palette[1]])
    paint_track_legend(expected)
    np.testing.assert_array_equal(drawn, expected)
    untracked = draw_detections(blank(), d, style)
    assert not np.array_equal(untracked, drawn)


def test_a_cameras_tracks_are_shown_as_1_2_3_though_their_ids_step_by_the_cameras():
    """FRONT_RIGHT (3) takes ids 3, 8, 13 so that an id is unique in the segment; its chips and trails
    say #1, #2, #3. An id outside the camera's sequence is shown as it is; -1 stays untracked."""
    trail = np.array([[10.0, 20.0], [12.0, 22.0]])
    five = dets([[0, 0, 9, 9]] * 5, [0.9] * 5, [3] * 5).with_track_ids(np.array([3, 8, -1, 13, 4]))
    shown, trails = numbered(five, {8: trail, 13: trail}, 3)
    assert shown.track_ids is not None and shown.track_ids.tolist() == [1, 2, -1, 3, 4] and set(trails.points) == {2, 3}
    assert five.track_ids is not None and five.track_ids.tolist() == [3, 8, -1, 13, 4]  # the segment's ids kept
    assert camera_track_numbers(np.array([1, 6, 11, 2]), 1).tolist() == [1, 2, 3, 2]
    assert [camera_track_number(i, 5) for i in (5, 10, 15, 7)] == [1, 2, 3, 7]
    d = dets([[100, 100, 300, 200]], [0.875], [3])
    shown, trails = numbered(d.with_track_ids(np.array([13])), {}, 3)
    drawn = draw_detections(blank(), shown, DrawStyle(threshold=0.5), trails=trails)
    expected = draw_detections(blank(), d.with_track_ids(np.array([3])), DrawStyle(threshold=0.5))
    np.testing.assert_array_equal(drawn, expected)


def test_the_track_legend_sits_in_the_top_right_corner():
    canvas = blank()
    paint_track_legend(canvas)
    size = legend_font_size(W, H)
    w, h = chip_width(TRACK_LEGEND, size), chip_height(size)
    assert tuple(canvas[0, W - w]) == WATERMARK_COLOR and tuple(canvas[h - 1, W - 1]) == WATERMARK_COLOR
    assert not canvas[h:].any() and not canvas[:, : W - w].any()


def three_images() -> list[tuple[Detections, TrackTrails]]:
    """One car moving 60 px right per image at 10 Hz, tracked as #4; a person not tracked."""
    trails = Trails()
    out = []
    for k in range(3):
        d = dets([[100 + 60 * k, 200, 160 + 60 * k, 300], [500, 50, 540, 150]], [0.9, 0.8], [3, 1])
        ids = np.array([4, -1])
        out.append((d.with_track_ids(ids), TrackTrails(trails.update(1, k * 100_000, ids, d.xyxy))))
    return out


def test_a_trail_runs_behind_a_tracked_box_through_its_last_bottom_centres_fading_to_the_oldest():
    d, trails = three_images()[-1]
    np.testing.assert_array_equal(trails.points[4], [(130, 300), (190, 300), (250, 300)])
    style = DrawStyle(threshold=0.5, line_width=4, show_labels=False, show_scores=False)
    drawn = draw_detections(blank(), d, style, trails=trails)
    plain = draw_detections(blank(), d, style)  # the same without trails
    trail = np.any(drawn != plain, axis=2)
    ys, xs = np.nonzero(trail)
    # on its path, 8-12 px thick (its dark edge shows where it crosses the box's bottom line: the trail
    # is drawn over the boxes' lines, which would hide a trail along them)
    assert xs.min() == 130 and xs.max() == 250 and set(ys) == set(range(293, 307))
    car = np.array(style.palette[3], np.float64)
    newest, oldest = drawn[300, 200].astype(np.float64), drawn[300, 140].astype(np.float64)
    np.testing.assert_array_equal(newest, car)  # the newest segment in full color
    np.testing.assert_allclose(oldest, np.round(car * 0.7), atol=1)  # the oldest blended 30% into black
    assert not trail[:, 480:].any()  # the untracked person has none


def test_errors_mode_keeps_the_state_colors_and_adds_the_id_and_the_trail():
    d, trails = three_images()[-1]
    labels = Labels(np.array([[220, 200, 280, 300]], np.float32), np.array([WaymoType.VEHICLE], np.int8),
                    np.full(1, 2, np.int8), ("a",))
    rules = ErrorRules(default_class_map(), (int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN)), PROTOCOLS["coco"])
    style = DrawStyle(threshold=0.5)
    judged = judge(d, labels, rules, style, trails)
    assert judged.states == (HIT, FALSE_ALARM) and judged.texts == ("#4 car 0.90", "FA person 0.80")
    assert judged.track_ids == (4, None) and list(judged.trails) == [4] and judged.tracked
    assert judge(d.with_track_ids(None), labels, rules, style, trails).track_ids is None
    canvas = blank()
    draw_errors(canvas, judged)
    assert tuple(canvas[300, 200]) == COLORS[HIT]  # the trail in the hit's color


def test_the_error_legend_adds_the_track_line_when_the_segment_is_tracked():
    untracked, tracked = blank(), blank()
    paint_error_legend(untracked, [], ())
    paint_error_legend(tracked, [], (), tracked=True)
    step = chip_height(legend_font_size(W, H))
    np.testing.assert_array_equal(untracked[: 3 * step], tracked[: 3 * step])
    assert not untracked[3 * step:].any()
    assert tuple(tracked[3 * step, W - 1]) == WATERMARK_COLOR and not tracked[4 * step:].any()


def test_a_tracked_image_without_trails_draws_its_ids_and_legend_alone():
    d, trails = three_images()[-1]
    style = DrawStyle(threshold=0.5)
    untracked = draw_detections(blank(), d.with_track_ids(None), style, trails=trails)
    np.testing.assert_array_equal(untracked, draw_detections(blank(), d.with_track_ids(None), style))
    plain = draw_detections(blank(), d, style)
    assert not np.array_equal(plain, untracked)  # the id chips and the legend
    assert not np.array_equal(plain, draw_detections(blank(), d, style, trails=trails))  # the trail


def test_numbering_a_picture_needs_a_tracked_image():
    with pytest.raises(ValueError, match=r"^numbered needs the detections of a tracked image \(track_ids is None\)$"):
        numbered(dets([[0, 0, 9, 9]], [0.9], [3]), {}, 1)


def test_no_chip_covers_a_trail():
    """A small box at the image's top gets its chip below it, unless its trail runs there."""
    box = np.array([[100, 0, 110, 12]], np.float64)
    alone = draw_boxes(blank(), box, [".83"], [(86, 180, 233)], font_size=12, line_width=2)
    trail = {7: np.array([[105.0, 60.0], [105.0, 12.0]])}
    tracked = draw_boxes(blank(), box, [".83"], [(86, 180, 233)], font_size=12, line_width=2,
                         trails=(trail, {7: (86, 180, 233)}))
    [before], [after] = alone.chips, tracked.chips
    assert (before.x, before.y) == (100, 13)
    x0, y0, x1, y1 = after.rect
    assert (after.x, after.y) != (100, 13)
    assert all(x1 <= a or b <= x0 or y1 <= c or d <= y0 for a, c, b, d in trail_rects(trail, 2))
