"""Where label chips go: the usual spot when it is free, another when a chip already covers it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from conftest_models import tfjs_saved_model
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from detect.render.chips import CHIP_SPOTS, chip_height, chip_overlap, chip_width, paint_chip, place_chips
from detect.render.draw import draw_boxes, scaled_font_size

ROOT = Path(__file__).resolve().parents[1]


def test_a_chip_alone_sits_where_paint_chip_puts_it():
    canvas_a = np.zeros((100, 200, 3), np.uint8)
    canvas_b = canvas_a.copy()
    box = (40, 50, 120, 90)
    paint_chip(canvas_a, box, "car 0.87", (200, 30, 30), 12)
    draw_boxes(canvas_b, np.array([box], np.float64), ["car 0.87"], [(200, 30, 30)], line_width=1, font_size=12)
    chip = np.all(canvas_a == (200, 30, 30), -1)
    assert chip.any() and np.array_equal(chip & np.all(canvas_b == (200, 30, 30), -1), chip)
    assert place_chips([box], [(30, 10)], 200, 100) == [(40, 40)]  # above the top-left corner


def test_a_second_chip_on_the_same_corner_moves_to_the_next_free_spot():
    boxes = [(40, 50, 120, 90), (40, 50, 100, 95)]
    sizes = [(50, 10), (50, 10)]
    spots = place_chips(boxes, sizes, 200, 120)
    assert spots == [(40, 40), (40, 50)]  # the second: just inside its box's top
    assert chip_overlap(spots, sizes) == 0
    assert chip_overlap(place_chips(boxes, sizes, 200, 120, spots=CHIP_SPOTS[:1]), sizes) == 50 * 10


def test_when_every_spot_is_covered_the_least_covered_one_is_taken():
    box = (20, 20, 60, 40)
    size = (40, 21)
    blockers = [(0, 0, 100, 19), (0, 20, 100, 40)]  # a wall of chips above and inside
    spots = place_chips([*blockers, box], [(100, 20), (100, 21), size], 100, 80)
    assert spots[-1] == (20, 41)  # below the box: nothing there


def test_boxes_without_a_chip_get_no_spot():
    assert place_chips([None, (0, 0, 5, 5)], [(10, 10), None], 50, 50) == [None, None]


@settings(max_examples=examples(0.5), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 150), st.integers(0, 90), st.integers(1, 80), st.integers(1, 60),
                          st.integers(5, 60), st.integers(5, 15)), min_size=1, max_size=25))
def test_every_chip_stays_inside_the_image_and_no_placement_hides_more_than_the_usual_spot_alone(rows):
    width, height = 160, 100
    boxes = [(x, y, min(width - 1, x + w), min(height - 1, y + h)) for x, y, w, h, _, _ in rows]
    sizes = [(cw, ch) for *_, cw, ch in rows]
    spots = place_chips(boxes, sizes, width, height)
    for (x, y), (cw, ch) in zip(spots, sizes, strict=True):
        assert 0 <= x <= width - cw and 0 <= y <= height - ch
    # each chip, when placed, hides no more of the chips before it than the usual spot would
    for i in range(1, len(boxes)):
        usual = place_chips(boxes[i:i + 1], sizes[i:i + 1], width, height, spots=CHIP_SPOTS[:1])
        before = spots[:i]
        assert (chip_overlap([*before, spots[i]], sizes[:i + 1]) - chip_overlap(before, sizes[:i])
                <= chip_overlap([*before, *usual], sizes[:i + 1]) - chip_overlap(before, sizes[:i]))


@pytest.mark.slow
def test_on_the_real_frame_chips_hide_far_less_of_each_other(real_camera_frames, tmp_path):
    """The default model's boxes at its threshold on each camera of the real frame: the pixels
    chips share, placed at the usual spot only (before) and by `place_chips` (after)."""
    from detect.model.detector import Detector
    from detect.model.tfjs import centernet

    model = tfjs_saved_model(centernet.HEAD, ROOT / "models" / "centernet_mobilenetv3_coco", tmp_path)
    detector = Detector(model, threshold=0.3, nms_iou=0.7)
    before = after = 0
    for frame in real_camera_frames:
        image = np.asarray(Image.open(io.BytesIO(frame.jpeg)).convert("RGB"))
        height, width = image.shape[:2]
        dets = detector(image[None])[0]
        size = scaled_font_size(width, height)
        boxes = [tuple(int(round(min(max(v, 0), lim - 1))) for v, lim in zip(b, (width, height, width, height),
                                                                            strict=True)) for b in dets.xyxy]
        sizes = [(chip_width(f"{label} {score:.2f}", size), chip_height(size))
                 for label, score in zip(dets.labels, dets.scores, strict=True)]
        before += chip_overlap(place_chips(boxes, sizes, width, height, spots=CHIP_SPOTS[:1]), sizes)
        after += chip_overlap(place_chips(boxes, sizes, width, height), sizes)
    assert before > 10_000 and after < before / 5, (before, after)
