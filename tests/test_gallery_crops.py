"""The report's close-ups: cut from the camera image (re-read from the segment file, checked by its
fingerprint), centred, with only the object in question and its partner drawn, captioned with what
they are; cut from the drawn frame, with a note saying why, when the file is gone or changed."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers.matches import matches_frame
from helpers.paths import REAL_SEGMENT
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.records import FrameKey
from detect.render.crop import CROP_SIDE, MIN_WINDOW, PAD, PARTNER, Outline, close_up, crop_window, cut
from detect.render.verdicts import COLORS
from detect.report import gallery
from detect.results.results_folder import Manifest
from detect.results.source_images import read_source_images, source_problem
from detect.waymo.readers import iter_frames
from detect.waymo.schema import OBJECT_ID
from detect.waymo.source_check import take_fingerprint

CAR, PERSON = 3, 1
TIMESTAMP = 1553735853462203


def noise(width: int = 640, height: int = 480, seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), np.uint8))


def test_a_close_up_is_the_raw_window_with_only_its_outlines_drawn():
    raw = noise()
    subject = Outline((300, 200, 340, 280), COLORS["missed label"], "dotted")
    partner = Outline((310, 150, 420, 260), PARTNER, "solid", 2)
    picture = np.asarray(close_up(raw, subject, partner))
    window = crop_window(subject.xyxy)
    assert window == (256, 176, 384, 304)  # the longer side, 80 px, and 24 px each side, centred
    plain = np.asarray(cut(raw, window))
    assert picture.shape == (CROP_SIDE, CROP_SIDE, 3)
    scale = CROP_SIDE / (window[2] - window[0])
    drawn = np.zeros(picture.shape[:2], bool)
    for box in (subject.xyxy, partner.xyxy):  # the outlines lie inside their boxes' bounds
        x0, y0, x1, y1 = (int(round((v - window[i % 2]) * scale)) for i, v in enumerate(box))
        drawn[max(y0, 0):y1 + 1, max(x0, 0):x1 + 1] = True
    assert np.array_equal(picture[~drawn], plain[~drawn])  # everything else: the raw image, scaled
    assert not np.array_equal(picture[drawn], plain[drawn])
    assert np.all(picture[drawn] == COLORS["missed label"], axis=1).any()
    assert np.all(picture[drawn] == PARTNER, axis=1).any()
    assert np.asarray(raw).sum() == np.asarray(noise()).sum()  # the input is not touched


def test_the_window_is_centred_with_a_fixed_margin_and_a_minimum_size():
    assert crop_window((100, 100, 116, 116)) == (60, 60, 60 + MIN_WINDOW, 60 + MIN_WINDOW)  # 16 px: shown x2.5
    assert crop_window((100, 100, 300, 150)) == (76, 1, 324, 249)  # 200 px + 24 each side, centred on the box
    at_edge = np.asarray(close_up(noise(), Outline((0, 0, 20, 20), (255, 0, 0))))
    assert np.all(at_edge[:60, :60] == PAD)  # past the image's corner: padding, and the object stays centred
    assert np.all(at_edge[CROP_SIDE // 2, CROP_SIDE // 2 + 24] == (255, 0, 0))  # its right edge: 20 px x2.5 wide, centred


def example_rows() -> pd.DataFrame:
    def box(x0: float, y0: float, x1: float, y1: float) -> dict:
        return {"xmin": x0, "ymin": y0, "xmax": x1, "ymax": y1}

    return matches_frame([
        # a false alarm beside a vehicle another box found
        {"kind": "detection", "type_name": "VEHICLE", "score": 0.8, "matched": False, "class_id": CAR,
         **box(100, 100, 200, 160)},
        {"kind": "detection", "type_name": "VEHICLE", "score": 0.9, "matched": True, "class_id": CAR, OBJECT_ID: "v1",
         **box(120, 100, 220, 160)},
        {"kind": "label", "type_name": "VEHICLE", "score": 0.9, "iou": 0.9, "matched": True, OBJECT_ID: "v1",
         **box(125, 100, 225, 160)},
        # a pedestrian found below the threshold; one no box comes near; one a car box overlaps
        {"kind": "detection", "type_name": "PEDESTRIAN", "score": 0.3, "matched": True, "class_id": PERSON,
         OBJECT_ID: "p1", **box(500, 100, 520, 150)},
        {"kind": "label", "type_name": "PEDESTRIAN", "score": 0.3, "iou": 0.8, "matched": True, OBJECT_ID: "p1",
         **box(502, 100, 520, 148)},
        {"kind": "label", "type_name": "PEDESTRIAN", "score": None, "matched": False, OBJECT_ID: "p2",
         **box(900, 100, 916, 116)},
        {"kind": "label", "type_name": "PEDESTRIAN", "score": None, "matched": False, OBJECT_ID: "p3",
         **box(200, 130, 216, 162)},
    ])


def test_each_example_has_its_partner_and_its_caption_says_what_it_is():
    chosen = gallery.select(example_rows(), threshold=0.5)
    (false_alarm,) = chosen["VEHICLE"][gallery.FALSE_ALARM]
    assert false_alarm.partner == gallery.Partner((125, 100, 225, 160), "VEHICLE (found by another box)",
                                                  pytest.approx(0.6), False)
    assert false_alarm.caption() == "FA car 0.80, FRONT 1; nearest label VEHICLE (found by another box) IoU 0.60"
    below, near, alone = chosen["PEDESTRIAN"][gallery.MISSED]  # the largest first
    assert below.partner is not None and below.partner.xyxy == (500, 100, 520, 150) and below.partner.matched
    assert below.caption() == "missed PEDESTRIAN 18x48 px, FRONT 1; found at 0.300 (IoU 0.80), below the threshold"
    assert near.caption() == "missed PEDESTRIAN 16x32 px, FRONT 1; nearest box car 0.90 IoU 0.08"
    assert alone.partner is None and alone.caption() == "missed PEDESTRIAN 16x16 px, FRONT 1; no box near it (IoU under 0.05)"


def test_a_type_without_labels_has_no_gallery():
    """SIGN (no 2D labels in Waymo's data) is not scored: its boxes are no false alarms to show."""
    sign = {"kind": "detection", "type_name": "SIGN", "score": 0.9, "matched": False, "class_id": 13,
            "xmin": 10, "ymin": 10, "xmax": 40, "ymax": 40}
    chosen = gallery.select(pd.concat([example_rows(), matches_frame([sign])], ignore_index=True), threshold=0.5)
    assert set(chosen) == {"VEHICLE", "PEDESTRIAN"}


def manifest(directory: Path, path: Path | None, recorded: Path | None = None, name: str = REAL_SEGMENT) -> Manifest:
    found = take_fingerprint(str(recorded or path)) if path is not None else None
    data = {"segment_context_name": name, "input": {"path": None if path is None else str(path),
                                                       "fingerprint": None if found is None else found.to_json()}}
    return Manifest.from_json(data, directory)


FRONT = FrameKey(REAL_SEGMENT, TIMESTAMP, CameraName.FRONT)
SIDE_LEFT = FrameKey(REAL_SEGMENT, TIMESTAMP, CameraName.SIDE_LEFT)


@pytest.mark.slow
def test_the_source_images_are_read_back_checked_by_their_fingerprint(real_frame_path, tmp_path):
    source = tmp_path / "segment.tfrecord"
    shutil.copyfile(real_frame_path, source)
    read = read_source_images(manifest(tmp_path, source), {FRONT, SIDE_LEFT})
    assert read.problem is None and set(read.images) == {FRONT, SIDE_LEFT}
    jpeg = next(f.jpeg for f in iter_frames(str(real_frame_path)) if f.key == FRONT)
    assert np.array_equal(np.asarray(read.images[FRONT]), np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")))
    absent = FrameKey(REAL_SEGMENT, TIMESTAMP + 1, CameraName.FRONT)
    assert read_source_images(manifest(tmp_path, source), {FRONT, absent}).problem == (
        f"{source}: holds no image for 1 of 2 picture(s)")
    other = read_source_images(manifest(tmp_path, source, name="elsewhere"), {FrameKey("elsewhere", TIMESTAMP, CameraName.FRONT)})
    assert other.problem == f"{source}: holds segment {REAL_SEGMENT}, not elsewhere" and not other.images


def test_a_source_file_gone_changed_or_not_recorded_is_one_line(real_frame_path, tmp_path):
    source = tmp_path / "segment.tfrecord"
    shutil.copyfile(real_frame_path, source)
    recorded = manifest(tmp_path, source)
    data = bytearray(source.read_bytes())
    data[-1] ^= 1  # the same size, another last byte
    source.write_bytes(bytes(data))
    assert source_problem(recorded) == f"{source}: the source file has changed since the run (same size, other bytes)"
    assert read_source_images(recorded, {FRONT}).images == {}
    source.unlink()
    assert source_problem(recorded) == f"{source}: the source file is gone"
    assert source_problem(manifest(tmp_path, None)) == f"{tmp_path}: the manifest records no source file"


def test_a_v2_parquet_source_gives_back_the_images_asked_for_in_one_pass(tiny_v2_path, tmp_path):
    segment = "tiny_synthetic_0000000000000000_000_000_000_000"
    frames = list(iter_frames(str(tiny_v2_path)))
    wanted = {frames[1].key, frames[-1].key}  # a span of timestamps, two cameras
    read = read_source_images(manifest(tmp_path, tiny_v2_path, name=segment), wanted)
    assert read.problem is None and set(read.images) == wanted
    last = Image.open(io.BytesIO(frames[-1].jpeg)).convert("RGB")
    assert np.array_equal(np.asarray(read.images[frames[-1].key]), np.asarray(last))


def test_a_v1_source_is_read_once_for_all_the_images_of_a_segment(real_frame_path, tmp_path, monkeypatch):
    from detect.waymo import tfrecord

    passes: list[str] = []
    frames = tfrecord._local_frames

    def counted(source):  # type: ignore[no-untyped-def]
        passes.append(source.uri)
        return frames(source)

    monkeypatch.setattr(tfrecord, "_local_frames", counted)
    read = read_source_images(manifest(tmp_path, real_frame_path), {FRONT, SIDE_LEFT})
    assert set(read.images) == {FRONT, SIDE_LEFT} and passes == [str(real_frame_path)]  # no key pass before it


def test_a_source_file_that_cannot_be_read_is_one_line_naming_it(real_frame_path, tmp_path):
    source = tmp_path / "segment.tfrecord"
    source.write_bytes(real_frame_path.read_bytes()[:5000])  # truncated before the run: its fingerprint is this
    read = read_source_images(manifest(tmp_path, source), {FRONT})
    assert read.images == {} and read.problem is not None
    assert read.problem.startswith(f"{source}: cannot read the source images (") and "\n" not in read.problem


def test_a_local_tfrecord_read_without_tensorflow_names_a_record_that_is_not_a_frame(tmp_path):
    source = tmp_path / "segment.tfrecord"
    garbage = b"\xff" * 10
    source.write_bytes(len(garbage).to_bytes(8, "little") + b"\0" * 4 + garbage + b"\0" * 4)
    read = read_source_images(manifest(tmp_path, source), {FRONT})
    assert read.problem is not None and read.problem.startswith(
        f"{source}: cannot read the source images ({source}: record 0 is not a Waymo Frame proto (")
