"""Results tables edited, merged or crafted, as every reader of a results folder meets them (eval,
compare, report, track): track ids of another type or twice on one image, rows that are not boxes,
boxes far larger than the image, tables of millions of repeated rows in a few hundred KB; and the
journal and input sizes edited past what they hold. Each gives the correct output or one line naming
the file, never a traceback, and the readers agree on which rows are boxes."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import run
from helpers.results_folders import (
    CAR,
    PEDESTRIAN,
    PERSON,
    VEHICLE,
    dets,
    key,
    labels,
    repeated,
    segment_folder,
    walking_pedestrian,
    with_frames,
)
from PIL import Image

from detect.cli import main
from detect.core.errors import InputError
from detect.report import gallery
from detect.results.results_tables import MIN_ROWS, ROWS_PER_IMAGE


def set_column(segment: Path, name: str, values: pa.Array, file: str = "detections.parquet") -> None:
    path = segment / file
    table = pq.read_table(path)
    index = table.schema.get_field_index(name)
    pq.write_table(table.set_column(index, name, values) if index >= 0 else table.append_column(name, values), path)


def tracking(segment: Path) -> dict:
    return json.loads((segment / "eval.json").read_text()).get("tracking_level_2", {})


def level_2(segment: Path, name: str) -> dict:
    return next(r for r in json.loads((segment / "eval.json").read_text())["levels"]["LEVEL_2"] if r["name"] == name)


# --- track ids of another type --------------------------------------------------------------------

@pytest.mark.slow
def test_track_ids_written_as_floats_with_nan_for_none_read_as_the_integer_column_with_nulls(tmp_path):
    """pandas writes an integer column with nulls as float64 with NaN: the same ids, the same scores."""
    integers = walking_pedestrian(tmp_path / "int")
    set_column(integers, "track_id", pa.array([1, 1, None, 1, 1, 1], pa.int64()))
    floats = walking_pedestrian(tmp_path / "float")
    set_column(floats, "track_id", pa.array([1.0, 1.0, np.nan, 1.0, 1.0, 1.0], pa.float64()))
    for segment in (integers, floats):
        code, err = run("eval", str(segment), "--quiet")
        assert (code, err) == (0, "")
    assert tracking(floats) == tracking(integers) and tracking(floats)["PEDESTRIAN"]["label_boxes"] == 6
    assert tracking(floats)["PEDESTRIAN"]["tracked_boxes"] == 5
    tracked = gallery.TrackIds.read(floats)  # the galleries' reader of the same column
    assert tracked is not None and tracked.of({"key.segment_context_name": "seg_eval", **dict(zip(
        ("key.frame_timestamp_micros", "key.camera_name", "xmin", "ymin", "xmax", "ymax"),
        (key(3).frame_timestamp_micros, 1, 130.0, 100.0, 230.0, 300.0), strict=True))}) == ("seg_eval", 1, 1)
    with_frames(floats, [key(i) for i in range(6)])
    code, err = run("report", str(floats))
    assert (code, err) == (0, "")
    page = (floats / "report.html").read_text()
    assert "<h2 id='tracks'>Tracks</h2>" in page and "1 tracks (FRONT 1)" in page


@pytest.mark.slow
@pytest.mark.parametrize(("column", "said"), [
    (pa.array(["1", "1", "x", None, "1", "1"], pa.string()), "track_id holds string values, not whole numbers"),
    (pa.array([1.0, 1.5, 1.0, 1.0, 1.0, 1.0], pa.float64()), "track_id holds 1.5, not a whole number"),
    (pa.array([1.0, np.inf, 1.0, 1.0, 1.0, 1.0], pa.float64()), "track_id holds inf, not a whole number"),
])
def test_track_ids_that_are_not_whole_numbers_are_left_out_with_a_note_by_every_reader(tmp_path, column, said):
    segment = walking_pedestrian(tmp_path / "b")
    walking_pedestrian(tmp_path / "a")
    set_column(segment, "track_id", column)
    note = (f"detect: note: {segment / 'detections.parquet'}: {said}; its track ids are left out (`detect track` writes "
            f"them again)")
    code, err = run("eval", str(segment), "--quiet")
    assert (code, err) == (0, note + "\n")
    assert tracking(segment) == {}  # no tracking scores, the detection scores as ever
    assert level_2(segment, "PEDESTRIAN")["ap50"] == 1.0
    code, err = run("report", str(segment))
    assert (code, err) == (0, note + "\n")
    assert ">Tracks</h2>" not in (segment / "report.html").read_text()
    assert gallery.TrackIds.read(segment) is None
    code, err = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"), "--quiet")
    assert code == 0 and f"detect: note: B: {note.removeprefix('detect: note: ')}" in err
    assert "B has no track ids" in err
    code, err = run("track", str(segment))  # tracking again writes whole ids
    assert code == 0 and pq.read_table(segment / "detections.parquet").column("track_id").to_pylist() == [1] * 6


# --- a track id on two boxes of one image ------------------------------------------------------------

def two_pedestrians(parent: Path, ids: list[int], name: str = "seg_eval") -> Path:
    """Two labeled pedestrians on 6 images, both detected; `ids`: the table's track ids, two an image."""
    images = {}
    for i in range(6):
        left, right = (100.0 + 10 * i, 100.0, 200.0 + 10 * i, 300.0), (600.0, 100.0, 700.0, 300.0)
        images[key(i, segment=name)] = (labels((left, PEDESTRIAN), (right, PEDESTRIAN)),
                                        dets((left, 0.9, PERSON), (right, 0.8, PERSON)))
    return segment_folder(parent, images, knows=[PERSON], name=name, track_ids=ids)


@pytest.mark.slow
def test_a_track_id_twice_on_one_image_leaves_the_tracking_scores_out_and_evaluates_the_detections(tmp_path):
    """Which of the two boxes the id follows cannot be known: scoring either would be a guess."""
    clean = two_pedestrians(tmp_path / "clean", [1, 2] * 6)
    merged = two_pedestrians(tmp_path / "merged", [1, 2, 1, 2, 1, 1, 1, 2, 1, 2, 1, 2])
    code, err = run("eval", str(merged), "--quiet")
    assert code == 0
    assert err == (f"detect: note: {merged / 'detections.parquet'}: track id 1 is on two boxes of image FRONT 1200000 "
                   f"(an edited or merged table): which box it follows is unknown, so its track ids are left out, its "
                   f"detections kept (`detect track` writes them again)\n")
    assert run("eval", str(clean), "--quiet") == (0, "")
    ours, theirs = (json.loads((s / "eval.json").read_text()) for s in (merged, clean))
    assert ours["levels"] == theirs["levels"] and theirs["tracking_level_2"]["PEDESTRIAN"]["idf1"] == 1.0
    assert ours.get("tracking_level_2", {}) == {}


def test_compare_scores_tracking_on_the_segments_both_sides_tracked(tmp_path):
    """A side whose segment lost its track ids would have that segment's labels scored on the other side only."""
    swaps = [1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1]
    for side, second in (("a", [1, 2] * 6), ("b", [1, 2, 1, 1, 1, 2, 1, 2, 1, 2, 1, 2])):
        two_pedestrians(tmp_path / side, swaps if side == "b" else [1, 2] * 6, "seg_one")
        two_pedestrians(tmp_path / side, second, "seg_two")
        two_pedestrians(tmp_path / f"{side}_one", swaps if side == "b" else [1, 2] * 6, "seg_one")
    code, err = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "both"), "--quiet")
    assert code == 0 and "segment seg_two: only A has track ids there; tracking compared without it" in err
    both = json.loads((tmp_path / "both" / "compare.json").read_text())["tracking"]
    assert run("compare", str(tmp_path / "a_one"), str(tmp_path / "b_one"), "--out", str(tmp_path / "one"),
               "--quiet")[0] == 0
    one = json.loads((tmp_path / "one" / "compare.json").read_text())["tracking"]
    assert [(r["metric"], r["a"], r["b"]) for r in both] == [(r["metric"], r["a"], r["b"]) for r in one]
    assert [r["b"] < r["a"] for r in both] == [True] * 3  # B's switches, on the segment both tracked


# --- rows that are not boxes: one rule in eval, the report and the tracker ---------------------------

def car_on_six_images(parent: Path) -> Path:
    """A labeled car moving right on 6 images, detected on each, not tracked yet."""
    images = {}
    for i in range(6):
        box = (100.0 + 20 * i, 400.0, 300.0 + 20 * i, 500.0)
        images[key(i)] = (labels((box, VEHICLE)), dets((box, 0.9, CAR)))
    return segment_folder(parent, images, knows=[CAR])


@pytest.mark.slow
def test_rows_that_are_not_boxes_get_no_track_id_and_the_car_keeps_its_own(tmp_path):
    clean = car_on_six_images(tmp_path / "clean")
    edited = car_on_six_images(tmp_path / "edited")
    table = pq.read_table(edited / "detections.parquet")
    extra = pa.Table.from_pylist([table.slice(2, 1).to_pylist()[0] | change for change in (
        {"xmin": None}, {"xmin": float("nan")}, {"key.frame_timestamp_micros": None}, {"xmax": float("inf")},
        {"key.camera_name": 9}, {"xmax": 50.0})], schema=table.schema)  # NaN, null key, infinite, no camera, inverted
    pq.write_table(pa.concat_tables([table, extra]), edited / "detections.parquet")
    assert run("track", str(clean))[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from numpy (they printed source paths)
        code, err = run("track", str(edited))
    assert code == 0
    said = (f"{edited / 'detections.parquet'}: 6 row(s) are not boxes (a null key, a camera Waymo does not have, a "
            f"NaN, infinite or inverted box, no score or class)")
    assert f"detect: note: {said}; they get no track id" in err
    ids = pq.read_table(edited / "detections.parquet").column("track_id").to_pylist()
    assert ids[:6] == pq.read_table(clean / "detections.parquet").column("track_id").to_pylist() == [1] * 6
    assert ids[6:] == [None] * 6
    code, err = run("eval", str(edited), "--quiet")  # eval leaves the same rows out, and scores the rest alike
    assert (code, err) == (0, f"detect: note: {said}; left out\n")
    assert run("eval", str(clean), "--quiet")[0] == 0
    ours, theirs = (json.loads((s / "eval.json").read_text()) for s in (edited, clean))
    assert (ours["levels"], ours["tracking_level_2"]) == (theirs["levels"], theirs["tracking_level_2"])
    code, err = run("report", str(edited))
    assert (code, err) == (0, f"detect: note: {said}; left out\n")
    assert "6 boxes drawn" in (edited / "report.html").read_text()


# --- a box far larger than the image -----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("reach", [1e6, 1e30])
def test_a_huge_box_is_a_false_alarm_whose_close_up_is_cut_from_the_image(tmp_path, reach):
    box = (100.0, 100.0, 300.0, 500.0)
    images = {key(0): (labels((box, PEDESTRIAN)), dets((box, 0.9, PERSON), ((-reach, -reach, reach, reach), 0.8, PERSON)))}
    segment = segment_folder(tmp_path, images, knows=[PERSON])
    with_frames(segment, [key(0)], (640, 480))
    assert run("eval", str(segment), "--quiet") == (0, "")
    matches = pq.read_table(segment / "matches.parquet").to_pylist()
    assert [(m["kind"], m["matched"], m["xmax"]) for m in matches] == [
        ("detection", True, 300.0), ("detection", False, np.float32(reach)), ("label", True, 300.0)]
    assert run("report", str(segment)) == (0, f"detect: note: {segment}: the manifest records no source file: 1 "
                                              f"close-up(s) cut from the drawn frames instead\n")
    assert "FA person 0.80" in (segment / "report.html").read_text()
    crops = sorted((segment / "report").glob("error_*.jpg"))
    assert crops and all(Image.open(c).size == (240, 240) for c in crops)


def test_a_close_up_window_stays_within_the_image_and_its_margin(monkeypatch):
    from detect.render import crop

    image = Image.new("RGB", (640, 480), (90, 90, 90))
    windows = []
    real_cut = crop.cut
    monkeypatch.setattr(crop, "cut", lambda picture, window, side=crop.CROP_SIDE: windows.append(window)
                        or real_cut(picture, window, side))
    for reach in (1e6, 1e30, float("inf")):
        huge = crop.close_up(image, crop.Outline((-reach, -reach, reach, reach), (255, 0, 0)))
        whole = crop.close_up(image, crop.Outline((0, 0, 640, 480), (255, 0, 0)))  # the box as the image shows it
        assert np.array_equal(np.asarray(huge), np.asarray(whole))
    nan = crop.close_up(image, crop.Outline((float("nan"), 10, 20, float("nan")), (255, 0, 0)))
    assert nan.size == (240, 240)
    assert max(right - left for left, _, right, _ in windows) <= 640 + 2 * crop.MARGIN


# --- tables of millions of repeated rows ---------------------------------------------------------------

def refusal(path: Path, rows: int, images: int, boxes: int) -> str:
    cap = MIN_ROWS + max(ROWS_PER_IMAGE * images, 2 * boxes)
    return f"{path} holds {rows:,} rows, far more than {images:,} image(s) can ({cap:,} at most); not read"


BOMB = MIN_ROWS + 20_000  # rows: past the cap of a 6-image segment; the memory tests read 5,000,000


def test_a_detections_table_of_repeated_rows_is_refused_by_every_reader_in_one_line(tmp_path):
    segment = walking_pedestrian(tmp_path / "b")
    walking_pedestrian(tmp_path / "a")
    path = segment / "detections.parquet"
    repeated(path, BOMB)
    assert path.stat().st_size < 100_000
    line = refusal(path, BOMB, 6, 6)
    for argv, said in ((["eval", str(segment), "--quiet"], f"{segment}: no segment could be read ({line}; left out)"),
                       (["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp")],
                        f"{tmp_path / 'b'}: no segment results could be read (B: {line}; left out)"),
                       (["report", str(segment)], line), (["track", str(segment)], line)):
        assert run(*argv) == (2, f"detect: error: {said}\n"), argv[0]


def test_a_ground_truth_table_of_repeated_rows_is_refused_in_one_line(tmp_path):
    segment = walking_pedestrian(tmp_path)
    repeated(segment / "ground_truth.parquet", BOMB)
    line = refusal(segment / "ground_truth.parquet", BOMB, 6, 6)
    assert run("eval", str(segment), "--quiet") == (2, f"detect: error: {segment}: no segment could be read ({line}; "
                                                       f"left out)\n")


@pytest.mark.slow
@pytest.mark.parametrize("file", ["matches.parquet", "tracking.parquet"])
def test_an_evaluations_table_of_repeated_rows_leaves_its_part_of_the_page_out_with_a_note(tmp_path, file):
    segment = walking_pedestrian(tmp_path / "run")
    walking_pedestrian(tmp_path / "run", name="seg_other")
    assert run("eval", str(tmp_path / "run"), "--quiet")[0] == 0
    path = tmp_path / "run" / file  # the run's, read by each segment's page and the index
    repeated(path, 2 * BOMB)
    part = "the error counts and galleries are" if file == "matches.parquet" else "its ID switches are"
    code, err = run("report", str(tmp_path / "run"))
    assert code == 0 and f"detect: note: {refusal(path, 2 * BOMB, 12, 12)}; {part} left out of the page" in err
    assert (segment / "report.html").is_file() and (tmp_path / "run" / "index.html").is_file()


@pytest.mark.slow
def test_a_table_as_long_as_the_boxes_its_journal_records_is_read(tmp_path):
    """A run that kept more boxes an image than `ROWS_PER_IMAGE` (a low score floor, tiles) is read whole."""
    from detect.core.records import Detections
    from detect.evaluate.segment_results import load_segment

    many = MIN_ROWS + 2 * ROWS_PER_IMAGE  # on one image: past the cap of its image alone
    column = np.arange(many, dtype=np.float32)
    xyxy = np.stack([column % 1800, column // 1800, column % 1800 + 20, column // 1800 + 40], axis=1)
    crowd = Detections(xyxy, np.linspace(0.9, 0.1, many, dtype=np.float32), np.full(many, PERSON, np.int32),
                       ("person",) * many)
    segment = segment_folder(tmp_path, {key(0): (labels(((100.0, 100.0, 200.0, 300.0), PEDESTRIAN)), crowd)},
                             knows=[PERSON])
    assert len(load_segment(segment).detections) == many
    (segment / ".detect" / "journal.jsonl").unlink()  # without the journal's record, one image's cap holds
    with pytest.raises(InputError, match=re.escape(refusal(segment / "detections.parquet", many, 0, 0))):
        load_segment(segment)


def test_a_table_that_is_a_link_is_refused_naming_it(tmp_path):
    segment = walking_pedestrian(tmp_path / "seg")
    outside = tmp_path / "outside.parquet"
    (segment / "detections.parquet").rename(outside)
    (segment / "detections.parquet").symlink_to(outside)
    line = f"{segment / 'detections.parquet'} is a symbolic link; only regular files are read here"
    assert run("eval", str(segment), "--quiet") == (2, f"detect: error: {segment}: no segment could be read ({line}; "
                                                       f"left out)\n")
    assert run("report", str(segment)) == (2, f"detect: error: {line}\n")


# --- an edited journal -------------------------------------------------------------------------------

@pytest.mark.parametrize(("pattern", "edited"), [
    (r'"k":\[\d+', f'"k":[{10**30}'), (r'"k":\[\d+', '"k":[-5'), (r'"t":\d+', f'"t":{2**70}'), (r'"t":\d+', '"t":1.5'),
    (r'"c":\d+', '"c":9'),
    (r'"w":\d+', '"w":1e400'), (r'"h":\d+', '"h":"64"'),
])
def test_an_entry_edited_past_reading_ends_the_journal_for_every_reader(tmp_path, pattern, edited):
    """A resumed run does that image and the ones after it again; eval and the report read the
    folder as one without a journal, whichever entry it is (redraw refuses it, naming the byte)."""
    from detect.core.records import Detections, FrameResult
    from detect.results import journal
    from detect.results.results_folder import finished_frames

    results = [FrameResult(key(i), 96, 64, Detections(np.array([[1, 2, 30, 40]], np.float32), [0.9], [3], ("car",)))
               for i in range(4)]
    with journal.Journal(tmp_path) as log:
        for result in results:
            log.append(result)
    path = journal.journal_path(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:2], re.sub(pattern, edited, lines[2], count=1), *lines[3:]]))
    done, intact = journal.load(tmp_path, "seg_eval")
    assert list(done) == [key(0), key(1)] and intact == len("".join(lines[:2]).encode())
    assert finished_frames(tmp_path, "seg_eval") == {}
    path.write_text("".join(lines))
    assert list(finished_frames(tmp_path, "seg_eval")) == [key(i) for i in range(4)]


@pytest.mark.slow
def test_a_resumed_run_does_an_entry_edited_past_reading_again(tiny_v2_path, stub_dynamic_dir, tmp_path,
                                                               load_each_model_once):
    out = tmp_path / "out"
    argv = ["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet", "--no-gif",
            "--max-frames", "2"]
    assert main(argv) == 0
    segment = next(out.iterdir())
    path = segment / ".detect" / "journal.jsonl"
    before, table = path.read_bytes(), (segment / "detections.parquet").read_bytes()
    lines = before.decode().splitlines(keepends=True)
    edited = re.sub(r'"k":\[\d+', f'"k":[{10**30}', lines[4], count=1)
    path.write_text("".join(lines[:4] + [edited] + lines[5:]))
    code, err = run(*argv, "--resume")
    assert (code, err) == (0, "")
    assert path.read_bytes() == before and (segment / "detections.parquet").read_bytes() == table


# --- input sizes -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "problem"), [
    ("３２０", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    ("3_2_0", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    ("+320", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    (" 320 ", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    ("640x-384", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    ("fit:0x0", "expected fit:WxH of 32-4096 pixels a side"),
    ("fit:３２x32", "expected fit:WxH, e.g. fit:960x640"),
    ("fit:33x33", "a fit size is 32-pixel multiples a side (each image is resized to them); nearest: fit:32x32, "
                  "fit:64x64"),
    ("fit:970x640", "a fit size is 32-pixel multiples a side (each image is resized to them); nearest: fit:960x640, "
                    "fit:992x640"),
])
def test_an_input_size_is_ascii_digits_and_a_fit_size_one_the_model_runs_exactly(text, problem, tiny_v2_path, tmp_path):
    from detect.core.errors import UsageError
    from detect.model.inputs import FitSize, parse_input_size

    with pytest.raises(UsageError) as refused:
        parse_input_size(text)
    assert str(refused.value) == f"input size {text!r}: {problem}"
    code, err = run("segment", str(tiny_v2_path), "--out", str(tmp_path / "out"), "--input-size", text, "--quiet")
    assert (code, err) == (2, f"detect: error: input size {text!r}: {problem}\n")
    assert not (tmp_path / "out").exists()
    assert parse_input_size("fit:960x640") == FitSize(960, 640) and parse_input_size("320") == (320, 320)
    assert parse_input_size("NATIVE") is None and parse_input_size("640X384") == (640, 384)
