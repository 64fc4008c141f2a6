"""Ground truth on the frames and `detect eval` / `detect export coco`: numbers checked by hand on
tiny synthetic results, and against the library run directly on the exported COCO JSON."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.paths import REAL_SEGMENT
from helpers.results_folders import (
    BOX_A,
    BOX_B,
    CAR,
    ELSEWHERE,
    PERSON,
    SEGMENT,
    T0,
    dets,
    evaluation,
    key,
    labels,
    row,
    segment_folder,
)
from PIL import Image

from detect.cli import main
from detect.core.cameras import CameraName
from detect.core.errors import UsageError
from detect.core.records import LEVEL_1, LEVEL_2, FrameKey, Labels, WaymoType
from detect.evaluate.coco import image_id
from detect.evaluate.commands import run_eval
from detect.evaluate.pr_plots import plot_pr_curves, plot_thresholds
from detect.judge import HIT
from detect.model.classmap import default_class_map, load_class_map
from detect.render.label_boxes import TYPE_COLORS, draw_labels
from detect.render.verdicts import COLORS as ERROR_COLORS
from detect.render.verdicts import LEGEND_FILL
from detect.results.ground_truth import GROUND_TRUTH_FILE
from detect.results.layout import PR_CURVES_FILE, THRESHOLDS_FILE


@pytest.mark.slow
def test_ap_precision_recall_and_f1_match_a_hand_computation(tmp_path):
    # Two pedestrians; detections: 0.9 on A (hit), 0.8 elsewhere (false positive), 0.7 on B (hit).
    # PR points: (R 0.5, P 1), (0.5, 0.5), (1, 0.667). COCO's 101-point interpolated AP:
    # recall 0..0.50 (51 points) at precision 1, 0.51..1.00 (50 points) at 2/3.
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1), (BOX_B, 2, 1)),
                                               dets((BOX_A, 0.9, PERSON), (ELSEWHERE, 0.8, PERSON), (BOX_B, 0.7, PERSON)))},
                            threshold=0.75)
    report = evaluation(directory)
    pedestrian = row(report, "LEVEL_2", "PEDESTRIAN")
    assert pedestrian["ap50"] == pytest.approx((51 * 1 + 50 * 2 / 3) / 101, abs=1e-6)
    assert (pedestrian["labels"], pedestrian["detections"]) == (2, 2)  # two detections at or above 0.75
    assert pedestrian["precision"] == 0.5 and pedestrian["recall"] == 0.5 and pedestrian["f1"] == 0.5
    assert report["types"] == ["VEHICLE", "PEDESTRIAN", "SIGN", "CYCLIST"]  # a COCO model: every mapped type
    assert row(report, "LEVEL_2", "VEHICLE")["ap50"] is None  # no vehicle labels: no number, not zero
    assert row(report, "LEVEL_2", "ALL")["ap50"] == pedestrian["ap50"]  # the mean over types that have labels
    matches = pq.read_table(directory / "matches.parquet").to_pylist()
    assert sorted((m["kind"], m["score"] and round(m["score"], 1), m["matched"]) for m in matches) == [
        ("detection", 0.7, True), ("detection", 0.8, False), ("detection", 0.9, True), ("label", 0.7, True),
        ("label", 0.9, True)]
    assert (directory / "pr_curves.png").stat().st_size > 10_000


def test_the_printed_table_names_the_types_without_labels_instead_of_rows_of_dashes(tmp_path, capsys):
    """Types the data has no label of (here all but PEDESTRIAN) are named in one line, as on the
    page; the header says what "dets" are; the thresholds are written with one precision."""
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1), (BOX_B, 2, 1)),
                                               dets((BOX_A, 0.9, PERSON), (ELSEWHERE, 0.8, PERSON), (BOX_B, 0.7, PERSON)))},
                            threshold=0.75)
    assert main(["eval", str(directory)]) == 0
    assert capsys.readouterr().out.splitlines()[2:12] == [  # then the files written
        "COCO protocol: IoU 0.5 decides hits; at threshold 0.75: dets (boxes at or above it), P, R, F1",
        "AP50: COCO; AP70/50: Waymo; AP and AP_s/m/l: IoU 0.5:0.95",
        "type       level    labels  dets   AP50 AP70/50    AP AR100  AP_s  AP_m  AP_l     P     R    F1",
        "PEDESTRIAN LEVEL_1       2     2  0.835   0.835 0.835 1.000     -     - 0.835 0.500 0.500 0.500",
        "ALL        LEVEL_1       2     2  0.835   0.835 0.835 1.000     -     - 0.835 0.500 0.500 0.500",
        "PEDESTRIAN LEVEL_2       2     2  0.835   0.835 0.835 1.000     -     - 0.835 0.500 0.500 0.500",
        "ALL        LEVEL_2       2     2  0.835   0.835 0.835 1.000     -     - 0.835 0.500 0.500 0.500",
        "no labels of VEHICLE, SIGN, CYCLIST in the data: not scored",
        "AP50 per camera (LEVEL_2, ALL): FRONT 0.835",
        "F1-best threshold (LEVEL_2, now 0.75): PEDESTRIAN 0.69 (F1 0.80: P 0.67, R 1.00)"]


def test_the_thresholds_of_one_evaluation_are_written_with_the_decimals_the_most_precise_needs():
    from types import SimpleNamespace

    from detect.evaluate.outputs import threshold_text

    def text(threshold: float, *suggested: str):
        sweeps = {n: SimpleNamespace(best=SimpleNamespace(suggested=s)) for n, s in enumerate(suggested)}
        return threshold_text(SimpleNamespace(threshold=threshold, sweeps=sweeps))

    real = text(0.3, "0.239", "0.32", "0.17")  # the real frame's: "now 0.3: VEHICLE 0.239; PEDESTRIAN 0.32" before
    assert [real(v) for v in (0.3, "0.239", "0.32", "0.17")] == ["0.300", "0.239", "0.320", "0.170"]
    assert [text(0.3, "0.30")(v) for v in (0.3, "0.30")] == ["0.30", "0.30"]  # was "now 0.3: PEDESTRIAN 0.30"
    assert text(0.5)(0.5) == "0.50" and text(0.125)(0.125) == "0.125"


@pytest.mark.slow
def test_a_type_without_labels_has_no_false_alarms_and_stays_out_of_all(tmp_path):
    """A stop sign where the data has no SIGN labels (Waymo's 2D labels have none) is not scored:
    no precision, no false alarm, and ALL's counts are the labelled types' alone."""
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON), (ELSEWHERE, 0.8, 13)))},
                            threshold=0.5)
    report = evaluation(directory)
    sign, everything = row(report, "LEVEL_2", "SIGN"), row(report, "LEVEL_2", "ALL")
    assert (sign["labels"], sign["detections"], sign["false_positives"], sign["precision"]) == (0, 1, 0, None)
    assert (everything["true_positives"], everything["false_positives"], everything["precision"]) == (1, 0, 1.0)


@pytest.mark.slow
def test_level_1_ignores_level_2_labels_and_level_2_counts_them(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, LEVEL_1), (BOX_B, 2, LEVEL_2)),
                                               dets((BOX_A, 0.9, PERSON), (BOX_B, 0.8, PERSON)))})
    report = evaluation(directory)
    level1, level2 = row(report, "LEVEL_1", "PEDESTRIAN"), row(report, "LEVEL_2", "PEDESTRIAN")
    assert (level1["labels"], level1["true_positives"], level1["false_positives"]) == (1, 1, 0)  # B: neither
    assert (level2["labels"], level2["true_positives"], level2["false_positives"]) == (2, 2, 0)
    assert level1["ap50"] == pytest.approx(1.0) and level2["ap50"] == pytest.approx(1.0)


@pytest.mark.slow
def test_the_class_map_decides_what_counts_and_can_be_replaced(tmp_path):
    cyclist = (BOX_A, WaymoType.CYCLIST, 1)
    directory = segment_folder(tmp_path, {key(): (labels(cyclist), dets((BOX_A, 0.9, PERSON)))})
    assert row(evaluation(directory), "LEVEL_2", "CYCLIST")["true_positives"] == 0  # person -> PEDESTRIAN
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"person": "CYCLIST", "2": 4}))
    report = evaluation(directory, "--class-map", str(mapping))
    assert report["class_map"] == {"source": str(mapping), "map": {"bicycle": "CYCLIST", "person": "CYCLIST"}}
    assert report["types"] == ["CYCLIST"] and row(report, "LEVEL_2", "CYCLIST")["true_positives"] == 1


def test_the_default_map_and_a_person_only_model():
    classes = default_class_map()
    assert {name: kind for name, kind in classes.to_json()["map"].items()} == {
        "person": "PEDESTRIAN", "bicycle": "CYCLIST", "car": "VEHICLE", "motorcycle": "VEHICLE", "bus": "VEHICLE",
        "truck": "VEHICLE", "stop sign": "SIGN"}
    assert classes.types_for([PERSON]) == [WaymoType.PEDESTRIAN]
    assert classes.waymo_type(7) is None  # train: not a Waymo vehicle


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not valid JSON (Expecting property name enclosed in double quotes, line 1 column 2)"),
    ("[1]", "expected a JSON object from model classes to Waymo types"),
    ('{"unicorn": "VEHICLE"}', "unknown COCO class 'unicorn'"),
    ('{"car": "TRAIN"}', "'car' maps to 'TRAIN'; expected one of VEHICLE, PEDESTRIAN, SIGN, CYCLIST (or 1-4)"),
])
def test_a_bad_class_map_is_one_line(content, message, tmp_path):
    path = tmp_path / "map.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=f"^--class-map {path}: .*") as refused:
        load_class_map(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_results_without_labels_are_one_line_and_exit_2(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    directory = segment_folder(tmp_path, {key(): (Labels.empty(), dets((BOX_A, 0.9, PERSON)))})
    (directory / GROUND_TRUTH_FILE).unlink()
    assert main(["eval", str(directory)]) == 2
    assert without_status(capsys.readouterr().err) == (
        f"detect: error: {directory}: no labels for {SEGMENT} (no ground_truth.parquet: the input had no camera_box "
        f"file or camera_labels); name a camera_box file or folder with --gt PATH\n")


@pytest.mark.slow
def test_a_run_pools_the_matches_of_its_segments(tmp_path):
    # Each segment alone: one hit and one miss. Pooled, 0.9 hit > 0.8 miss > 0.7 hit > 0.6 miss.
    run = tmp_path / "run"
    segment_folder(run, {FrameKey("a", T0, CameraName.FRONT): (labels((BOX_A, 2, 1)),
                                                            dets((BOX_A, 0.9, PERSON), (ELSEWHERE, 0.6, PERSON)))}, name="a")
    segment_folder(run, {FrameKey("b", T0, CameraName.FRONT): (labels((BOX_B, 2, 1)),
                                                            dets((BOX_B, 0.7, PERSON), (ELSEWHERE, 0.8, PERSON)))}, name="b")
    report = evaluation(run)
    assert report["segments"] == ["a", "b"] and report["images"] == 2
    pedestrian = row(report, "LEVEL_2", "PEDESTRIAN")
    assert pedestrian["ap50"] == pytest.approx((51 * 1 + 50 * 2 / 3) / 101, abs=1e-6)  # pooled, not averaged (1.0)
    assert set(report["cameras_level_2"]) == {"FRONT"}


@pytest.mark.slow
def test_a_pool_of_one_segment_writes_the_pictures_drawing_it_gives_and_two_segments_draw_their_own(tmp_path):
    """A run of one segment writes the segment's pictures for the pool instead of drawing them again:
    they are the bytes the pool's own evaluation draws. A pool of two draws its own."""
    run = tmp_path / "run"
    segment_folder(run, {FrameKey("a", T0, CameraName.FRONT): (labels((BOX_A, 2, 1)),
                                                            dets((BOX_A, 0.9, PERSON), (ELSEWHERE, 0.6, PERSON)))}, name="a")
    result = run_eval(run)
    for name, plot in ((PR_CURVES_FILE, plot_pr_curves), (THRESHOLDS_FILE, plot_thresholds)):
        plot(result.evaluation, tmp_path / name)
        assert (run / name).read_bytes() == (tmp_path / name).read_bytes() == (run / "a" / name).read_bytes()
    segment_folder(run, {FrameKey("b", T0, CameraName.FRONT): (labels((BOX_B, 2, 1)),
                                                            dets((BOX_B, 0.7, PERSON), (ELSEWHERE, 0.8, PERSON)))}, name="b")
    result = run_eval(run)
    plot_thresholds(result.evaluation, tmp_path / "pooled.png")
    assert (run / THRESHOLDS_FILE).read_bytes() == (tmp_path / "pooled.png").read_bytes()
    assert (run / THRESHOLDS_FILE).read_bytes() != (run / "a" / THRESHOLDS_FILE).read_bytes()


def test_export_coco_writes_stable_ids_the_library_reads(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON), (BOX_B, 0.3, CAR)))})
    assert main(["export", "coco", str(directory), "--out", str(tmp_path / "coco")]) == 0
    instances = json.loads((tmp_path / "coco" / "instances.json").read_text())
    detections = json.loads((tmp_path / "coco" / "detections.json").read_text())
    assert [i["id"] for i in instances["images"]] == [image_id(key())] and image_id(key()) == image_id(key())
    assert instances["annotations"][0]["bbox"] == [100.0, 100.0, 200.0, 400.0]
    assert sorted((d["category_id"], d["score"]) for d in detections) == [(1, pytest.approx(0.3)), (2, pytest.approx(0.9))]


def test_labels_are_drawn_dashed_in_their_type_color_with_a_legend():
    image = np.zeros((400, 600, 3), np.uint8)
    drawn = draw_labels(image, labels(((100, 100, 300, 300), WaymoType.PEDESTRIAN, 1)), line_width=3)
    assert image.sum() == 0  # a copy: the input is untouched
    top_edge = drawn[100, 100:300]
    colored = np.all(top_edge == TYPE_COLORS[WaymoType.PEDESTRIAN], axis=1)
    assert 0.3 < colored.mean() < 0.8  # dashed: part of the edge, not all of it
    assert tuple(drawn[5, 595]) == TYPE_COLORS[WaymoType.PEDESTRIAN]  # the legend chip, top right
    with pytest.raises(TypeError, match="^labels must be a Labels, got list$"):
        draw_labels(image, [])


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_gt_draws_the_real_labels_and_eval_reads_them_back(real_frame_path, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--out", str(out), "--model", str(stub_dynamic_dir), "--gt",
                 "--no-gif", "--no-eval", "--no-report", "--quiet"]) == 0
    directory = out / REAL_SEGMENT
    table = pq.read_table(directory / GROUND_TRUTH_FILE)
    assert table.num_rows == 66 and set(table.column("type").to_pylist()) == {1, 2, 4}
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["input"]["labels"] == 66 and manifest["settings"]["draw_mode"] == "errors"
    assert manifest["settings"]["errors"] == {"protocol": "coco", "class_map": "default COCO -> Waymo map",
                                              "types": ["VEHICLE", "PEDESTRIAN", "CYCLIST"]}  # the labels' types
    with Image.open(directory / "frames" / "FRONT" / "1553735853462203.png") as png:
        first_row = np.asarray(png)[:40, -300:]  # the legend's first row: a dark chip, the hit line sample left of it
    assert np.all(first_row == LEGEND_FILL, axis=2).any() and np.all(first_row == ERROR_COLORS[HIT], axis=2).any()
    assert main(["eval", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "PEDESTRIAN LEVEL_2      15" in printed and "VEHICLE    LEVEL_2      50" in printed


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_gt_without_labels_is_refused_by_both_engines(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    source = tmp_path / "in" / "camera_image" / tiny_v2_path.name
    source.parent.mkdir(parents=True)
    source.write_bytes(tiny_v2_path.read_bytes())  # no camera_box beside it
    assert main(["segment", str(source), "--out", str(tmp_path / "out"), "--model", str(stub_dynamic_dir), "--gt"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"detect: error: {source}: --gt asks for labels, but none were found (no camera_box file beside a v2 file, no "
        f"camera_labels in a v1 file); name them with --gt PATH")
    assert main(["run", str(source), "--out", str(tmp_path / "ray"), "--model", str(stub_dynamic_dir), "--gt",
                 "--engine", "ray"]) == 1  # with Ray too: that segment fails with the same line
    assert f"{source}: --gt asks for labels, but none were found" in capsys.readouterr().err


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_a_pooled_run_equals_one_library_evaluation_of_everything(tmp_path):
    """Segments are matched one at a time and accumulated together (detect.evaluate.pooled): every
    number equals faster-coco-eval run once over the whole run's exported COCO JSON."""
    from faster_coco_eval import COCO, COCOeval_faster

    from detect.tools.bench_eval import make_results

    run = tmp_path / "run"
    for n in range(3):
        name = f"{n + 1:019d}_0000_000_0000_000"
        make_results(run / name, 40, 30, 8, seed=n, segment=name)
    assert main(["eval", str(run), "--quiet"]) == 0
    ours = {r["name"]: r for r in json.loads((run / "eval.json").read_text())["levels"]["LEVEL_2"]}
    assert main(["export", "coco", str(run), "--out", str(tmp_path / "coco")]) == 0
    truth = COCO(str(tmp_path / "coco" / "instances.json"))
    found = truth.loadRes(json.loads((tmp_path / "coco" / "detections.json").read_text()))
    for category in truth.getCatIds():
        once = COCOeval_faster(truth, found, "bbox", print_function=lambda *a: None)
        once.params.catIds = [category]
        once.evaluate()
        once.accumulate()
        once.summarize()
        name = truth.cats[category]["name"]
        if once.stats[1] < 0:  # no labels of this type: the library says -1, we say None
            assert ours[name]["ap50"] is None, name
            continue
        assert ours[name]["ap50"] == pytest.approx(once.stats[1], abs=1e-12), name
        assert ours[name]["ap"] == pytest.approx(once.stats[0], abs=1e-12), name
        assert ours[name]["ap_by_size"]["large"] == pytest.approx(once.stats[5], abs=1e-12), name
        assert ours[name]["ar100"] == pytest.approx(once.stats[8], abs=1e-12), name
    exported = len(truth.anns) + len(found.anns)
    assert len(pq.read_table(run / "matches.parquet")) == exported  # every detection and label, once


def test_the_pool_accumulates_exactly_as_the_library_with_ties_across_images():
    """Chunks of images pooled by detect.evaluate.pooled give the library's own precision and
    recall arrays, also when many scores tie across images (COCO breaks ties in image-id order)."""
    import numpy as np
    from faster_coco_eval import COCO, COCOeval_faster

    from detect.evaluate.pooled import Pool, evaluate_chunk

    rng = np.random.default_rng(7)
    images = [{"id": i} for i in range(1, 13)]
    labels, found = [], []
    for image in images:
        for _ in range(4):
            x, y, w, h = rng.uniform(0, 500), rng.uniform(0, 300), rng.uniform(8, 200), rng.uniform(8, 200)
            category = int(rng.choice([1, 2]))
            labels.append({"id": len(labels) + 1, "image_id": image["id"], "category_id": category, "bbox": [x, y, w, h],
                           "area": w * h, "iscrowd": int(rng.random() < 0.2)})
            found.append({"image_id": image["id"], "category_id": category, "score": float(rng.choice([0.3, 0.5, 0.9])),
                          "bbox": [x + rng.normal(0, 6), y + rng.normal(0, 6), w, h]})
            found.append({"image_id": image["id"], "category_id": category, "score": 0.5,
                          "bbox": list(rng.uniform(0, 400, 4))})
    truth = {"images": images, "categories": [{"id": 1}, {"id": 2}], "annotations": labels}
    once = COCOeval_faster(COCO(truth), COCO(truth).loadRes([dict(f) for f in found]), "bbox", print_function=lambda *a: None)
    once.params.catIds = [1, 2]
    once.evaluate()
    once.accumulate()
    pool = Pool([1, 2])
    for part in (images[7:], images[:7]):  # out of id order on purpose
        ids = {i["id"] for i in part}
        chunk = {**truth, "images": part, "annotations": [a for a in labels if a["image_id"] in ids]}
        run, gt, dt = evaluate_chunk(chunk, [f for f in found if f["image_id"] in ids], [1, 2])
        pool.add(run, gt, dt, {i: CameraName.FRONT for i in ids}, 0.5)
    pooled = pool.accumulate()
    np.testing.assert_array_equal(pooled["precision"][..., 0], np.asarray(once.eval["precision"])[..., -1])
    np.testing.assert_array_equal(pooled["recall"][..., 0], np.asarray(once.eval["recall"])[..., -1])


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_a_pooled_run_gives_each_segment_its_own_numbers_and_pages(tmp_path):
    """`detect eval RUN` also writes each segment's own eval.json (the same as evaluating it alone),
    so `detect report RUN` fills every segment page and the index's AP50 column."""
    import shutil

    from detect.tools.bench_eval import make_results

    run = tmp_path / "run"
    names = [f"{n + 1:019d}_0000_000_0000_000" for n in range(2)]
    for n, name in enumerate(names):
        make_results(run / name, 20, 20, 6, seed=n, segment=name)
    alone = tmp_path / "alone"
    shutil.copytree(run / names[1], alone)
    assert main(["eval", str(alone), "--quiet"]) == 0
    assert main(["eval", str(run), "--quiet"]) == 0
    own = json.loads((run / names[1] / "eval.json").read_text())
    assert own["levels"] == json.loads((alone / "eval.json").read_text())["levels"] and own["segments"] == [names[1]]
    assert json.loads((run / "eval.json").read_text())["segments"] == names  # the pooled one, at the top
    assert main(["report", str(run)]) == 0
    page = (run / names[0] / "report.html").read_text()
    assert "<h2 id='evaluation'>Against Waymo&#x27;s labels</h2>" in page
    index = (run / "index.html").read_text()
    ap = f"{own['levels']['LEVEL_2'][-1]['ap50']:.3f}"
    assert f"<td>{ap}</td>" in index


@pytest.mark.slow
def test_crowded_images_give_the_libraries_ap_in_eval_and_in_compare(tmp_path):
    """More than 100 detections of a type per image (common with --tile): COCO counts each image's
    best 100 per type. `detect eval` (pooled over two segments) equals faster-coco-eval and
    pycocotools run once on the exported COCO JSON, and `detect compare` computes the same AP."""
    import contextlib
    import copy
    import io

    from faster_coco_eval import COCO, COCOeval_faster
    from pycocotools.coco import COCO as PyCOCO
    from pycocotools.cocoeval import COCOeval

    from detect.tools.bench_eval import make_results

    run = tmp_path / "run"
    for n in range(2):
        name = f"{n + 1:019d}_0000_000_0000_000"
        make_results(run / name, 3, 700, 40, seed=10 + n, segment=name)  # ~230 boxes per type and image
    assert main(["eval", str(run), "--quiet"]) == 0
    ours = {r["name"]: r for r in json.loads((run / "eval.json").read_text())["levels"]["LEVEL_2"]}
    assert main(["export", "coco", str(run), "--out", str(tmp_path / "coco"), "--quiet"]) == 0
    truth = json.loads((tmp_path / "coco" / "instances.json").read_text())
    found = json.loads((tmp_path / "coco" / "detections.json").read_text())
    per_image = np.bincount(np.unique([d["image_id"] for d in found if d["category_id"] == 1], return_inverse=True)[1])
    assert per_image.min() > 100
    for category in (1, 2, 4):
        with contextlib.redirect_stdout(io.StringIO()):
            fast = COCOeval_faster(COCO(copy.deepcopy(truth)), COCO(copy.deepcopy(truth)).loadRes(copy.deepcopy(found)),
                                   "bbox", print_function=lambda *a: None)
            reference = PyCOCO()
            reference.dataset = {"info": {}, **copy.deepcopy(truth)}
            reference.createIndex()
            slow = COCOeval(reference, reference.loadRes(copy.deepcopy(found)), "bbox")
            for library in (fast, slow):
                library.params.catIds = [category]
                library.evaluate()
                library.accumulate()
                library.summarize()
        name = WaymoType(category).name
        assert ours[name]["ap50"] == pytest.approx(fast.stats[1], abs=1e-12), name
        assert ours[name]["ap50"] == pytest.approx(slow.stats[1], abs=1e-9), name
        assert ours[name]["ap"] == pytest.approx(slow.stats[0], abs=1e-9), name
    # compare's AP (its own pass over the images, for the paired bootstrap) is the same number
    assert main(["compare", str(run), str(run), "--out", str(tmp_path / "cmp"), "--bootstrap", "0", "--quiet"]) == 0
    compared = {t["name"]: t for t in json.loads((tmp_path / "cmp" / "compare.json").read_text())["types"]}
    for name in ("VEHICLE", "PEDESTRIAN", "CYCLIST"):
        assert compared[name]["ap"]["coco"]["a"] == pytest.approx(ours[name]["ap50"], abs=1e-12), name
        assert compared[name]["ap"]["waymo"]["a"] == pytest.approx(ours[name]["ap_waymo"], abs=1e-12), name
