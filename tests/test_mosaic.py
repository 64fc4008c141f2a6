import numpy as np
import pytest
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.records import FrameKey
from detect.render.chips import chip_height, paint_chip
from detect.render.draw import scaled_font_size
from detect.render.mosaic import MISSING_FILL, compose_mosaic, mosaic_layout
from detect.sinks.animations import DEFAULT_WIDTH, prepare_animation_frame


def tile(color, size):
    return Image.new("RGB", size, color)


def test_layout_matches_reduced_waymo_frames():
    layout = mosaic_layout(320)
    # 1920x1280 reduced 3 then 2 -> 320x214; 1920x886 -> 320x148.
    assert layout.row_heights == (214, 148)
    assert layout.size == (960, 362)
    assert Image.new("RGB", (1920, 886)).reduce(3).reduce(2).size == (320, 148)
    with pytest.raises(ValueError, match="tile_width must be at least 8, got 2"):
        mosaic_layout(2)


def test_tiles_in_car_order_and_missing_camera_is_dark():
    layout = mosaic_layout(64)
    top, bottom = layout.row_heights
    colors = {
        CameraName.FRONT_LEFT: (255, 0, 0),
        CameraName.FRONT: (0, 255, 0),
        CameraName.FRONT_RIGHT: (0, 0, 255),
        CameraName.SIDE_RIGHT: (255, 255, 0),
    }
    tiles = {cam: tile(c, (64, top if cam <= 3 else bottom)) for cam, c in colors.items()}
    out = np.asarray(compose_mosaic(tiles, layout, ["segment", "t = 0.0 s"]))
    assert out.shape == (top + bottom, 192, 3)
    # Sample cell bottoms (camera names sit at the top-left of each cell).
    assert tuple(out[top - 2, 32]) == (255, 0, 0)
    assert tuple(out[top - 2, 96]) == (0, 255, 0)
    assert tuple(out[top - 2, 160]) == (0, 0, 255)
    assert tuple(out[top + bottom - 2, 160]) == (255, 255, 0)
    assert tuple(out[top + bottom - 4, 4]) == MISSING_FILL  # SIDE_LEFT missing
    assert out[top:, 64:128].any()  # caption written in the middle bottom cell


def test_tile_of_another_size_is_fitted():
    layout = mosaic_layout(64)
    out = compose_mosaic({CameraName.FRONT: tile((0, 255, 0), (200, 50))}, layout)
    assert out.size == layout.size
    assert tuple(np.asarray(out)[layout.row_heights[0] // 2, 96]) == (0, 255, 0)


def test_a_label_chip_stays_legible_in_the_mosaic():
    """A chip drawn on a full 1920x1280 frame (47 px tall, its text 30 px) is 16 px tall in a mosaic
    shrunk from the frames, as in the camera GIFs (text 10 px); with tiles half the GIF width it was
    8 px, its text about 4 px high."""
    size = scaled_font_size(1920, 1280)
    frame = np.zeros((1280, 1920, 3), np.uint8)
    paint_chip(frame, (600, 600, 900, 800), "car 0.87", (255, 0, 0), size)
    assert size == 30 and chip_height(size) == 47
    tile = prepare_animation_frame(frame, FrameKey("s", 1, CameraName.FRONT), DEFAULT_WIDTH, gif=False).tile
    layout = mosaic_layout(tile.width)
    out = np.asarray(compose_mosaic({CameraName.FRONT: tile}, layout))
    red = (out[:, :, 0] > 128) & (out[:, :, 1] < 100) & (out[:, :, 2] < 100)
    rows = np.flatnonzero(red.any(axis=1))
    assert layout.size == (1920, 427 + 296)
    assert rows[-1] - rows[0] + 1 == 16
