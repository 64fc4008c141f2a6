"""The disk estimate before a run: images counted without reading one, bytes per output kind, and the
refusal when --out's disk cannot hold them."""

from __future__ import annotations

import io
import shutil
from collections import namedtuple
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from detect.cli import main
from detect.core.cameras import CameraName
from detect.results.disk_cost import BYTES_PER_IMAGE, ImageCount, count_images, human_bytes, output_bytes
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import resolve_one

pytestmark = pytest.mark.usefixtures("load_each_model_once")
Usage = namedtuple("Usage", "total used free")


def test_images_are_counted_from_the_parquet_footer_and_the_tfrecord_headers(tiny_v2_path, real_frame_path, tmp_path):
    assert count_images(resolve_one(str(tiny_v2_path))) == ImageCount(15, True)  # 3 timestamps x 5 cameras
    front = FrameFilter(cameras=(CameraName.FRONT,), first_frame=1, max_frames=1)
    assert count_images(resolve_one(str(tiny_v2_path)), front).images == 1
    assert count_images(resolve_one(str(real_frame_path))) == ImageCount(5, True)
    assert count_images(resolve_one(str(real_frame_path)), FrameFilter(first_frame=1)).images == 0
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(real_frame_path.read_bytes()[:-10])  # the headers no longer add up: estimated from the size
    assert count_images(resolve_one(str(cut))) == ImageCount(5, False)


def one_camera_file(tiny_v2_path, folder):
    """The tiny segment's FRONT images alone: 3 rows, one camera (as a MOT17 clip is)."""
    table = pq.read_table(tiny_v2_path)
    path = folder / "camera_image" / tiny_v2_path.name
    path.parent.mkdir(parents=True)
    pq.write_table(table.filter(pc.equal(table.column("key.camera_name"), 1)), path)
    return path


def test_a_one_camera_v2_file_counts_its_rows_not_five_cameras_a_frame(tiny_v2_path, tmp_path):
    """One row is one image: 3 FRONT rows are 3 images (rounded up to whole five-camera frames they
    were 5); cameras and frames chosen are counted from the key columns."""
    source = resolve_one(str(one_camera_file(tiny_v2_path, tmp_path)))
    assert count_images(source) == ImageCount(3, True)
    assert count_images(source, FrameFilter(first_frame=1)) == ImageCount(2, True)
    assert count_images(source, FrameFilter(cameras=(CameraName.SIDE_LEFT,))) == ImageCount(0, True)
    both = FrameFilter(cameras=(CameraName.FRONT, CameraName.SIDE_LEFT), max_frames=2)
    assert count_images(resolve_one(str(tiny_v2_path)), both) == ImageCount(4, True)  # 2 frames x 2 cameras


def test_the_disk_line_of_a_one_camera_segment_names_its_true_image_count(tiny_v2_path, stub_dynamic_dir, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 0, 10**6))
    err = io.StringIO()
    args = ["segment", str(one_camera_file(tiny_v2_path, tmp_path)), "--out", str(tmp_path / "out"), "--model",
            str(stub_dynamic_dir)]
    assert main(args, stderr=err) == 2
    assert err.getvalue().splitlines()[0] == (
        "detect: disk: about 9.7 MB for 3 images (PNG frames 9.1 MB, GIFs 627 kB, tables 17 kB); 1.0 MB free")


def test_the_bytes_of_each_output_kind_for_a_known_input():
    assert output_bytes(1000, frames="png", gif=True, mp4=False) == {
        "PNG frames": 1000 * BYTES_PER_IMAGE["png"],
        "GIFs": 1000 * (BYTES_PER_IMAGE["gif"] + BYTES_PER_IMAGE["mosaic_gif"]),
        "tables": 1000 * BYTES_PER_IMAGE["tables"]}
    assert output_bytes(10, frames=None, gif=True, mp4=True, gif_width=1280, mosaic=False) == {
        "GIFs": 40 * BYTES_PER_IMAGE["gif"], "MP4s": 40 * BYTES_PER_IMAGE["mp4"], "tables": 10 * BYTES_PER_IMAGE["tables"]}
    assert 2.5e9 < sum(output_bytes(1000, frames="png", gif=True, mp4=False).values()) < 3.5e9  # ~2.6 GB
    assert [human_bytes(n) for n in (999, 12_345, 3_097_920, 47_387_310, 2.6e12)] == [
        "999 B", "12 kB", "3.1 MB", "47 MB", "2.6 TB"]


@pytest.mark.slow
def test_a_run_the_disk_cannot_hold_is_refused_before_the_model_loads(tiny_v2_path, stub_dynamic_dir, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 0, 10**6))
    out, err = io.StringIO(), io.StringIO()
    args = ["segment", str(tiny_v2_path), "--out", str(tmp_path / "out"), "--model", str(stub_dynamic_dir), "--no-eval",
            "--no-report"]
    assert main(args, stdout=out, stderr=err) == 2
    assert err.getvalue().splitlines() == [
        "detect: disk: about 49 MB for 15 images (PNG frames 45 MB, GIFs 3.1 MB, tables 86 kB); 1.0 MB free",
        f"detect: error: {tmp_path / 'out'}: 1.0 MB free, but the outputs of 15 images need about 49 MB; use "
        f"--frame-format jpg (11 MB) or --no-png (3.2 MB), free some space, or pass --no-disk-check to start anyway"]
    assert not (tmp_path / "out").exists()
    assert main([*args, "--no-disk-check", "--quiet"]) == 0


@pytest.mark.slow
def test_jpeg_frames_are_named_alone_and_a_resumed_run_counts_only_what_is_left(tiny_v2_path, stub_dynamic_dir,
                                                                               tmp_path, monkeypatch):
    out = tmp_path / "out"
    model = ["--model", str(stub_dynamic_dir), "--no-eval", "--no-report"]
    assert main(["run", str(tiny_v2_path), "--out", str(out), *model, "--quiet"]) == 0
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 0, 1000))
    assert main(["run", str(tiny_v2_path), "--out", str(out), *model, "--quiet"]) == 0  # nothing left to write
    err = io.StringIO()
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path / "b"), *model, "--frame-format", "jpg"],
                stderr=err) == 2
    assert "; use --no-png (3.2 MB), free some space, or pass --no-disk-check" in err.getvalue()
    assert Path(tmp_path / "b").exists() is False
