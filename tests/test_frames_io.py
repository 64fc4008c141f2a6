import io
import os

import numpy as np
import pytest
from PIL import Image

from detect.core import atomic
from detect.core.cameras import CameraName
from detect.core.errors import UsageError
from detect.core.records import FrameKey
from detect.results.frames import (
    encode_frame,
    frame_path,
    list_frames,
    normalize_frame_format,
    read_frame,
    write_frame,
)

KEY = FrameKey("seg_1", 1553735853462203, CameraName.FRONT_LEFT)


def noise(h=48, w=64, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def test_path_layout(tmp_path):
    assert frame_path(tmp_path, CameraName.FRONT_LEFT, 12, "png") == tmp_path / "frames/FRONT_LEFT/12.png"
    assert frame_path(tmp_path, 5, 7, "JPEG") == tmp_path / "frames/SIDE_RIGHT/7.jpg"


def test_unknown_format_message():
    with pytest.raises(UsageError, match=r"unknown frame format 'bmp': expected one of png, jpg"):
        normalize_frame_format("bmp")


@pytest.mark.parametrize("as_pil", [False, True])
def test_png_is_lossless_and_valid(tmp_path, as_pil):
    array = noise()
    path = write_frame(tmp_path, KEY, Image.fromarray(array) if as_pil else array, "png")
    assert path == tmp_path / "frames/FRONT_LEFT/1553735853462203.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as im:
        im.verify()  # CRCs and chunk structure
    back = read_frame(path)
    assert back.mode == "RGB" and np.array_equal(np.asarray(back), array)


def test_jpeg_frame(tmp_path):
    array = np.full((40, 60, 3), 128, np.uint8)
    path = write_frame(tmp_path, KEY, array, "jpg")
    assert path.suffix == ".jpg"
    back = np.asarray(read_frame(path)).astype(int)
    assert back.shape == (40, 60, 3) and np.abs(back - 128).max() <= 3
    assert Image.open(io.BytesIO(encode_frame(array, "jpeg"))).format == "JPEG"


def test_atomic_write_leaves_no_partial_file_on_error(tmp_path, monkeypatch):
    target = frame_path(tmp_path, KEY.camera_name, KEY.frame_timestamp_micros)
    write_frame(tmp_path, KEY, noise(seed=1))
    before = target.read_bytes()

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_frame(tmp_path, KEY, noise(seed=2))
    assert target.read_bytes() == before  # old file intact
    assert os.listdir(target.parent) == [target.name]  # no temp file left behind


def test_list_frames_orders_and_skips_junk(tmp_path):
    for ts, cam in [(200, CameraName.FRONT), (100, CameraName.SIDE_LEFT), (100, CameraName.FRONT)]:
        write_frame(tmp_path, FrameKey("s", ts, cam), noise(8, 8))
    write_frame(tmp_path, FrameKey("s", 100, CameraName.FRONT), noise(8, 8), "jpg")  # png wins
    junk = tmp_path / "frames"
    (junk / "FRONT" / ".300.abcd.tmp.png").write_bytes(b"partial")
    (junk / "FRONT" / "notes.txt").write_text("x")
    (junk / "NOT_A_CAMERA").mkdir()
    found = [(f.frame_timestamp_micros, f.camera_name, f.path.suffix) for f in list_frames(tmp_path)]
    assert found == [(100, CameraName.FRONT, ".png"), (100, CameraName.SIDE_LEFT, ".png"), (200, CameraName.FRONT, ".png")]
    assert list_frames(tmp_path / "nothing") == []


def test_an_atomic_write_never_writes_through_a_link_planted_at_its_temp_name(tmp_path, monkeypatch):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    monkeypatch.setattr(atomic.secrets, "token_hex", lambda n: "0" * 2 * n)
    target = tmp_path / "out" / "eval.json"
    target.parent.mkdir()
    atomic.temp_path_for(target).symlink_to(victim)
    with pytest.raises(FileExistsError):
        atomic.atomic_write_bytes(target, b"new")
    assert victim.read_text() == "keep me" and not target.exists()


def test_an_atomic_write_gives_a_new_files_mode(tmp_path):
    old = os.umask(0o027)
    try:
        written = atomic.atomic_write_bytes(tmp_path / "a.json", b"{}")
    finally:
        os.umask(old)
    assert written.stat().st_mode & 0o777 == 0o640 and atomic.new_file_mode() == 0o666 & ~old
