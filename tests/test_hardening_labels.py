"""Hostile labels: camera_box files with no rows for the
segment, wrong column types, NaN / negative / out-of-enum rows, null difficulties; results files
that are broken for one segment of many. Each ends in correct output or one line, nothing lost."""

from __future__ import annotations

import io
import json
import math
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.examples import examples
from helpers.label_tables import SEG, TS, camera_box
from helpers.paths import TINY_SEGMENT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from detect.cli import main
from detect.core.errors import InputError
from detect.results.ground_truth import GROUND_TRUTH_FILE, read_ground_truth
from detect.waymo.camera_labels import DIFFICULTY, labels_from_camera_box
from detect.waymo.schema import (
    BOX_CENTER_X,
    BOX_CENTER_Y,
    BOX_SIZE_X,
    BOX_SIZE_Y,
    BOX_TYPE,
    CAMERA,
    OBJECT_ID,
    SEGMENT,
    TIMESTAMP,
)

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")

@pytest.mark.parametrize("rows", [[], [{SEGMENT: "another_segment"}]])
def test_a_camera_box_without_rows_for_the_segment_means_no_labels(rows, tmp_path):
    found = labels_from_camera_box(str(camera_box(tmp_path / "cb.parquet", rows)), SEG)
    assert found.count == 0 and found.dropped == 0 and dict(found.by_key) == {}


@pytest.mark.slow
def test_a_segment_beside_an_empty_camera_box_is_processed_and_eval_says_it_has_no_labels(tiny_v2_path, stub_dynamic_dir,
                                                                                           tmp_path, capsys):
    split = tmp_path / "training"
    (split / "camera_image").mkdir(parents=True)
    source = split / "camera_image" / tiny_v2_path.name
    source.write_bytes(tiny_v2_path.read_bytes())
    camera_box(split / "camera_box" / tiny_v2_path.name, [{SEGMENT: "another_segment"}])
    out = tmp_path / "out"
    assert main(["segment", str(source), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif"]) == 0
    manifest = json.loads((out / TINY_SEGMENT / "manifest.json").read_text())
    assert manifest["input"]["labels"] == 0 and manifest["input"]["labels_dropped"] == 0
    assert without_status(capsys.readouterr().err) == ""  # --quiet: not even the note that its evaluation found no labels
    assert main(["eval", str(out)]) == 2
    assert without_status(capsys.readouterr().err) == (
        f"detect: error: {out}: no labels for {TINY_SEGMENT} (their labels have no rows for the images processed: "
        f"ground_truth.parquet is empty, as the labels the run found were); name a camera_box file or folder with "
        f"--gt PATH\n")


@pytest.mark.parametrize("column, kind, values, expected", [
    (CAMERA, pa.string(), ["1"], "whole numbers"),
    (TIMESTAMP, pa.string(), [str(TS)], "whole numbers"),
    (BOX_CENTER_X, pa.string(), ["100"], "numbers"),
    (BOX_CENTER_Y, pa.list_(pa.float64()), [[1.0, 2.0]], "numbers"),
    (BOX_TYPE, pa.float32(), [1.0], "whole numbers"),
])
def test_a_column_of_the_wrong_type_names_the_file_and_the_column(column, kind, values, expected, tmp_path):
    path = camera_box(tmp_path / "cb.parquet", [{column: v} for v in values], {column: kind})
    with pytest.raises(InputError) as err:
        labels_from_camera_box(str(path), SEG)
    stored = pq.read_schema(path).field(column).type  # as Parquet gives it back (a list's item is named "element")
    assert str(err.value) == f"{path}: column {column} holds {stored}, expected {expected}: not a camera_box component"


def test_bad_rows_are_dropped_and_counted_the_good_ones_kept(tmp_path):
    rows = [
        {},  # good
        {CAMERA: 9},  # unknown camera: that row only
        {BOX_CENTER_X: math.nan}, {BOX_SIZE_Y: math.inf}, {BOX_SIZE_X: -5.0}, {BOX_SIZE_X: 0.0},
        {BOX_TYPE: 257},  # outside Waymo's enum: never wrapped to VEHICLE
        {DIFFICULTY: 7},
        {DIFFICULTY: None, CAMERA: 2},  # null difficulty: LEVEL_1, as Waymo's metrics read it
        {TIMESTAMP: None},
    ]
    found = labels_from_camera_box(str(camera_box(tmp_path / "cb.parquet", rows)), SEG)
    assert found.count == 2 and found.dropped == 8
    assert sorted(int(k.camera_name) for k in found.by_key) == [1, 2]
    assert all(labels.types.tolist() == [1] and labels.difficulty.tolist() == [1] for labels in found.by_key.values())


def test_null_difficulties_print_no_warning(tmp_path):
    path = camera_box(tmp_path / "cb.parquet", [{DIFFICULTY: None}] * 55 + [{}] * 11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert labels_from_camera_box(str(path), SEG).count == 66


@settings(max_examples=examples(1 / 5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({
    CAMERA: st.integers(-128, 127),
    BOX_CENTER_X: st.floats(allow_nan=True, allow_infinity=True),
    BOX_CENTER_Y: st.floats(-1e7, 1e7),
    BOX_SIZE_X: st.floats(allow_nan=True, allow_infinity=True),
    BOX_SIZE_Y: st.floats(-10, 1e7),
    BOX_TYPE: st.integers(-300, 300),
    DIFFICULTY: st.one_of(st.none(), st.integers(-128, 127)),
}), max_size=12))
def test_any_camera_box_rows_give_labels_or_counted_drops(tmp_path_factory, rows):
    path = camera_box(tmp_path_factory.mktemp("cb") / "cb.parquet", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = labels_from_camera_box(str(path), SEG)
    assert found.count + found.dropped == len(rows)
    for labels in found.by_key.values():
        assert np.isfinite(labels.xyxy).all() and (labels.xyxy[:, 2:] > labels.xyxy[:, :2]).all()
        assert set(labels.types.tolist()) <= {0, 1, 2, 3, 4} and set(labels.difficulty.tolist()) <= {1, 2}


def test_an_edited_ground_truth_table_drops_bad_rows(tmp_path):
    from detect.results.ground_truth import SCHEMA

    rows = {SEGMENT: [SEG] * 4, TIMESTAMP: [TS] * 4, CAMERA: [1, 1, 9, 1], OBJECT_ID: ["a", "b", "c", "d"],
            "type": [1, 2, 1, 100], "difficulty": [1, 2, 1, 1], "xmin": [0.0, float("nan"), 0.0, 0.0],
            "ymin": [0.0] * 4, "xmax": [10.0] * 4, "ymax": [10.0] * 4}
    pq.write_table(pa.table(rows, schema=pa.schema([SCHEMA.field(name) for name in rows])), tmp_path / GROUND_TRUTH_FILE)
    labels, dropped = read_ground_truth(tmp_path / GROUND_TRUTH_FILE)
    assert dropped == 3 and [lab.object_ids for lab in labels.values()] == [("a",)]


@pytest.mark.slow
def test_dropped_labels_reach_eval_json_and_export_writes_valid_json(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0  # evaluated below, with edited labels
    timestamp = pq.read_table(out / TINY_SEGMENT / "detections.parquet").column(TIMESTAMP)[0].as_py()
    gt = camera_box(tmp_path / "gt" / f"{TINY_SEGMENT}.parquet",
                    [{SEGMENT: TINY_SEGMENT, TIMESTAMP: timestamp}, {SEGMENT: TINY_SEGMENT, TIMESTAMP: timestamp,
                                                                    BOX_CENTER_X: math.nan}])
    assert main(["eval", str(out), "--gt", str(gt), "--quiet"]) == 0
    assert "1 unusable label row(s) dropped" in capsys.readouterr().err
    assert json.loads((out / "eval.json").read_text())["labels_dropped"] == 1
    assert main(["export", "coco", str(out), "--gt", str(gt), "--out", str(tmp_path / "coco")]) == 0
    for name in ("instances.json", "detections.json"):
        text = (tmp_path / "coco" / name).read_text()
        assert "NaN" not in text and "Infinity" not in text
        json.loads(text)


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_one_broken_segment_or_missing_gt_file_leaves_the_others_evaluated(real_frame_path, tiny_v2_path, stub_dynamic_dir,
                                                                           tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(real_frame_path), str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out),
                 "--quiet", "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0
    capsys.readouterr()
    broken = out / TINY_SEGMENT / "detections.parquet"
    broken.write_bytes(b"not parquet")
    assert main(["eval", str(out), "--quiet"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"detect: note: {broken}: not a readable detections table") and first.endswith("; left out")
    report = json.loads((out / "eval.json").read_text())
    assert report["segments"] == ["1024360143612057520_3580_000_3600_000"]
    # --gt FOLDER without a file for one of the segments: that one is left out, the other evaluated
    broken.unlink()
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--overwrite", "--no-eval", "--no-report"]) == 0
    timestamp = pq.read_table(broken).column(TIMESTAMP)[0].as_py()
    folder = tmp_path / "gt"
    camera_box(folder / f"{TINY_SEGMENT}.parquet", [{SEGMENT: TINY_SEGMENT, TIMESTAMP: timestamp}])
    assert main(["eval", str(out), "--gt", str(folder), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"{folder}: no camera_box file for segment 1024360143612057520_3580_000_3600_000 in this folder" in err
    assert json.loads((out / "eval.json").read_text())["segments"] == [TINY_SEGMENT]


NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.integers(-(2**24), 2**24))


@settings(max_examples=examples(1 / 10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(detections=st.lists(st.tuples(st.integers(-(2**62), 2**62), st.integers(-128, 127), st.integers(-(2**31), 2**31 - 1),
                                     NUMBER, NUMBER, NUMBER, NUMBER, NUMBER), max_size=8),
       labels=st.lists(st.tuples(st.integers(-128, 127), st.integers(-128, 127), st.integers(-128, 127),
                                 NUMBER, NUMBER, NUMBER, NUMBER), max_size=8),
       manifest=st.dictionaries(st.sampled_from(["segment_context_name", "settings", "model", "input"]),
                                st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=2),
                                          st.dictionaries(st.text(max_size=6), st.integers(), max_size=2)), max_size=3))
def test_any_results_files_give_numbers_or_one_line(tmp_path_factory, detections, labels, manifest):
    """Hostile detections.parquet / ground_truth.parquet / manifest.json fed to `detect eval` and
    `detect export coco`: exit 0 with valid JSON, or exit 2 with one line; never a traceback."""
    from detect.results.ground_truth import SCHEMA as TRUTH
    from detect.results.table import SCHEMA as TABLE

    seg = tmp_path_factory.mktemp("eval") / "seg"
    seg.mkdir()
    rows = {name: [] for name in TABLE.names}
    for ts, camera, class_id, score, *box in detections:
        for name, value in zip(TABLE.names, [SEG, ts, camera, class_id, "x", score, *box, *[None] * 5, None],
                               strict=True):
            rows[name].append(value)
    pq.write_table(pa.table(rows, schema=TABLE), seg / "detections.parquet")
    truth = {name: [] for name in TRUTH.names}
    for camera, kind, difficulty, *box in labels:
        for name, value in zip(TRUTH.names, [SEG, TS, camera, "o", kind, difficulty, *box, *[None] * 5], strict=True):
            truth[name].append(value)
    pq.write_table(pa.table(truth, schema=TRUTH), seg / GROUND_TRUTH_FILE)
    (seg / "manifest.json").write_text(json.dumps({"segment_context_name": SEG} | manifest))
    err = io.StringIO()
    code = main(["eval", str(seg), "--quiet"], stderr=err)
    lines = [line for line in err.getvalue().splitlines() if not line.startswith("detect: note: ")]
    assert (code, len(lines)) in ((0, 0), (2, 1)), err.getvalue()
    assert "unexpected" not in err.getvalue() and "Traceback" not in err.getvalue()
    if code == 0:
        report = (seg / "eval.json").read_text()
        json.loads(report, parse_constant=lambda c: pytest.fail(f"eval.json holds {c}"))
        assert main(["export", "coco", str(seg), "--out", str(seg / "coco")], stderr=io.StringIO()) == 0
        for name in ("instances.json", "detections.json"):
            text = (seg / "coco" / name).read_text()
            assert "NaN" not in text and "Infinity" not in text
