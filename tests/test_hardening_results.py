"""Hostile results folders and timelines (damaged journals, tables and manifests; frames out of order):
correct output or a one-line note."""

import os
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from detect.results.gif import MAX_DELAY_CS, GifWriter, delays_cs


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
    from detect.compare.frame_pairs import animations
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
    notes: list[str] = []
    written = animations(sorted(frames, key=lambda k: (k.segment_context_name, k.frame_timestamp_micros)),
                         frames, frames, ("A", "B"), out, notes)
    assert notes == []
    assert [p.name for p in written] == ["compare_seg_a_FRONT.gif", "compare_seg_b_FRONT.gif"]
    with Image.open(written[0]) as im:
        assert im.n_frames == 3


def _huge_png(path, width=20000, height=20000):
    """A PNG whose header claims width x height (a few hundred bytes on disk; a bomb if decoded)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))


@pytest.fixture
def hostile_frames(tmp_path):
    """One good frame per timestamp, then one hostile frame for each way a results folder can lie."""
    from detect.core.cameras import CameraName
    from detect.core.records import FrameKey

    outside = tmp_path / "outside.png"
    _frame(99).save(outside)
    good = tmp_path / "good.png"
    _frame(0).save(good)
    link = tmp_path / "link.png"
    link.symlink_to(outside)
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(good.read_bytes()[:200])
    huge = tmp_path / "huge.png"
    _huge_png(huge)
    paths = [good, link, fifo, truncated, huge]
    return {FrameKey("seg", i * 100_000, CameraName.FRONT): p for i, p in enumerate(paths)}


@pytest.mark.timeout(30)
def test_links_fifos_truncated_and_huge_frames_are_left_out_of_compares_pictures_with_a_note(tmp_path, hostile_frames):
    from detect.compare.frame_pairs import animations, gallery
    from detect.compare.stats import Disagreement

    out = tmp_path / "out"
    out.mkdir()
    notes: list[str] = []
    keys = list(hostile_frames)
    written = animations(keys, hostile_frames, hostile_frames, ("A", "B"), out, notes)
    assert [p.name for p in written] == ["compare_FRONT.gif"]
    with Image.open(written[0]) as im:
        assert im.n_frames == 1  # only the good frame; nothing from outside the folder
    assert len(notes) == 4 and all("left out of the pictures" in n for n in notes)
    assert "link.png is a symbolic link" in notes[0]
    assert "fifo.png is a FIFO" in notes[1]
    assert "truncated.png does not decode" in notes[2]
    assert "huge.png: image is 20000x20000 (400,000,000 pixels), over the limit" in notes[3]
    notes.clear()
    shown = gallery([Disagreement(1, k, "boxes") for k in keys], hostile_frames, hostile_frames, ("A", "B"), out, notes)
    assert list(shown) == keys[:1] and len(notes) == 4


@pytest.mark.parametrize("text", ['{"images_per_second": NaN}', '{"nms_iou": Infinity}', "[" * 100_000 + "]" * 100_000])
def test_a_manifest_with_nan_infinity_or_deep_nesting_is_one_line_naming_it(tmp_path, text):
    from detect.core.errors import InputError
    from detect.engine.lifecycle import finished_manifest
    from detect.results.results_folder import read_manifest

    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(InputError) as err:
        read_manifest(tmp_path)
    assert str(err.value).startswith(f"{tmp_path / 'manifest.json'}: cannot read the manifest (")
    assert "\n" not in str(err.value)
    assert finished_manifest(tmp_path) is None  # a resumed run treats it as not finished


def test_a_huge_png_header_is_named_by_its_size_not_as_unreadable(tmp_path):
    from detect.core.files import UnreadableFileError
    from detect.results.frames import read_frame
    from detect.waymo.images import jpeg_size, png_size

    huge = tmp_path / "huge.png"
    _huge_png(huge, 20000, 30000)
    assert png_size(huge.read_bytes()) == jpeg_size(huge.read_bytes()) == (20000, 30000)
    with pytest.raises(UnreadableFileError) as err:
        read_frame(huge)
    # reading a results folder back has no --max-pixels to name
    assert str(err.value) == f"{huge}: image is 20000x30000 (600,000,000 pixels), over the limit of 16,777,216; not decoded"
    wide = tmp_path / "wide.png"
    _huge_png(wide, 20000, 16)
    with pytest.raises(UnreadableFileError, match=r"image is 20000x16: each side must be 16-16384 pixels"):
        read_frame(wide)
    assert png_size(b"\x89PNG\r\n\x1a\n") is None and png_size(b"not a png at all, not at all") is None
