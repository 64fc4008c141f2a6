"""`detect compare`: crafted results folders with known answers, the real frame with two real
models, and the page in a browser."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from helpers.browser import chromium, needs_chromium, phone_page
from helpers.comparisons import BOX, ELSEWHERE, FRAMES, PED, compare, folder
from helpers.paths import IN_CI, REAL_SEGMENT, SHARED
from helpers.results_folders import PERSON, dets, key, labels, segment_folder

from detect.cli import main
from detect.compare.comparison import Comparison
from detect.compare.sides import load_side, pair
from detect.compare.stats import Disagreement, Mark, Records, average_precision, collect
from detect.model.classmap import default_class_map


def pedestrian(report: dict, protocol: str = "coco") -> dict:
    """PEDESTRIAN's row, with its AP under `protocol` (A, B, the difference, the interval, the verdict)."""
    row = next(t for t in report["types"] if t["name"] == "PEDESTRIAN")
    return row | row["ap"][protocol]


def test_identical_folders_differ_by_nothing(tmp_path):
    a = folder(tmp_path, "a", [True] * FRAMES, apart=1.0)  # 20 s: 10 blocks of 2 s
    report = compare(a, a, tmp_path / "out")
    row = pedestrian(report)
    assert row["a"] == row["b"] == pytest.approx(1.0) and row["difference"] == 0.0
    assert row["low"] == row["high"] == 0.0 and row["verdict"] == "within noise"
    assert row["ap"]["waymo"] == row["ap"]["coco"] | {"metric": "AP50", "iou": 0.5}  # IoU 0.5 for pedestrians in both
    assert (row["found_by_both"], row["only_a"], row["only_b"], row["neither"]) == (FRAMES, 0, 0, 0)
    assert report["agreement"]["PEDESTRIAN"] == {"pairs": FRAMES, "only_a": 0, "only_b": 0, "score_correlation": None}
    assert report["differs"] == [] and report["images"] == FRAMES and report["frames"] == FRAMES
    assert [t["name"] for t in report["types"]] == ["PEDESTRIAN"]  # a person model: no VEHICLE row is made up


def test_the_runtime_each_side_ran_on_is_shown_and_marked_when_it_differs(tmp_path):
    a, b = folder(tmp_path, "a", [True] * FRAMES), folder(tmp_path, "b", [True] * FRAMES)
    for side, runtime in ((a, {"name": "tensorflow", "version": "2.21.0"}), (b, {"name": "openvino", "version": "2026.4.1"})):
        manifest_path = next(side.rglob("manifest.json"))
        manifest = json.loads(manifest_path.read_text())
        manifest["model"]["runtime"] = runtime
        manifest_path.write_text(json.dumps(manifest))
    report = compare(a, b, tmp_path / "out")
    assert (report["a"]["runtime"], report["b"]["runtime"]) == ("tensorflow 2.21.0", "openvino 2026.4.1")
    assert report["differs"] == ["runtime"]
    assert compare(a, a, tmp_path / "same")["differs"] == []


@pytest.mark.slow
def test_b_missing_half_of_as_hits_is_counted_and_outside_the_noise(tmp_path):
    a = folder(tmp_path, "a", [True] * FRAMES, apart=1.0)
    b = folder(tmp_path, "b", [i % 2 == 0 for i in range(FRAMES)], apart=1.0)
    report = compare(a, b, tmp_path / "out")
    row = pedestrian(report)
    assert (row["found_by_both"], row["only_a"], row["only_b"], row["neither"]) == (FRAMES // 2, FRAMES // 2, 0, 0)
    assert row["a"] == pytest.approx(1.0) and row["b"] == pytest.approx(51 / 101)  # recall 0.5 at precision 1
    assert report["bootstrap"]["blocks"] == 10 and row["high"] < 0 and row["verdict"] == "A better"
    assert report["agreement"]["PEDESTRIAN"]["pairs"] == FRAMES // 2 and report["agreement"]["PEDESTRIAN"]["only_a"] == 10
    printed = tmp_path / "printed.txt"
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out2")], stdout=printed.open("w")) == 0
    assert "PEDESTRIAN     20  AP50      1.000      0.505  -0.495  [" in printed.read_text()


def test_the_same_difference_over_two_seconds_of_video_gets_an_interval_but_no_verdict(tmp_path):
    """20 frames at 10 Hz are one block of consecutive frames: resampling single frames would call
    B's missing half "A better"; one block has no spread to measure, so no interval and no verdict."""
    a = folder(tmp_path, "a", [True] * FRAMES)
    b = folder(tmp_path, "b", [i % 2 == 0 for i in range(FRAMES)])
    report = compare(a, b, tmp_path / "out")
    row = pedestrian(report)
    assert row["difference"] == pytest.approx(51 / 101 - 1)
    assert (row["low"], row["high"], row["verdict"]) == (None, None, "too little data (1 block)")
    assert report["bootstrap"] | {"unit": "-"} == {
        "replicates": 1000, "seed": 0, "blocks": 1, "block_seconds": 2.0, "min_blocks": 10, "unit": "-",
        "interval": "2.5th-97.5th percentile of B - A over the resamples"}
    assert report["bootstrap"]["unit"] == ("blocks of consecutive frames: at least 2 s of a segment "
                                           "(a whole segment when shorter)")


def test_below_ten_blocks_the_interval_is_shown_and_the_verdict_says_too_little_data(tmp_path):
    """18 frames 1 s apart: 9 blocks of 2 s. B misses every other pedestrian: the interval is
    below 0, and the verdict is still not "A better"."""
    a = folder(tmp_path, "a", [True] * 18, apart=1.0)
    b = folder(tmp_path, "b", [i % 2 == 0 for i in range(18)], apart=1.0)
    report = compare(a, b, tmp_path / "out")
    row = pedestrian(report)
    assert row["high"] < 0 and row["verdict"] == "too little data (9 blocks)"
    printed = tmp_path / "printed.txt"
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "again")], stdout=printed.open("w")) == 0
    assert "intervals: paired bootstrap over 9 blocks of consecutive frames (2 s or more); a verdict needs 10\n" in (
        printed.read_text())
    assert "too little data (9 blocks)" in (tmp_path / "out" / "compare.html").read_text()


def test_compare_json_reads_back_as_the_comparison_it_was_written_from(tmp_path):
    a = folder(tmp_path, "a", [True] * FRAMES, apart=1.0)
    b = folder(tmp_path, "b", [i % 3 == 0 for i in range(FRAMES)], apart=1.0)
    report = compare(a, b, tmp_path / "out")
    comparison = Comparison.from_json(report)
    assert comparison.to_json() == report
    assert comparison.types[0].ap["coco"].verdict == "A better" and comparison.bootstrap.blocks == 10


def test_frames_only_one_side_has_are_named_and_left_out(tmp_path, capsys):
    a = folder(tmp_path, "a", [True] * 10)
    b = folder(tmp_path, "b", [True] * 10, first=5)
    report = compare(a, b, tmp_path / "out")
    assert report["images"] == 5 and pedestrian(report)["labels"] == 5
    err = capsys.readouterr().err
    assert "detect: note: 5 image(s) only in A (segment(s) seg_eval): left out" in err
    assert "detect: note: 5 image(s) only in B (segment(s) seg_eval): left out" in err
    c = folder(tmp_path, "c", [True] * 3, first=50)
    assert main(["compare", str(a), str(c), "--out", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.strip().endswith("have no image in common (same segment, timestamp and camera): "
                                                     "nothing to compare")


def test_without_labels_the_two_are_compared_box_for_box(tmp_path):
    images = {key(i): (labels(), dets((BOX, 0.5 + i / 100, PERSON), (ELSEWHERE, 0.6, PERSON))) for i in range(6)}
    a = segment_folder(tmp_path / "a", images, knows=[PERSON]).parent
    moved = {key(i): (labels(), dets((BOX, 0.55 + i / 90, PERSON))) for i in range(6)}
    b = segment_folder(tmp_path / "b", moved, knows=[PERSON]).parent
    report = compare(a, b, tmp_path / "out")
    assert report["labels"] is None and report["types"] == []
    agree = report["agreement"]["PEDESTRIAN"]
    assert (agree["pairs"], agree["only_a"], agree["only_b"]) == (6, 6, 0)
    assert agree["score_correlation"] == pytest.approx(1.0)


def test_ap_over_frames_is_cocos_accumulation():
    """Two frames: a hit at 0.9 and a miss at 0.8 in one, a hit at 0.7 in the other, 3 labels."""
    records = Records.build([(0, 0, 0.9, True), (0, 0, 0.8, False), (1, 1, 0.7, True)], np.array([2.0, 1.0]))
    # recall 1/3 at precision 1, 2/3 at 2/3, never 1: 34 points at 1, 33 at 2/3.
    assert average_precision(records) == pytest.approx((34 + 33 * 2 / 3) / 101)
    assert average_precision(records, np.array([0.0, 2.0])) == pytest.approx(1.0)  # frame 1 twice: all found, no miss
    assert average_precision(records, np.array([2.0, 0.0])) == pytest.approx(51 / 101)  # frame 0 twice: half found


@pytest.fixture(scope="module")
def two_models(coco_model, person_saved_model, real_frame_path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("two_models")
    for name, model in (("coco", coco_model), ("person", person_saved_model)):
        assert main(["segment", str(real_frame_path), "--model", str(model), "--out", str(out / name), "--quiet",
                     "--no-gif", "--no-report"]) == 0
    assert main(["compare", str(out / "coco"), str(out / "person"), "--out", str(out / "cmp"), "--quiet"]) == 0
    return out


def test_the_coco_model_against_the_person_model_on_the_real_frame(two_models):
    report = json.loads((two_models / "cmp" / "compare.json").read_text())
    rows = {t["name"]: t["ap"]["coco"] | t for t in report["types"]}
    assert rows["PEDESTRIAN"]["a"] is not None and rows["PEDESTRIAN"]["b"] is not None  # both output persons
    assert rows["VEHICLE"]["outputs_a"] and not rows["VEHICLE"]["outputs_b"] and rows["VEHICLE"]["b"] is None
    ours = {r["name"]: r for r in json.loads((two_models / "coco" / REAL_SEGMENT / "eval.json").read_text())
            ["levels"]["LEVEL_2"]}
    assert rows["PEDESTRIAN"]["a"] == pytest.approx(ours["PEDESTRIAN"]["ap50"], abs=1e-9)  # the same AP as detect eval
    assert rows["VEHICLE"]["a"] == pytest.approx(ours["VEHICLE"]["ap50"], abs=1e-9)
    assert rows["VEHICLE"]["ap"]["waymo"]["a"] == pytest.approx(ours["VEHICLE"]["ap_waymo"], abs=1e-9)
    assert report["animations"] == [f"compare_{c}.gif" for c in ("FRONT", "FRONT_LEFT", "FRONT_RIGHT", "SIDE_LEFT",
                                                                  "SIDE_RIGHT")]
    page = (two_models / "cmp" / "compare.html").read_text()
    assert "not output" in page and "Where they disagree most" in page
    assert report["names"] == {"A": "CenterNet MobileNetV3", "B": "SSDLite MobileNet v2, persons only (test)"}  # models
    close_ups = [f for entry in report["gallery"] for f in entry["close_ups"]]
    assert close_ups and all((two_models / "cmp" / f).is_file() for f in close_ups)
    assert not any("drawn frames" in n for n in report["notes"])  # cut from the camera images


@pytest.fixture(scope="module")
def tiled_pair(coco_model, real_frame_path, tmp_path_factory) -> Path:
    """The real frame run untiled (A) and with --tile 512 (B) by the COCO CenterNet, compared."""
    out = tmp_path_factory.mktemp("tiled_pair")
    for name, extra in (("plain", []), ("tiled", ["--tile", "512"])):
        assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out / name), "--quiet",
                     "--no-gif", "--no-report", *extra]) == 0
    assert main(["compare", str(out / "plain"), str(out / "tiled"), "--out", str(out / "cmp"), "--quiet"]) == 0
    return out / "cmp"


def test_tiles_on_the_real_frame_find_more_vehicles_at_iou_05_and_fewer_at_waymos_07(tiled_pair):
    """compare.json holds both protocols' AP of each type for A and B: tiles raise VEHICLE's AP50
    and lower its AP70 (Waymo's protocol); one frame is one block, too little for a verdict."""
    report = json.loads((tiled_pair / "compare.json").read_text())
    rows = {t["name"]: t["ap"] for t in report["types"]}
    vehicle, cyclist = rows["VEHICLE"], rows["CYCLIST"]
    assert (vehicle["coco"]["metric"], vehicle["coco"]["iou"], vehicle["waymo"]["metric"], vehicle["waymo"]["iou"]) == (
        "AP50", 0.5, "AP70", pytest.approx(0.7))
    # The documented numbers are OpenVINO's (a CPU's default runtime); the suite runs TensorFlow: within 0.005.
    assert (vehicle["coco"]["a"], vehicle["coco"]["b"]) == pytest.approx((0.374, 0.483), abs=5e-3)
    assert (vehicle["waymo"]["a"], vehicle["waymo"]["b"]) == pytest.approx((0.266, 0.203), abs=5e-3)
    assert vehicle["coco"]["difference"] > 0.1 and vehicle["waymo"]["difference"] < -0.05
    assert cyclist["waymo"] == cyclist["coco"] | {"metric": "AP50", "iou": 0.5}
    assert (cyclist["waymo"]["a"], cyclist["waymo"]["b"]) == pytest.approx((0.5, 0.333), abs=5e-3)
    assert report["bootstrap"]["blocks"] == 1
    assert {p["verdict"] for ap in rows.values() for p in ap.values()} == {"too little data (1 block)"}


@needs_chromium
def test_the_pages_first_screen_shows_the_vehicles_change_and_a_phone_needs_no_sideways_scroll(tiled_pair):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((tiled_pair / "compare.html").as_uri())
        rows = page.locator("table.changes tr", has_text="AP70")  # VEHICLE's Waymo row, below its AP50
        assert rows.count() == 1 and "-0.06" in rows.inner_text()
        assert rows.evaluate("(row) => row.getBoundingClientRect().bottom + window.scrollY") <= 900
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # The verdict table fits: no column of it is off-screen in a table that scrolls sideways.
        assert page.evaluate("(() => { const t = document.querySelector('table.changes'); "
                             "return t.scrollWidth <= t.clientWidth && t.getBoundingClientRect().right <= 390; })()")


@pytest.fixture(scope="module")
def mot17_clips(coco_model, tmp_path_factory) -> Path:
    """Two runs (the native input, and fit:1056x704) of two sub-second MOT17 clips (6 frames at 14 Hz,
    7 at 30 Hz), compared."""
    folder = SHARED / "fixtures" / "mot17mini_v2" / "camera_image"
    clips = [folder / f"{name}.parquet" for name in ("mot17_05_frcnn", "mot17_11_frcnn")]
    if not all(clip.is_file() for clip in clips):
        if IN_CI:
            pytest.fail(f"CI=true but the MOT17 fixture is missing: {folder}", pytrace=False)
        pytest.skip(f"the MOT17 fixture is not at {folder} (it lives in ../shared, outside the repo)")
    out = tmp_path_factory.mktemp("mot17_clips")
    for name, size in (("native", "native"), ("large", "fit:1056x704")):
        assert main(["run", *map(str, clips), "--model", str(coco_model), "--out", str(out / name), "--input-size",
                     size, "--quiet", "--no-gif", "--no-png", "--no-report"]) == 0
    assert main(["compare", str(out / "native"), str(out / "large"), "--out", str(out / "cmp"), "--quiet"]) == 0
    return out / "cmp"


def test_two_runs_of_two_sub_second_clips_get_intervals_but_no_verdict(mot17_clips):
    """13 frames, 0.56 s of video: two blocks. AP, HOTA, MOTA and IDF1 differ, each with an interval
    from the two blocks, and no better/worse verdict (resampling single frames gave four)."""
    report = json.loads((mot17_clips / "compare.json").read_text())
    assert report["frames"] == 13 and report["bootstrap"]["blocks"] == 2
    assert report["bootstrap"]["unit"].startswith("blocks of consecutive frames: at least 2 s of a segment")
    changes = [pedestrian(report), *report["tracking"]]
    assert [c["metric"] for c in changes] == ["AP50", "HOTA", "MOTA", "IDF1"]
    for change in changes:
        assert change["difference"] != 0 and change["low"] is not None and change["high"] is not None
        assert change["verdict"] == "too little data (2 blocks)"


@needs_chromium
def test_the_page_opens_in_a_browser_without_errors_and_fits_a_phone(two_models):
    with phone_page() as (page, errors):
        page.goto((two_models / "cmp" / "compare.html").as_uri())
        widths = page.evaluate("""async () => {
            const images = Array.from(document.images);
            await Promise.all(images.map((img) => img.decode().catch(() => null)));
            return images.map((img) => img.naturalWidth);
        }""")
        assert widths and all(w > 0 for w in widths)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390 and errors == []


def test_collect_names_what_it_counts(tmp_path):
    """`collect` takes the two sides and names its counts: agreement per type, disagreement per image."""
    class_map = default_class_map()
    a = load_side("A", folder(tmp_path, "a", [True] * 4), class_map, None)
    b = load_side("B", folder(tmp_path, "b", [True, False, True, False]), class_map, None)
    pairing = pair(a, b)
    collected = collect(a, b, pairing.common, dict(pairing.labels or {}), class_map)
    agreement = collected.agreement[PED]
    assert (agreement.pairs, agreement.only_a, agreement.only_b) == (2, 2, 0)
    assert len(agreement.scores) == 2 and np.array(agreement.scores).ravel().tolist() == pytest.approx([0.9] * 4, abs=1e-6)
    assert collected.disagreement == [Disagreement(1, key, "labeled objects found by one side only",
                                                   (Mark(BOX, "A", "PEDESTRIAN"),))  # the pedestrian only A found
                                      for key in pairing.common[1::2]]


def test_what_differs_between_the_sides_leaves_out_where_and_how_fast():
    from detect.compare.comparison import SideFacts

    one = SideFacts("/a", "CenterNet", "CenterNet long", "ab12", "80 COCO classes", "fit:960x640", 0.3, 0.05, 0.7,
                    "none", "openvino 2026.4.1", 7.1, 120.0)
    other = dataclasses.replace(one, results="/b", images_per_second=3.0, detect_ms_per_image=300.0, threshold=0.4,
                                tiles=512)
    assert list(one.to_json())[5:9] == ["input size", "threshold", "score floor", "NMS IoU"]
    from detect.compare.comparison import Bootstrap
    from detect.core.matching import COCO_PROTOCOL

    comparison = Comparison(one, other, ("a", "b"), 5, 1, (), None, COCO_PROTOCOL, Bootstrap(0, 0, 1), (), {}, (1.0, 2.0))
    assert comparison.differs == ["threshold", "tiles"]
    assert comparison.to_json()["differs"] == ["threshold", "tiles"] and comparison.to_json()["a"] == one.to_json()


def test_the_printed_summary_counts_one_frame_and_one_box_in_the_singular(tmp_path, capsys):
    a = folder(tmp_path, "a", [True])
    assert main(["compare", str(a), str(a), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "1 common image (1 frame); differs: nothing recorded" in out
    assert "intervals: paired bootstrap over 1 block of consecutive frames (2 s or more)" in out
    assert "PEDESTRIAN: 1 box in both, 0 only in A, 0 only in B" in out
