"""TIDE's error kinds and the confusion matrix: each kind on a crafted image, the numbers in
eval.json on tiny results, the matrix's sums against the evaluation's counts, the printed lines."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.cli import without_status
from helpers.results_folders import CAR, PERSON, dets, key, labels, segment_folder

from detect.cli import main
from detect.evaluate.error_kinds import (
    BACKGROUND,
    BOTH,
    CLASSIFICATION,
    DUPLICATE,
    HIT,
    KINDS,
    LOCALISATION,
    ErrorKinds,
    image_errors,
)

VEHICLE, PEDESTRIAN, CYCLIST = 1, 2, 4
BICYCLE = 2  # COCO class


def test_each_detection_gets_the_first_kind_that_fits_and_a_label_nothing_points_at_is_missed():
    """TIDE's order: localisation (own type, IoU 0.1 to 0.5), classification (another type's label
    at IoU 0.5), duplicate (a label of its type already matched), background (nothing above 0.1),
    both (the rest); the labels a localisation or classification error points at are not missed."""
    gt = np.array([[0, 0, 100, 100], [300, 0, 400, 100], [600, 0, 700, 100], [1500, 0, 1600, 100]], float)
    gt_types = np.array([VEHICLE, PEDESTRIAN, VEHICLE, VEHICLE])
    boxes = np.array([[0, 0, 100, 100],  # the hit
                      [0, 0, 100, 100],  # the same car again
                      [300, 0, 400, 100],  # a car on the pedestrian
                      [600, 0, 640, 100],  # a car at IoU 0.4 with its label
                      [1000, 1000, 1100, 1100],  # nothing there
                      [40, 0, 140, 100]], float)  # a pedestrian at IoU 0.43 with the car
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    types = np.array([VEHICLE, VEHICLE, VEHICLE, VEHICLE, VEHICLE, PEDESTRIAN])
    found = image_errors(boxes, scores, types, gt, gt_types)
    assert found.order.tolist() == [0, 1, 2, 3, 4, 5]
    assert found.kind.tolist() == [HIT, DUPLICATE, CLASSIFICATION, LOCALISATION, BACKGROUND, BOTH]
    assert found.fix_type.tolist() == [-1, -1, PEDESTRIAN, VEHICLE, -1, -1]  # what each becomes when fixed
    assert found.missed.tolist() == [False, False, False, True]


def test_fixing_a_kind_gives_back_the_ap_it_cost_per_type_and_in_the_mean():
    """One car boxed at IoU 0.4 (a localisation error, AP 0) and one pedestrian found (AP 1):
    fixing localisation gives VEHICLE its whole AP; the mean over the two labelled types gains half."""
    pool = ErrorKinds([VEHICLE, PEDESTRIAN, CYCLIST])
    gt, gt_types = np.array([[600, 0, 700, 100], [0, 0, 100, 200]], float), np.array([VEHICLE, PEDESTRIAN])
    boxes, scores = np.array([[600, 0, 640, 100], [0, 0, 100, 200]], float), np.array([0.9, 0.8])
    types = np.array([VEHICLE, PEDESTRIAN])
    pool.add(image_errors(boxes, scores, types, gt, gt_types), scores, types, gt_types)
    found = pool.scores()
    assert list(found) == ["VEHICLE", "PEDESTRIAN", "mean"]  # CYCLIST has no labels
    assert found["VEHICLE"] == {**dict.fromkeys(KINDS, 0.0), "localisation": pytest.approx(1.0)}
    assert found["PEDESTRIAN"] == dict.fromkeys(KINDS, 0.0)
    assert found["mean"]["localisation"] == pytest.approx(0.5) and found["mean"]["missed"] == 0.0


def _scene(tmp_path):
    """One image: a car found (hit), a car's label left (missed), a car on a pedestrian (the label
    becomes VEHICLE; the car is a false alarm), a person on nothing (false alarm), a person below
    the threshold on the pedestrian (not drawn), a rider (person + bicycle: a CYCLIST) on nothing."""
    car_a, car_c, walker = (100, 100, 300, 300), (1400, 100, 1600, 300), (600, 100, 700, 400)
    images = {key(): (labels((car_a, VEHICLE), (car_c, VEHICLE), (walker, PEDESTRIAN)),
                      dets((car_a, 0.9, CAR), (walker, 0.8, CAR), ((900, 600, 1000, 900), 0.7, PERSON),
                           (walker, 0.3, PERSON), ((1200, 700, 1260, 900), 0.65, PERSON),
                           ((1195, 750, 1265, 905), 0.6, BICYCLE)))}
    return segment_folder(tmp_path, images, threshold=0.5)


@pytest.mark.slow
def test_the_confusion_matrix_rows_sum_to_the_labels_and_its_background_row_to_the_false_alarms(tmp_path):
    directory = _scene(tmp_path)
    assert main(["eval", str(directory), "--quiet"]) == 0
    report = json.loads((directory / "eval.json").read_text())
    confusion = report["confusion"]
    assert confusion["names"] == ["VEHICLE", "PEDESTRIAN", "SIGN", "CYCLIST", "background"]
    assert (confusion["level"], confusion["iou"], confusion["threshold"]) == ("LEVEL_2", 0.5, 0.5)
    assert confusion["matrix"] == [[1, 0, 0, 0, 1],  # car A found, car C missed
                                   [1, 0, 0, 0, 0],  # the pedestrian taken by a car
                                   [0, 0, 0, 0, 0],
                                   [0, 0, 0, 0, 0],
                                   [1, 1, 0, 1, 0]]  # the false alarms of each type
    rows = {r["name"]: r for r in report["levels"]["LEVEL_2"]}
    matrix = np.array(confusion["matrix"])
    for k, name in enumerate(confusion["names"][:-1]):
        assert matrix[k].sum() == rows[name]["labels"]
        assert matrix[-1, k] == rows[name]["false_positives"] or not rows[name]["labels"]
    assert confusion["classes"] == [
        {"class_id": CAR, "name": "car", "type": "VEHICLE", "detections": 2, "on": {"VEHICLE": 1, "PEDESTRIAN": 1}},
        {"class_id": PERSON, "name": "person", "type": "PEDESTRIAN", "detections": 1, "on": {"background": 1}},
        {"class_id": BICYCLE, "name": "bicycle", "type": "CYCLIST", "detections": 1, "on": {"background": 1}}]


@pytest.mark.slow
def test_eval_json_holds_the_six_kinds_per_level_for_each_labelled_type_and_their_mean(tmp_path):
    directory = _scene(tmp_path)
    assert main(["eval", str(directory), "--quiet"]) == 0
    kinds = json.loads((directory / "eval.json").read_text())["error_kinds"]
    assert list(kinds) == ["LEVEL_1", "LEVEL_2"]
    for level in kinds.values():
        assert list(level) == ["VEHICLE", "PEDESTRIAN", "mean"]
        for values in level.values():
            assert list(values) == list(KINDS) and all(0 <= v <= 1 for v in values.values())
    # Every score counts (no threshold): the person on nothing (0.7) outranks the one on the
    # pedestrian (0.3): fixing that background error takes PEDESTRIAN's AP from 0.5 to 1.
    assert kinds["LEVEL_2"]["PEDESTRIAN"] == {**dict.fromkeys(KINDS, 0.0), "background": pytest.approx(0.5)}
    # Car C missed: VEHICLE's AP stops at recall 0.5 (51 of 101 points); without it, AP 1.
    assert kinds["LEVEL_2"]["VEHICLE"]["missed"] == pytest.approx(50 / 101)
    assert kinds["LEVEL_2"]["VEHICLE"]["classification"] == 0.0  # the car on the pedestrian ranks after the hit


@pytest.mark.slow
def test_detect_eval_prints_the_error_kinds_and_the_confusion_matrix(tmp_path, capsys):
    directory = _scene(tmp_path)
    assert main(["eval", str(directory)]) == 0
    out = without_status(capsys.readouterr().out).splitlines()
    start = out.index("AP50 each kind of error costs (TIDE, LEVEL_2: what fixing it alone gains)")
    assert out[start + 1] == "type         class    loc   both   dupe   bkgd missed"
    assert out[start + 3] == "PEDESTRIAN   0.000  0.000  0.000  0.000  0.500  0.000"
    assert out[start + 4].startswith("mean ")
    assert out[start + 5:start + 7] == [
        "confusion at threshold 0.50 and IoU 0.5 (LEVEL_2): rows labels, columns detections;",
        "its background row holds the false alarms, its background column the labels missed"]
    assert out[start + 8:start + 11] == [
        "VEHICLE              1          0          0          0          1",
        "PEDESTRIAN           1          0          0          0          0",
        "background           1          1          0          1          0"]  # rows without labels left out
    assert out[start + 12] == "  car -> VEHICLE: 2 (VEHICLE 1, PEDESTRIAN 1)"
    assert all(len(line) < 100 for line in out)


@pytest.mark.slow
def test_the_segment_pages_and_the_index_show_the_error_kinds_and_the_confusion_matrix(tmp_path):
    """A run of two segments: the index shows the pooled numbers, each page its own segment's."""
    run = tmp_path / "run"
    car = (100, 100, 300, 300)
    for n, name in enumerate(("seg_a", "seg_b")):
        images = {key(0, segment=name): (labels((car, VEHICLE)), dets(((100, 100, 300, 260 - 80 * n), 0.9, CAR)))}
        segment_folder(run, images, threshold=0.5, name=name)
    assert main(["eval", str(run), "--quiet"]) == 0
    assert main(["report", str(run)]) == 0
    index, page = (run / "index.html").read_text(), (run / "seg_b" / "report.html").read_text()
    for html in (index, page):
        assert "<h3>Where the AP goes: kinds of error</h3>" in html and "<h3>Confusion</h3>" in html
        assert "<tr><td>car</td><td>VEHICLE</td>" in html
    # seg_b's car is boxed at IoU 0.4 (a localisation error, AP 0); seg_a's is a hit.
    assert "<tr><td>VEHICLE</td><td>0.000</td><td>1.000</td>" in page
    assert "<tr><td>VEHICLE</td><td>0.000</td><td>0.495</td>" in index  # pooled: AP 51/101, 1 when fixed
    assert "<tr><td>VEHICLE labels</td><td data-value='1'>1</td>" in index  # one of the two found


@pytest.mark.parametrize("edited", [{"error_kinds": "x", "confusion": {"names": ["A"], "matrix": "no"}},
                                    {"error_kinds": {"LEVEL_2": {"VEHICLE": {"missed": "<b>"}}},
                                     "confusion": {"names": ["A", "background"], "matrix": [[1, 2], [3]]}}])
def test_an_edited_eval_json_shows_no_broken_table_and_no_markup(edited):
    from detect.report.failures_section import failures_section
    from detect.results.eval_record import EvalRecord

    html = failures_section(EvalRecord.from_json(edited))
    assert "<b>" not in html and "Confusion" not in html


def test_an_image_without_labels_makes_every_detection_a_background_error():
    boxes, scores, types = np.array([[0, 0, 10, 10], [5, 5, 20, 20]], float), np.array([0.9, 0.2]), np.array([1, 2])
    found = image_errors(boxes, scores, types, np.zeros((0, 4)), np.zeros(0, int))
    assert found.kind.tolist() == [BACKGROUND, BACKGROUND] and not found.true.any()
    found = image_errors(boxes, scores, types, np.zeros((0, 4)), np.zeros(0, int), np.zeros(0, bool))
    assert found.kind.tolist() == [BACKGROUND, BACKGROUND]
