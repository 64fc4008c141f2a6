import gc
import os
import tracemalloc

import numpy as np
import pytest
from PIL import Image

from detect.results.gif import MIN_LOOP_CS, GifFrame, GifWriter, delays_cs, encode_gif_frame


def frame(seed, size=(40, 30)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def read_back(path):
    with Image.open(path) as im:
        info = []
        for i in range(im.n_frames):
            im.seek(i)
            info.append((im.info["duration"], im.size, np.asarray(im.convert("RGB"))))
        return im.n_frames, im.info.get("loop"), info


def test_frames_durations_size_and_loop(tmp_path):
    path = tmp_path / "FRONT.gif"
    # 10 Hz with jitter, and one dropped frame (a 200 ms gap).
    stamps = [1_000_000, 1_100_400, 1_199_800, 1_400_000, 1_500_100]
    images = [frame(i) for i in range(len(stamps))]
    with GifWriter(path) as gif:
        for image, ts in zip(images, stamps):
            gif.append(image, ts)
    n, loop, info = read_back(path)
    assert n == 5 and loop == 0
    # 100, 100, 200, 100 ms and the last repeating the previous: 0.6 s, slowed down to last 2 s
    assert [d for d, _, _ in info] == [330, 340, 660, 340, 330]
    assert all(size == (40, 30) for _, size, _ in info)
    # Pixels are exactly the fast-octree quantization of each frame.
    for image, (_, _, pixels) in zip(images, info):
        expected = image.quantize(256, method=Image.Quantize.FASTOCTREE).convert("RGB")
        assert np.array_equal(pixels, np.asarray(expected))


def test_delays_keep_total_duration():
    stamps = [i * 66_667 for i in range(31)]  # 15 fps: 6.67 cs a frame
    delays = delays_cs(stamps)
    assert set(delays) == {6, 7}
    assert sum(delays[:-1]) == 200  # 30 intervals of 66.667 ms = 2 s exactly
    assert delays_cs([5]) == [10]
    assert delays_cs([0, 100]) == [100, 100]  # a 4 cs clip: slowed down to 2 s
    assert delays_cs([0, 1, 2], fps=4) == [67, 66, 67]
    assert delays_cs([i * 10_000 for i in range(300)], fps=4) == [25] * 300  # 75 s: real time


def test_a_clip_shorter_than_two_seconds_is_slowed_down_to_last_two_keeping_its_rhythm(tmp_path):
    """7 frames at 30 fps (0.23 s, a blink on a loop) play for 2 s; a gap stays twice as long."""
    stamps = [0, 33_333, 66_667, 100_000, 166_667, 200_000, 233_333]  # a dropped frame after the 4th
    path = tmp_path / "short.gif"
    with GifWriter(path) as gif:
        for i, ts in enumerate(stamps):
            gif.append(frame(i), ts)
    durations = [d for d, _, _ in read_back(path)[2]]
    assert durations == [250, 250, 250, 500, 250, 250, 250]  # 2 s
    assert delays_cs(stamps) == [d // 10 for d in durations]
    longer = [i * 100_000 for i in range(21)]  # 2.1 s at 10 Hz: as recorded
    with GifWriter(tmp_path / "long.gif") as gif:
        for i, ts in enumerate(longer):
            gif.append(frame(i), ts)
    assert [d for d, _, _ in read_back(tmp_path / "long.gif")[2]] == [100] * 21


def test_fixed_fps_and_single_frame(tmp_path):
    with GifWriter(tmp_path / "a.gif", fps=5) as gif:
        gif.append(frame(0), 0)
        gif.append(frame(1), 10)
    assert [d for d, _, _ in read_back(tmp_path / "a.gif")[2]] == [1000, 1000]  # 0.4 s at 5 fps: slowed to 2 s
    with GifWriter(tmp_path / "b.gif") as gif:
        gif.append(encode_gif_frame(frame(0)), 0)
    assert read_back(tmp_path / "b.gif")[:2] == (1, 0)


def test_order_and_size_errors(tmp_path):
    with GifWriter(tmp_path / "a.gif") as gif:
        gif.append(frame(0), 100)
        with pytest.raises(ValueError, match="increasing timestamp order: got 100 after 100"):
            gif.append(frame(1), 100)
        with pytest.raises(ValueError, match="GIF frames must all be 40x30, got 20x30"):
            gif.append(frame(1, (20, 30)), 200)
    with pytest.raises(ValueError, match="fps must be positive, got 0"):
        GifWriter(tmp_path / "b.gif", fps=0)


def test_error_leaves_no_partial_file_and_keeps_old_one(tmp_path):
    path = tmp_path / "FRONT.gif"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"):
        with GifWriter(path) as gif:
            gif.append(frame(0), 0)
            gif.append(frame(1), 100_000)
            raise RuntimeError("boom")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["FRONT.gif"]


def test_no_frames_no_file(tmp_path):
    with GifWriter(tmp_path / "empty.gif") as gif:
        pass
    assert gif.close() is None
    assert os.listdir(tmp_path) == []


def fresh(f: GifFrame) -> GifFrame:
    """A new copy each time, as frames from a pipeline are: a writer that kept them would grow."""
    return GifFrame(f.width, f.height, bytes(bytearray(f.block)))


@pytest.mark.slow
def test_memory_stays_flat_over_many_frames(tmp_path):
    encoded = [encode_gif_frame(frame(i, (160, 120))) for i in range(4)]
    with GifWriter(tmp_path / "long.gif") as gif:
        tracemalloc.start()
        try:
            for i in range(50):
                gif.append(fresh(encoded[i % 4]), i * 100_000)
            gc.collect()
            after_50 = tracemalloc.get_traced_memory()[0]
            for i in range(50, 400):
                gif.append(fresh(encoded[i % 4]), i * 100_000)
            gc.collect()
            after_400, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    frame_bytes = len(encoded[0].block)  # ~50 KB of noise a frame
    # 350 more frames would hold ~17 MB if kept; the writer keeps at most one (and, at the start,
    # the frames of the first 2 s: 20 at 10 Hz, in case the clip ends before)
    assert after_400 - after_50 < frame_bytes
    assert peak < (MIN_LOOP_CS // 10 + 4) * frame_bytes
    assert read_back(tmp_path / "long.gif")[0] == 400
