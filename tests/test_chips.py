"""One chip layout for every picture: where a chip goes, what it says, what it never covers, and how
little of a crowded picture the chips cover."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from helpers.crowds import driving_scene, street_crowd
from helpers.examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.matching import COCO_PROTOCOL
from detect.core.records import FrameKey, Labels, WaymoType
from detect.judge import ErrorRules
from detect.model.classmap import default_class_map
from detect.render.chip_layout import (
    LONG_TEXT_COVER,
    MIN_TEXT_SHOWN_PX,
    OTHER_BOX_SHARE,
    OWN_BOX_SHARE,
    SHOWN_WIDTH,
    Chip,
    chip_overlap,
    font_size_for,
    frame_font_size,
    lay_out_chips,
)
from detect.render.chips import chip_height, chip_width, paint_chip
from detect.render.draw import DrawStyle, draw_boxes
from detect.render.mosaic_tile import display_scale, tile_font_size
from detect.render.verdicts import COLORS, draw_errors, judge
from detect.results.animations import prepare_animation_frame
from detect.results.gif import GifWriter
from detect.tools.chip_cover import chip_cover, frames

SIZE = 12
RULES = ErrorRules(default_class_map(), tuple(int(t) for t in (WaymoType.VEHICLE, WaymoType.PEDESTRIAN, WaymoType.CYCLIST)),
                   COCO_PROTOCOL)


def lay_out(boxes, texts, width=200, height=120, **kwargs) -> list[Chip | None]:
    return lay_out_chips(boxes, [(t,) if isinstance(t, str) else t or () for t in texts], SIZE, width, height, **kwargs)


def area(rect) -> int:
    x0, y0, x1, y1 = rect
    return max(0, x1 - x0) * max(0, y1 - y0)


def shared(a, b) -> int:
    return area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


def test_a_chip_alone_sits_above_its_box_where_paint_chip_puts_it():
    canvas_a = np.zeros((100, 200, 3), np.uint8)
    canvas_b = canvas_a.copy()
    box = (40, 50, 120, 90)
    paint_chip(canvas_a, box, "car 0.87", (200, 30, 30), SIZE)
    placed = draw_boxes(canvas_b, np.array([box], np.float64), ["car 0.87"], [(200, 30, 30)], line_width=1, font_size=SIZE)
    chip = np.all(canvas_a == (200, 30, 30), -1)
    assert chip.any() and np.array_equal(chip & np.all(canvas_b == (200, 30, 30), -1), chip)
    [drawn] = placed.chips
    assert (drawn.x, drawn.y + drawn.height) == (40, 50) and drawn.leader is None  # on the box's top-left corner


def test_a_second_chip_on_the_same_corner_moves_to_the_next_free_spot_never_over_the_first():
    boxes = [(40, 50, 120, 110), (40, 50, 100, 150)]
    first, second = lay_out(boxes, ["car 0.87", "car 0.86"], height=200)
    assert (first.x, first.y) == (40, 50 - chip_height(SIZE))
    assert (second.x, second.y) == (40, 151)  # above: taken; just inside: inside the first box; below
    assert chip_overlap([first, second]) == 0


def test_the_long_text_goes_on_a_box_as_wide_as_it_the_short_one_on_a_narrower_box():
    wide, narrow = (10, 60, 10 + chip_width("#17 person 0.83", SIZE), 110), (150, 60, 170, 110)
    long_chip, short_chip = lay_out([wide, narrow], [("#17 person 0.83", "#17 .83"), ("#18 person 0.81", "#18 .81")],
                                    width=1000, height=600)
    assert long_chip.text == "#17 person 0.83" and short_chip.text == "#18 .81"


def test_long_texts_stop_once_the_chips_cover_their_share_of_the_picture():
    boxes = [(20 + 130 * i, 300, 140 + 130 * i, 400) for i in range(7)]  # wide boxes, side by side
    texts = [(f"#{i} car 0.9", f"#{i} .9") for i in range(7)]
    chips = lay_out(boxes, texts, width=960, height=540)
    long = [c for c in chips if c is not None and "car" in c.text]
    assert 0 < len(long) < 7 and all(c is not None for c in chips)
    assert sum(area(c.rect) for c in long) <= LONG_TEXT_COVER * 960 * 540
    assert [c is not None and "car" in c.text for c in chips] == [True] * len(long) + [False] * (7 - len(long))


def test_a_chip_covers_at_most_a_third_of_its_own_box_a_small_ones_goes_next_to_it():
    box = (100, 0, 110, 12)  # a far car at the top edge: no room above, too small to carry its chip
    [chip] = lay_out([box], [".83"])
    assert chip is not None and shared(chip.rect, (100, 0, 111, 13)) == 0 and (chip.x, chip.y) == (100, 13)
    big = (20, 0, 120, 80)  # a near one: its chip just inside its top
    [chip] = lay_out([big], [".83"])
    assert (chip.x, chip.y) == (20, 0) and shared(chip.rect, (20, 0, 121, 81)) <= OWN_BOX_SHARE * 101 * 81


def test_a_chip_never_covers_another_boxs_inside_nor_the_legend():
    far = (60, 40, 75, 52)  # a far car just above the near one's top-left corner
    near = (60, 53, 150, 110)
    legend = (0, 0, 200, 20)
    chip, _ = lay_out([near, far], ["car 0.9", None], reserved=[legend])
    assert chip is not None and shared(chip.rect, legend) == 0
    assert shared(chip.rect, (61, 41, 75, 52)) <= OTHER_BOX_SHARE * 14 * 11


def test_a_chip_with_no_free_spot_is_left_out_and_its_box_still_drawn():
    boxes = [(40, 80, 90, 120), (42, 82, 88, 122), (38, 78, 92, 118), (41, 81, 89, 121), (40, 80, 91, 119)]
    canvas = np.zeros((200, 130, 3), np.uint8)
    placed = draw_boxes(canvas, np.array(boxes, np.float64), ["car 0.9"] * 5, [(200, 0, 0)] * 5, font_size=20)
    assert 0 < len(placed.chips) < 5 and placed.left_out == 5 - len(placed.chips)
    assert chip_overlap(list(placed.chips)) == 0
    assert (canvas[122, 45] == (200, 0, 0)).all()  # a box whose chip was left out: its outline drawn


def test_a_chip_a_row_off_is_joined_to_its_box_by_a_leader_line():
    box = (100, 60, 110, 70)  # a small box walled in by others: above, below, left and right of it
    walls = [(85, 42, 125, 59), (85, 71, 125, 100), (60, 55, 99, 75), (111, 55, 150, 75)]
    texts = [".9", None, None, None, None]
    chip = lay_out([box, *walls], texts, width=240)[0]
    assert chip is not None and chip.leader is not None and chip.y + chip.height <= 41  # a row above the wall
    x, top, bottom = chip.leader
    assert top == chip.y + chip.height and bottom == 60 and 100 <= x <= 110
    canvas = np.zeros((120, 240, 3), np.uint8)
    draw_boxes(canvas, np.array([box, *walls], np.float64), texts, [(0, 200, 0)] + [(0, 0, 200)] * 4, font_size=SIZE,
               line_width=2)
    assert (canvas[top:bottom, x] == (0, 200, 0)).all()


def test_a_missed_labels_chip_is_drawn_only_on_a_box_two_chips_tall_and_as_wide_as_its_text():
    text = "MISS PEDESTRIAN"
    tall_wide = (0, 30, chip_width(text, SIZE), 30 + 2 * chip_height(SIZE))
    tall_narrow = (150, 30, 170, 110)
    short = (100, 100, 100 + chip_width(text, SIZE), 110)
    chips = lay_out([tall_wide, tall_narrow, short], [text] * 3, width=1000, height=600, optional=[True] * 3)
    assert chips[0] is not None and chips[1] is None and chips[2] is None
    assert lay_out([tall_narrow], [text], width=1000, height=600)[0] is not None  # a detection's only text: drawn


def test_chip_text_reads_at_ten_pixels_as_every_picture_is_shown():
    assert frame_font_size(1920) * SHOWN_WIDTH / 1920 >= MIN_TEXT_SHOWN_PX == 10
    assert frame_font_size(1920) == 30 and frame_font_size(640) == 10 and frame_font_size(320) == 10
    assert tile_font_size(640) * display_scale(640) >= MIN_TEXT_SHOWN_PX
    assert font_size_for(0.5) == 20
    with pytest.raises(ValueError, match="shown_scale must be positive, got 0"):
        font_size_for(0)


@settings(max_examples=examples(0.5), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 150), st.integers(0, 90), st.integers(1, 80), st.integers(1, 60),
                          st.sampled_from(["car 0.87", ".9", "#12 person 0.55"])), min_size=1, max_size=25))
def test_every_chip_is_inside_the_image_next_to_its_box_and_covers_no_other_chip_nor_box(rows):
    width, height = 160, 100
    boxes = [(x, y, min(width - 1, x + w), min(height - 1, y + h)) for x, y, w, h, _ in rows]
    chips = lay_out(boxes, [t for *_, t in rows], width, height, inset=1)
    assert chip_overlap(chips) == 0
    for i, (chip, box) in enumerate(zip(chips, boxes, strict=True)):
        if chip is None:
            continue
        x0, y0, x1, y1 = chip.rect
        assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
        own = (box[0], box[1], box[2] + 1, box[3] + 1)
        gap_x = max(x0 - own[2], own[0] - x1)
        gap_y = max(y0 - own[3], own[1] - y1)
        assert gap_x <= 0 and (gap_y <= 0 or chip.leader is not None)  # touching, or joined by its leader
        assert shared(chip.rect, own) <= OWN_BOX_SHARE * area(own)
        for j, other in enumerate(boxes):
            inside = (other[0] + 1, other[1] + 1, other[2], other[3])
            if j != i:
                assert shared(chip.rect, inside) <= OTHER_BOX_SHARE * area(inside)


def gif_frames(picture: np.ndarray, path: Path) -> list[np.ndarray]:
    """`picture` as the camera GIF shows it: shrunk to 640 wide, quantized, encoded, read back."""
    animation = prepare_animation_frame(picture, FrameKey("s", 1, CameraName.FRONT))
    with GifWriter(path) as writer:
        writer.append(animation.gif, 1)
    return list(frames(path))


def test_chips_cover_at_most_a_twentieth_of_a_crowds_gif_and_every_chip_reads(tmp_path):
    """A crowded street (26 people, 6 false alarms) drawn as the frames draw errors, then shrunk to
    the 640-wide GIF: the chips' fills cover at most 5% of it, each chip's text 10 px tall there."""
    image, detections, labels = street_crowd()
    placed = draw_errors(image, judge(detections, labels, RULES, DrawStyle(threshold=0.3)))
    assert len(placed.chips) >= 10
    assert {c.height for c in placed.chips} == {chip_height(frame_font_size(1920))}
    [shown] = gif_frames(image, tmp_path / "crowd.gif")
    assert shown.shape[1] == 640 and chip_cover(shown) <= 0.05, chip_cover(shown)


@pytest.mark.slow
def test_chips_cover_at_most_a_fiftieth_of_a_driving_scenes_full_size_frame():
    """A street ahead with a row of far cars: at most 2% of the full-size frame is chip, and no
    chip covers a far car."""
    image, detections, labels = driving_scene()
    judged = judge(detections, labels, RULES, DrawStyle(threshold=0.3))
    placed = draw_errors(image, judged)
    assert len(placed.chips) >= 8
    assert chip_cover(image) <= 0.02, chip_cover(image)
    far = [b for b in judged.xyxy if b[2] - b[0] < 70]
    for chip in placed.chips:
        for box in far:
            inside = (int(box[0]) + 5, int(box[1]) + 5, int(box[2]) - 4, int(box[3]) - 4)
            assert shared(chip.rect, inside) <= OTHER_BOX_SHARE * area(inside)


@pytest.mark.slow
def test_the_measuring_tool_counts_a_chips_area_not_the_box_lines_around_it():
    canvas = np.full((400, 600, 3), 120, np.uint8)
    boxes = np.array([[100, 150, 400, 350], [403, 150, 500, 350]], np.float64)  # two outlines side by side
    placed = draw_boxes(canvas, boxes, ["#17 car 0.83", None], [COLORS["hit"]] * 2, line_width=2, font_size=30)
    [chip] = placed.chips
    measured = chip_cover(canvas, line_width=2) * canvas.shape[0] * canvas.shape[1]
    assert abs(measured - area(chip.rect)) <= 0.1 * area(chip.rect), (measured, area(chip.rect))
    assert chip_cover(street_crowd()[0]) == 0.0  # the ground alone


@pytest.mark.slow
def test_on_the_real_frame_the_frames_chips_cover_at_most_a_fiftieth_and_never_hide_each_other(
        real_frame_path, real_camera_frames, coco_model, tmp_path):
    """The COCO CenterNet's boxes at its threshold on each camera of the real frame, judged against
    Waymo's labels and drawn as a run draws its frames."""
    from detect.model.detector import Detector
    from detect.waymo.camera_labels import read_labels
    from detect.waymo.readers import read_keys

    detector = Detector(coco_model, threshold=0.3, nms_iou=0.7)
    labels = read_labels(read_keys(str(real_frame_path)))
    assert labels is not None
    for frame in real_camera_frames:
        image = np.array(Image.open(io.BytesIO(frame.jpeg)).convert("RGB"))
        judged = judge(detector(image[None])[0], labels.get(frame.key) or Labels.empty(), RULES, DrawStyle(threshold=0.3))
        placed = draw_errors(image, judged)
        assert chip_overlap(list(placed.chips)) == 0
        assert chip_cover(image) <= 0.02, (frame.camera_name, chip_cover(image))
