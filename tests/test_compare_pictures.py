"""`detect compare`'s names and pictures: the sides named by what differs, the objects one side
found ringed on the A | B pictures, and a gallery spread over cameras and time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from helpers.comparisons import BOX, ELSEWHERE, FRAMES, compare, folder
from helpers.results_folders import PERSON, dets, key, labels, segment_folder
from PIL import Image

from detect.compare.close_ups import CloseUp, write_close_ups
from detect.compare.comparison import SideFacts
from detect.compare.frame_pairs import APART_MICROS, BAR, MARK, MARK_PAD, SIDE_WIDTH, side_by_side, spread
from detect.compare.naming import side_names, title
from detect.compare.page import disagreement_caption
from detect.compare.sides import load_side, pair
from detect.compare.stats import Disagreement, Mark, collect
from detect.core.cameras import CameraName
from detect.model.classmap import default_class_map
from detect.render.crop import Outline, close_up

CENTERNET = SideFacts("/runs/plain", "CenterNet MobileNetV3", "CenterNet MobileNetV3 COCO", "ab12", "80 COCO classes",
                      "fit:960x640", 0.3, 0.05, None, "none", "openvino 2026.4.1", 7.1, 120.0)


def test_two_runs_of_one_model_are_named_by_the_settings_that_differ():
    tiled = dataclasses.replace(CENTERNET, results="/runs/tiled", tiles=512, images_per_second=2.0)
    assert side_names(CENTERNET, tiled) == ("no tiles", "tiles 512")
    assert title(CENTERNET, tiled, ("no tiles", "tiles 512")) == "CenterNet MobileNetV3: no tiles vs tiles 512"
    both = dataclasses.replace(tiled, threshold=0.4, input_size="fit:1920x1280")
    assert side_names(CENTERNET, both) == ("input 960x640, no tiles, threshold 0.3",
                                           "input 1920x1280, tiles 512, threshold 0.4")


def test_other_models_runtimes_or_only_folders_name_the_sides_by_those():
    ssd = dataclasses.replace(CENTERNET, results="/runs/ssd", model="SSD MobileNet v2", description="SSD", sha256="cd34")
    assert side_names(CENTERNET, ssd) == ("CenterNet MobileNetV3", "SSD MobileNet v2")
    assert title(CENTERNET, ssd, side_names(CENTERNET, ssd)) == "CenterNet MobileNetV3 vs SSD MobileNet v2"
    retrained = dataclasses.replace(CENTERNET, sha256="ef56")  # the same name, other weights
    assert side_names(CENTERNET, retrained) == ("CenterNet MobileNetV3 ab12", "CenterNet MobileNetV3 ef56")
    on_tf = dataclasses.replace(CENTERNET, runtime="tensorflow 2.21.0")
    assert side_names(CENTERNET, on_tf) == ("openvino 2026.4.1", "tensorflow 2.21.0")
    again = dataclasses.replace(CENTERNET, results="/runs/monday/plain")  # nothing differs but where
    assert side_names(dataclasses.replace(CENTERNET, results="/runs/sunday/plain"), again) == (
        "sunday/plain", "monday/plain")


def marks_of(tmp_path: Path, with_labels: bool) -> list[Disagreement]:
    class_map = default_class_map()
    if with_labels:
        a_dir, b_dir = folder(tmp_path, "a", [True, True]), folder(tmp_path, "b", [False, True])
    else:
        a_dir = segment_folder(tmp_path / "a", {key(0): (labels(), dets((BOX, 0.9, PERSON)))}, knows=[PERSON]).parent
        b_dir = segment_folder(tmp_path / "b", {key(0): (labels(), dets((ELSEWHERE, 0.9, PERSON)))}, knows=[PERSON]).parent
    a, b = load_side("A", a_dir, class_map, None), load_side("B", b_dir, class_map, None)
    pairing = pair(a, b)
    return collect(a, b, pairing.common, dict(pairing.labels) if pairing.labels else None, class_map).disagreement


def test_the_objects_one_side_found_are_marked_with_that_side(tmp_path):
    (labeled,) = marks_of(tmp_path / "labels", with_labels=True)
    assert labeled.key == key(0) and labeled.marks == (Mark(BOX, "A", "PEDESTRIAN"),)
    assert disagreement_caption(labeled, ("no tiles", "tiles 512")) == (
        "1 labeled objects found by one side only: 1 by A (no tiles), 0 by B (tiles 512)")
    (unlabeled,) = marks_of(tmp_path / "boxes", with_labels=False)
    assert unlabeled.marks == (Mark(BOX, "A", "PEDESTRIAN"), Mark(ELSEWHERE, "B", "PEDESTRIAN"))


def frame(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (960, 640), (90, 90, 90)).save(path)
    return path


def test_a_marked_object_is_ringed_and_tagged_on_both_halves(tmp_path):
    a, b = frame(tmp_path / "a.png"), frame(tmp_path / "b.png")
    plain = np.asarray(side_by_side(a, b, ("A: no tiles", "B: tiles 512")))
    assert not np.all(plain == MARK, axis=2).any()
    picture = np.asarray(side_by_side(a, b, ("A: no tiles", "B: tiles 512"), [Mark((200, 300, 300, 500), "B", "VEHICLE")]))
    scale = SIDE_WIDTH / 960
    for x in (0, SIDE_WIDTH + 4):  # the left edge of the ring, just outside the box, on A's half and on B's
        left, top, bottom = x + int(200 * scale) - MARK_PAD, BAR + int(300 * scale), BAR + int(500 * scale)
        assert np.all(picture[top:bottom, left] == MARK)
        tag = picture[top - 20:top - MARK_PAD, left:left + 40]  # "only B" above it, white on magenta
        assert np.all(tag == MARK, axis=2).mean() > 0.3 and np.all(tag == (255, 255, 255), axis=2).any()
    outside = np.asarray(Image.open(a).convert("RGB").reduce(2))
    assert np.array_equal(picture[BAR:BAR + 100, :SIDE_WIDTH], outside[:100])  # away from the mark: the frame


def disagreement(i: int, camera: CameraName = CameraName.FRONT, count: int = 1) -> Disagreement:
    return Disagreement(count, key(i, camera), "labeled objects found by one side only")


def test_the_gallery_is_spread_over_cameras_and_time():
    consecutive = [disagreement(i, count=9) for i in range(60)]  # FRONT, 0.1 s apart, disagreeing most
    others = [disagreement(i, CameraName.SIDE_LEFT, count=2) for i in range(3)]
    chosen = spread(consecutive + others)
    front = [d.key.frame_timestamp_micros for d in chosen if d.key.camera_name == CameraName.FRONT]
    assert len(front) == 2 and front[1] - front[0] >= APART_MICROS  # at most two of a camera, apart in time
    assert [d.key.camera_name for d in chosen].count(CameraName.SIDE_LEFT) == 1  # its three are 0.1 s apart
    assert chosen[0] == consecutive[0] and len(chosen) == 3


@pytest.mark.slow
def test_compare_names_the_sides_and_spreads_its_gallery(tmp_path):
    a = folder(tmp_path, "a", [True] * FRAMES)
    b = folder(tmp_path, "b", [i % 2 == 0 for i in range(FRAMES)])
    for side in (a, b):
        for i in range(FRAMES):
            frame(next(side.iterdir()) / "frames" / "FRONT" / f"{key(i).frame_timestamp_micros}.png")
    report = compare(a, b, tmp_path / "out")
    assert report["names"] == {"A": "a", "B": "b"}  # the same model and settings: the folders
    assert len(report["gallery"]) == 1  # 10 disagreeing FRONT frames within 2 s: one picture
    assert (report["gallery"][0]["only_a"], report["gallery"][0]["only_b"]) == (1, 0)
    page = (tmp_path / "out" / "compare.html").read_text()
    assert "<h1>a vs b</h1>" in page and "1 by A (a), 0 by B (b)</figcaption>" in page


def test_without_source_files_the_close_ups_come_from_as_drawn_frames_and_say_so(tmp_path):
    class_map = default_class_map()
    sides = []
    for name, found in (("a", [True]), ("b", [False])):
        directory = folder(tmp_path, name, found)
        frame(next(directory.iterdir()) / "frames" / "FRONT" / f"{key(0).frame_timestamp_micros}.png")
        sides.append(load_side(name.upper(), directory, class_map, None))
    a, b = sides
    pairing = pair(a, b)
    (item,) = collect(a, b, pairing.common, dict(pairing.labels), class_map).disagreement
    frames_a = {key(0): next(next(a.root.iterdir()).rglob("*.png"))}
    notes: list[str] = []
    written = write_close_ups([item], a, b, frames_a, ("no tiles", "tiles 512"), tmp_path, notes)
    assert written == {key(0): [CloseUp("disagree_0_0.jpg", "only A (no tiles): PEDESTRIAN 100x200 px")]}
    segment = key(0).segment_context_name
    assert notes == [f"A: {next(a.root.iterdir())}: the manifest records no source file; B: {next(b.root.iterdir())}: "
                     f"the manifest records no source file: close-ups of segment {segment} cut from A's drawn frames"]
    expected = np.asarray(close_up(Image.open(frames_a[key(0)]).convert("RGB"), Outline(BOX, MARK)), np.int16)
    picture = np.asarray(Image.open(tmp_path / "disagree_0_0.jpg").convert("RGB"), np.int16)
    assert np.abs(picture - expected).mean() < 3  # JPEG's loss only


def test_an_unreadable_drawn_frame_is_left_out_of_the_close_ups_with_a_note(tmp_path):
    class_map = default_class_map()
    a = load_side("A", folder(tmp_path, "a", [True]), class_map, None)
    b = load_side("B", folder(tmp_path, "b", [False]), class_map, None)
    pairing = pair(a, b)
    (item,) = collect(a, b, pairing.common, dict(pairing.labels), class_map).disagreement
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 10)
    notes: list[str] = []
    assert write_close_ups([item], a, b, {key(0): broken}, ("a", "b"), tmp_path, notes) == {}
    assert notes[-1].startswith(f"frame {key(0)} left out of the close-ups: {broken}")
