import hashlib
import os

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.errors import InputError, UsageError
from detect.core.records import Detections, FrameKey
from detect.render.draw import draw_detections
from detect.results.animations import (
    AnimationFrame,
    AnimationSet,
    downscale_to_width,
    prepare_animation_frame,
    rebuild_animations,
)
from detect.results.frames import write_frame
from detect.results.rebuild import find_segment_dirs, rebuild_all

SEGMENT = "seg_0001"
CAMERAS = (CameraName.FRONT, CameraName.FRONT_LEFT, CameraName.SIDE_LEFT)
STAMPS = [1_000_000 + i * 100_000 + (i % 2) * 400 for i in range(4)]
WIDTH = 48


def annotated(ts: int, cam: CameraName) -> Image.Image:
    rng = np.random.default_rng(ts + int(cam))
    h = 64 if cam <= 3 else 44
    image = rng.integers(0, 256, (h, 96, 3), dtype=np.uint8)
    dets = Detections(np.array([[10, 10, 50, 40]], np.float32), [0.9], [3], ("car",))
    return draw_detections(image, dets)


def run_pipeline(segment_dir, cameras=CAMERAS, mp4=False, mosaic=True):
    """What the pipeline does: write each annotated frame, feed the animations in order."""
    with AnimationSet(segment_dir, mp4=mp4, mosaic=mosaic) as sink:
        for ts in STAMPS:
            for cam in sorted(cameras):
                key = FrameKey(SEGMENT, ts, cam)
                image = annotated(ts, cam)
                write_frame(segment_dir, key, image)
                sink.add(prepare_animation_frame(image, key, WIDTH))
    return sink.close()


def digests(paths):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_gifs_and_mosaic(tmp_path):
    seg = tmp_path / SEGMENT
    written = run_pipeline(seg)
    assert [p.name for p in written] == ["FRONT.gif", "FRONT_LEFT.gif", "SIDE_LEFT.gif", "mosaic.gif"]
    with Image.open(seg / "FRONT.gif") as im:
        assert (im.n_frames, im.size, im.info["loop"]) == (4, (48, 32), 0)
        durations = []
        for i in range(im.n_frames):
            im.seek(i)
            durations.append(im.info["duration"])
        assert durations == [500, 500, 500, 500]  # 4 frames at 10 Hz: slowed down to last 2 s
    with Image.open(seg / "SIDE_LEFT.gif") as im:
        assert im.size == (48, 22)
    with Image.open(seg / "mosaic.gif") as im:
        assert (im.n_frames, im.size) == (4, (3 * 48, 32 + 23))  # tiles as wide as the camera GIFs


def test_single_camera_has_no_mosaic(tmp_path):
    written = run_pipeline(tmp_path, cameras=(CameraName.FRONT,))
    assert [p.name for p in written] == ["FRONT.gif"]
    assert sorted(os.listdir(tmp_path)) == ["FRONT.gif", "frames"]


def test_mosaic_can_be_turned_off(tmp_path):
    written = run_pipeline(tmp_path, mosaic=False)
    assert [p.name for p in written] == ["FRONT.gif", "FRONT_LEFT.gif", "SIDE_LEFT.gif"]


@pytest.mark.slow
def test_mp4s(tmp_path):
    written = run_pipeline(tmp_path, mp4=True)
    assert {p.name for p in written} >= {"FRONT.mp4", "SIDE_LEFT.mp4", "mosaic.mp4"}
    reader = imageio.get_reader(tmp_path / "mosaic.mp4", format="FFMPEG")
    frames = [f for f in reader]  # list() asks len(), which is inf for ffmpeg readers
    reader.close()
    assert len(frames) == 4 and frames[0].shape == (56, 144, 3)  # 55 rows, padded to even


@pytest.mark.slow
def test_rebuild_gives_the_same_bytes(tmp_path):
    seg = tmp_path / "results" / SEGMENT
    first = digests(run_pipeline(seg, mp4=True))
    for name in first:
        (seg / name).unlink()
    rebuilt = rebuild_animations(seg, width=WIDTH, mp4=True)
    assert digests(rebuilt) == first


def test_rebuild_all_and_find_segments(tmp_path):
    results = tmp_path / "results"
    run_pipeline(results / SEGMENT)
    other = results / "nested" / "seg_0002"
    write_frame(other, FrameKey("seg_0002", 5, CameraName.FRONT), annotated(5, CameraName.FRONT))
    (results / ".hidden" / "frames").mkdir(parents=True)
    assert find_segment_dirs(results) == [results / "nested" / "seg_0002", results / SEGMENT]
    assert find_segment_dirs(results / SEGMENT) == [results / SEGMENT]
    rebuilt = rebuild_all(results, width=WIDTH, fps=5)
    assert rebuilt.notes == []
    assert [p.relative_to(results).as_posix() for p in rebuilt.written] == [
        "nested/seg_0002/FRONT.gif",
        f"{SEGMENT}/FRONT.gif",
        f"{SEGMENT}/FRONT_LEFT.gif",
        f"{SEGMENT}/SIDE_LEFT.gif",
        f"{SEGMENT}/mosaic.gif",
    ]
    with Image.open(results / SEGMENT / "FRONT.gif") as im:
        assert im.info["duration"] == 500  # --fps 5, 4 frames: slowed down to last 2 s


def test_rebuild_errors(tmp_path):
    with pytest.raises(InputError, match="missing: no such results directory$"):
        rebuild_all(tmp_path / "missing")
    with pytest.raises(InputError, match="no segment results here \\(no folder with a frames/ folder up to 4 levels down\\)$"):
        rebuild_all(tmp_path)
    with pytest.raises(InputError, match="no annotated frames under .*frames"):
        rebuild_animations(tmp_path)
    bad = tmp_path / "frames" / "FRONT" / "123.png"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a png")
    with pytest.raises(InputError, match="123.png is not a picture, or its header claims more pixels than are decoded$"):
        rebuild_animations(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["frames"]  # nothing half-written


def test_out_of_order_frames_rejected_and_nothing_written(tmp_path):
    f1 = prepare_animation_frame(annotated(2, CameraName.FRONT), FrameKey(SEGMENT, 2, CameraName.FRONT), WIDTH)
    f0 = prepare_animation_frame(annotated(1, CameraName.FRONT), FrameKey(SEGMENT, 1, CameraName.FRONT), WIDTH)
    with pytest.raises(ValueError, match=r"increasing \(timestamp, camera\) order: "
                                         r"got seg_0001/FRONT/1 after timestamp 2 camera FRONT"):
        with AnimationSet(tmp_path) as sink:
            sink.add(f1)
            sink.add(f0)
    assert os.listdir(tmp_path) == []


def test_downscale_to_width():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (1280, 1920, 3), dtype=np.uint8))
    reduced = downscale_to_width(image, 640)
    assert reduced.size == (640, 427)
    assert np.array_equal(np.asarray(reduced), np.asarray(image.reduce(3)))
    assert downscale_to_width(image, 500).size == (500, 333)
    assert downscale_to_width(image, 4000) is image  # never enlarged
    with pytest.raises(UsageError, match="animation width must be at least 1, got 0"):
        downscale_to_width(image, 0)


def test_prepare_accepts_arrays():
    array = np.asarray(annotated(0, CameraName.FRONT))
    frame = prepare_animation_frame(array, FrameKey(SEGMENT, 0, CameraName.FRONT), WIDTH)
    assert frame.image.size == (48, 32) and frame.tile.size == (48, 32)  # the mosaic tile is the GIF frame
    assert (frame.gif.width, frame.gif.height) == (48, 32)


def test_an_animation_frame_sent_to_another_process_keeps_its_pictures():
    import pickle

    from detect.results.animations import packed, unpacked

    rng = np.random.default_rng(5)
    tile = Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8))
    tile.info["comment"] = b'{"legend": []}'
    frame = AnimationFrame(FrameKey("seg", 1, CameraName.FRONT), Image.fromarray(rng.integers(0, 256, (8, 12, 3),
                           dtype=np.uint8)), None, tile, (("hit", "found"),), 2)
    back = pickle.loads(pickle.dumps(frame))
    assert back.key == frame.key and back.legend == frame.legend and back.chips_left_out == 2
    assert back.image.mode == "RGB" and np.array_equal(np.asarray(back.image), np.asarray(frame.image))
    assert np.array_equal(np.asarray(back.tile), np.asarray(tile)) and back.tile.info == tile.info
    palette = tile.quantize(8)
    assert unpacked(pickle.loads(pickle.dumps(packed(palette)))).getpalette() == palette.getpalette()
