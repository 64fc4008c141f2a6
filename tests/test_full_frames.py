"""The redraw's decode without TensorFlow gives the run's pixels (tf.data's decode) byte for byte,
refuses what the run refuses, and falls back to TensorFlow for a JPEG simplejpeg will not take."""

from __future__ import annotations

import io

import numpy as np
import pytest
import simplejpeg
from PIL import Image

from detect.model import full_frames
from detect.model.full_frames import decode_full_frame, decode_full_frames
from detect.model.inputs import decode_stream
from detect.waymo.readers import iter_frames


def jpeg_of(pixels: np.ndarray, **options) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", **options)
    return out.getvalue()


def noise(height: int = 48, width: int = 64, channels: int = 3) -> np.ndarray:
    shape = (height, width, channels) if channels > 1 else (height, width)
    return np.random.default_rng(3).integers(0, 256, shape, np.uint8)


def run_pixels(items: list[tuple[int, bytes]]) -> dict[int, np.ndarray]:
    return {d.index: d.full for d in decode_stream(items, input_size=None, keep_full=True)}


@pytest.mark.slow
def test_the_real_frames_pixels_equal_the_runs_byte_for_byte(real_frame_path):
    items = [(i, f.jpeg) for i, f in enumerate(iter_frames(str(real_frame_path)))]
    ours = list(decode_full_frames(items, threads=2))
    theirs = run_pixels(items)
    assert [d.index for d in ours] == sorted(theirs) == list(range(5))
    for decoded in ours:
        assert decoded.full is not None and decoded.full.flags.writeable  # drawn on in place
        assert (decoded.width, decoded.height) == (decoded.full.shape[1], decoded.full.shape[0])
        np.testing.assert_array_equal(decoded.full, theirs[decoded.index])


@pytest.mark.slow
@pytest.mark.parametrize("pixels, options", [
    (noise(channels=1), {}),  # grayscale: three equal channels, as channels=3 gives
    (noise(), {"subsampling": 0}),  # 4:4:4
    (noise(), {"subsampling": 2, "quality": 60}),  # 4:2:0
    (noise(), {"progressive": True}),
])
def test_other_jpeg_flavours_equal_the_runs_too(pixels, options):
    jpeg = jpeg_of(pixels, **options)
    decoded = decode_full_frame(0, jpeg)
    assert decoded is not None
    np.testing.assert_array_equal(decoded.full, run_pixels([(0, jpeg)])[0])


def test_what_the_run_drops_is_dropped_and_the_rest_keep_their_order():
    good = jpeg_of(noise())
    tiny = jpeg_of(noise(8, 8))  # under the smallest side a run decodes
    items = [(0, good), (1, b"not a jpeg"), (2, good[: len(good) // 3]), (3, tiny), (4, good)]
    assert [d.index for d in decode_full_frames(items, threads=2)] == [0, 4] == sorted(run_pixels(items))
    assert decode_full_frame(0, jpeg_of(noise(40, 40)), max_pixels=40 * 39) is None  # over --max-pixels


@pytest.mark.slow
def test_a_jpeg_simplejpeg_refuses_is_decoded_by_tensorflow(monkeypatch):
    jpeg = jpeg_of(noise())

    def refuse(*_args, **_kwargs):
        raise ValueError("unsupported")

    monkeypatch.setattr(full_frames.simplejpeg, "decode_jpeg", refuse)
    decoded = decode_full_frame(7, jpeg)
    assert decoded is not None and decoded.index == 7
    np.testing.assert_array_equal(decoded.full, run_pixels([(0, jpeg)])[0])
    assert simplejpeg.decode_jpeg is refuse
