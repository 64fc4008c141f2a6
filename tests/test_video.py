import os
from fractions import Fraction

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from detect.results.mp4 import Mp4Writer, even_rgb, fps_from_timestamps


def frame(i, size=(63, 41)) -> Image.Image:
    rng = np.random.default_rng(i)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def read_back(path):
    reader = imageio.get_reader(path, format="FFMPEG")
    try:
        meta = reader.get_meta_data()
        frames = [f for f in reader]
    finally:
        reader.close()
    return meta, frames


def test_frame_count_even_dims_fps_and_codec(tmp_path):
    path = tmp_path / "FRONT.mp4"
    stamps = [1_000_000 + i * 100_000 + (i % 2) * 300 for i in range(12)]
    with Mp4Writer(path, probe_frames=4) as mp4:
        for i, ts in enumerate(stamps):
            mp4.append(frame(i), ts)
    meta, frames = read_back(path)
    assert len(frames) == 12
    assert frames[0].shape == (42, 64, 3)  # 63x41 padded to even
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p")
    assert meta["fps"] == pytest.approx(10.0, abs=0.05)


def test_fps_from_timestamps():
    assert fps_from_timestamps([0, 100_000, 200_000, 400_000]) == 10  # median ignores the gap
    assert fps_from_timestamps([0, 66_667, 133_333]) == Fraction(1500, 100)
    assert fps_from_timestamps([5]) == 10


def test_few_frames_and_fixed_fps(tmp_path):
    with Mp4Writer(tmp_path / "a.mp4", fps=5) as mp4:
        mp4.append(np.zeros((20, 30, 3), np.uint8), 0)
        mp4.append(np.zeros((20, 30, 3), np.uint8), 1)
    meta, frames = read_back(tmp_path / "a.mp4")
    assert len(frames) == 2 and meta["fps"] == pytest.approx(5)


def test_even_rgb_pads_with_black():
    out = even_rgb(np.full((3, 5, 3), 200, np.uint8))
    assert out.shape == (4, 6, 3) and out[3].max() == 0 and out[:, 5].max() == 0 and out[:3, :5].min() == 200


def test_errors_and_no_partial_file(tmp_path):
    path = tmp_path / "a.mp4"
    with pytest.raises(ValueError, match="MP4 frames must all be 64x42, got 10x10"):
        with Mp4Writer(path, fps=10) as mp4:
            mp4.append(frame(0), 0)
            mp4.append(frame(1, (10, 10)), 1)
    assert os.listdir(tmp_path) == []
    with Mp4Writer(path) as mp4:
        mp4.append(frame(0), 5)
        with pytest.raises(ValueError, match="increasing timestamp order: got 5 after 5"):
            mp4.append(frame(1), 5)
    assert os.listdir(tmp_path) == ["a.mp4"]
    with Mp4Writer(tmp_path / "none.mp4") as mp4:
        pass
    assert os.listdir(tmp_path) == ["a.mp4"]
