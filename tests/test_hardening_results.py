"""Hostile results folders and timelines (issue 31 items 5-7): correct output or a one-line note."""

import numpy as np
from PIL import Image

from detect.sinks.gif import MAX_DELAY_CS, GifWriter, delays_cs


def _frame(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (30, 40, 3), dtype=np.uint8))


def test_a_gap_longer_than_the_gif_format_holds_shows_as_the_maximum_delay(tmp_path):
    # Two segments recorded 1,000 s apart: 100,000 cs does not fit GIF's uint16 delay.
    stamps = [0, 100_000, 1_000_100_000, 1_000_200_000]
    assert delays_cs(stamps) == [10, MAX_DELAY_CS, 10, 10]
    path = tmp_path / "FRONT.gif"
    with GifWriter(path) as gif:
        for i, ts in enumerate(stamps):
            gif.append(_frame(i), ts)
    with Image.open(path) as im:
        durations = []
        for i in range(im.n_frames):
            im.seek(i)
            durations.append(im.info["duration"])
    assert durations == [100, MAX_DELAY_CS * 10, 100, 100]


def test_a_tiny_fps_is_clamped_to_the_maximum_delay():
    assert delays_cs([0, 1], fps=0.001) == [MAX_DELAY_CS, MAX_DELAY_CS]


def test_compare_animates_each_segment_apart_even_with_shared_timestamps_and_a_size_change(tmp_path):
    from detect.compare.pictures import animations
    from detect.core.cameras import CameraName
    from detect.core.records import FrameKey

    frames = {}
    # seg_a: a 1,000 s gap and an image that changes size; seg_b reuses seg_a's timestamps.
    for segment, stamps in (("seg_a", [0, 100_000, 1_000_000_000]), ("seg_b", [0, 100_000])):
        for i, ts in enumerate(stamps):
            path = tmp_path / f"{segment}_{ts}.png"
            _frame(i).resize((40, 30) if i < 2 else (80, 20)).save(path)
            frames[FrameKey(segment, ts, CameraName.FRONT)] = path
    out = tmp_path / "out"
    out.mkdir()
    written = animations(sorted(frames, key=lambda k: (k.segment_context_name, k.frame_timestamp_micros)),
                         frames, frames, ("A", "B"), out)
    assert [p.name for p in written] == ["compare_seg_a_FRONT.gif", "compare_seg_b_FRONT.gif"]
    with Image.open(written[0]) as im:
        assert im.n_frames == 3
