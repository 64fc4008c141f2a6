import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFont

from detect.core.errors import UsageError
from detect.core.records import Detections
from detect.render.chips import chip_width, font
from detect.render.draw import DrawStyle, draw_boxes, draw_detections, select_detections

GOLDEN = Path(__file__).parent / "golden" / "draw_detections.png"
REGENERATE = os.environ.get("DETECT_REGENERATE_GOLDEN") == "1"


def synthetic_image(h: int = 120, w: int = 160) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // w, y * 255 // h, np.full_like(x, 90)], -1).astype(np.uint8)


def dets(boxes, scores=None, ids=None, labels=None) -> Detections:
    n = len(boxes)
    scores = [0.9] * n if scores is None else scores
    ids = [3] * n if ids is None else ids
    labels = tuple(labels or ["car"] * n)
    return Detections(np.array(boxes, np.float32).reshape(-1, 4), scores, ids, labels)


GOLDEN_DETECTIONS = dets(
    [[20, 30, 90, 100], [100, 5, 150, 60], [-20, 90, 40, 140], [140, -10, 200, 20], [60, 60, 60, 60]],
    [0.87, 0.65, 0.55, 0.95, 0.7],
    [3, 1, 8, 10, 3],
    ["car", "person", "truck", "traffic light", "car"],
)


def test_golden_image():
    out = Image.fromarray(draw_detections(synthetic_image(), GOLDEN_DETECTIONS, DrawStyle(line_width=2, font_size=12)))
    if REGENERATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        out.save(GOLDEN)
    assert GOLDEN.exists(), f"{GOLDEN} missing: run with DETECT_REGENERATE_GOLDEN=1 to create it"
    expected = np.asarray(Image.open(GOLDEN).convert("RGB"))
    actual = np.asarray(out)
    if not np.array_equal(actual, expected):
        failed = GOLDEN.with_name("draw_detections.actual.png")
        out.save(failed)
        pytest.fail(
            f"drawing differs from {GOLDEN} ({np.count_nonzero(np.any(actual != expected, -1))} pixels; "
            f"actual saved to {failed}). If the change is intended, regenerate with "
            "DETECT_REGENERATE_GOLDEN=1 pytest tests/test_draw.py and review the PNG."
        )


def test_input_not_modified_and_output_is_new_image():
    image = synthetic_image()
    before = image.copy()
    out = draw_detections(image, GOLDEN_DETECTIONS)
    assert np.array_equal(image, before)
    assert isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (120, 160, 3)
    assert out is not image and not np.shares_memory(out, image)
    assert not np.array_equal(out, image)


def test_in_place_draws_the_same_pixels_on_the_callers_array():
    image = synthetic_image()
    copied = draw_detections(image, GOLDEN_DETECTIONS)
    out = draw_detections(image, GOLDEN_DETECTIONS, in_place=True)
    assert out is image
    assert np.array_equal(image, copied)


@pytest.mark.parametrize(
    "image",
    [Image.fromarray(synthetic_image()), synthetic_image()[:, ::2],
     np.frombuffer(synthetic_image().tobytes(), np.uint8).reshape(120, 160, 3)],
    ids=["pil", "strided", "read-only"],
)
def test_in_place_needs_a_writable_contiguous_array(image):
    with pytest.raises(ValueError, match="in_place drawing needs a writable, C-contiguous numpy array"):
        draw_detections(image, GOLDEN_DETECTIONS, in_place=True)


def test_pil_input_not_modified():
    image = Image.fromarray(synthetic_image())
    before = np.asarray(image).copy()
    out = draw_detections(image, GOLDEN_DETECTIONS)
    assert out is not image and isinstance(out, Image.Image) and out.mode == "RGB"
    assert np.array_equal(np.asarray(image), before)
    # PIL in, PIL out, and the very same pixels as the array path
    assert np.array_equal(np.asarray(out), draw_detections(before, GOLDEN_DETECTIONS))


@pytest.mark.parametrize(
    "box",
    [
        [0, 0, 159, 119],  # the whole image
        [-50, -50, 10, 10],  # top-left corner, mostly outside
        [150, 110, 400, 300],  # bottom-right, mostly outside
        [-100, -100, -10, -10],  # fully outside
        [200, 200, 300, 300],  # fully outside
        [80, 60, 80, 60],  # zero size
        [80, 60, 80, 100],  # zero width
        [0, 119, 159, 119],  # a line on the bottom edge
    ],
)
def test_edge_and_outside_boxes_are_clipped(box):
    out = draw_detections(synthetic_image(), dets([box]), DrawStyle(font_size=12))
    assert out.shape == (120, 160, 3)


def test_non_finite_boxes_are_skipped():
    image = synthetic_image()
    out = draw_detections(image, dets([[np.nan, 0, 10, 10]]))
    assert np.array_equal(np.asarray(out), image)


def test_chip_stays_inside_image_for_box_at_right_edge():
    image = np.zeros((60, 80, 3), np.uint8)
    out = np.asarray(draw_detections(image, dets([[75, 0, 79, 59]], labels=["a-long-label"]), DrawStyle(font_size=12)))
    # The chip is wider than the gap right of the box: it is pulled left into the image, not cut,
    # and says only the score (the long text is wider than the narrow box).
    painted = np.flatnonzero(out.any(-1).any(0))
    assert painted[0] < 75 and painted[-1] == 79
    assert not out[:, : 80 - chip_width(".90", 12)].any()


def test_threshold_classes_and_max_boxes():
    d = dets([[0, 0, 5, 5]] * 4, [0.9, 0.2, 0.6, 0.7], [1, 1, 3, 3], ["person", "person", "car", "car"])
    chosen = select_detections(d, DrawStyle(threshold=0.5, max_boxes=2))
    assert list(chosen.scores) == pytest.approx([0.9, 0.7])
    chosen = select_detections(d, DrawStyle(threshold=0.5, classes={3}))
    assert chosen.labels == ("car", "car") and list(chosen.scores) == pytest.approx([0.7, 0.6])
    image = synthetic_image()
    none = draw_detections(image, d, DrawStyle(threshold=0.95))
    assert np.array_equal(np.asarray(none), image)


def test_labels_and_scores_off_draws_boxes_only():
    image = np.zeros((60, 80, 3), np.uint8)
    out = np.asarray(draw_detections(image, dets([[20, 20, 60, 50]]),
                                     DrawStyle(show_labels=False, show_scores=False, line_width=1)))
    # Only the 1-px outline is painted: nothing above the box (where a chip would go).
    assert not out[:20].any()
    assert out[20, 20:61].all() and not out[30, 30].any()


def test_dashed_style_for_overlays():
    image = np.zeros((60, 80, 3), np.uint8)
    solid = np.asarray(draw_detections(image, dets([[10, 10, 70, 50]]), DrawStyle(show_labels=False, show_scores=False)))
    dashed = np.asarray(draw_detections(image, dets([[10, 10, 70, 50]]),
                                        DrawStyle(show_labels=False, show_scores=False, dashed=True)))
    assert 0 < np.count_nonzero(dashed.any(-1)) < np.count_nonzero(solid.any(-1))


def test_draw_boxes_composes_a_second_set_on_one_canvas():
    canvas = np.zeros((60, 80, 3), np.uint8)
    draw_boxes(canvas, np.array([[10, 10, 30, 30]]), [None], [(0, 255, 0)], line_width=1, dashed=True)
    draw_boxes(canvas, np.array([[40, 10, 70, 50]]), ["car"], [(255, 0, 0)], line_width=1, font_size=10)
    out = canvas
    assert (out[10, 10] == (0, 255, 0)).all() and (out[50, 40] == (255, 0, 0)).all()
    with pytest.raises(ValueError, match=r"one entry per box, got 1, 2 and 1"):
        draw_boxes(canvas, np.array([[0, 0, 1, 1]]), ["a", "b"], [(0, 0, 0)])


def test_font_is_truetype():
    assert isinstance(font(20), ImageFont.FreeTypeFont)


@pytest.mark.parametrize(
    ("image", "error", "message"),
    [
        (np.zeros((10, 10, 3), np.float32), ValueError, r"image must have dtype uint8, got float32"),
        (np.zeros((10, 10), np.uint8), ValueError, r"image must have shape \(H, W, 3\), got \(10, 10\)"),
        (np.zeros((10, 10, 4), np.uint8), ValueError, r"image must have shape \(H, W, 3\), got \(10, 10, 4\)"),
        (np.zeros((0, 10, 3), np.uint8), ValueError, r"image must be non-empty, got shape \(0, 10, 3\)"),
        ([[1, 2, 3]], TypeError, r"image must be a numpy array or a PIL image, got list"),
    ],
)
def test_image_validation_messages(image, error, message):
    with pytest.raises(error, match=message):
        draw_detections(image, Detections.empty())


def test_detections_type_message():
    with pytest.raises(TypeError, match="detections must be a Detections, got dict"):
        draw_detections(synthetic_image(), {})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 1.5}, "threshold must be between 0 and 1, got 1.5"),
        ({"line_width": 0}, "line_width must be at least 1, got 0"),
        ({"font_size": -2}, "font_size must be at least 1, got -2"),
        ({"max_boxes": -1}, "max_boxes must be 0 or more, got -1"),
        ({"palette": ()}, r"palette must be a non-empty sequence of \(r, g, b\) colors in 0-255"),
        ({"palette": ((0, 0, 300),)}, r"palette must be a non-empty sequence"),
    ],
)
def test_style_validation_messages(kwargs, message):
    with pytest.raises(UsageError, match=message):
        DrawStyle(**kwargs)
