"""eval.json's slices: by range band (COCO's area-range rule with range in place of area, checked
against pycocotools) and by the images' conditions (each slice of a two-segment run equal to the
evaluation of the segment that holds it), pooled over a run; `detect eval --by` prints them."""

import contextlib
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.evaluate.slices import RANGE_AREAS, RANGE_BANDS
from detect.results import box_context
from detect.waymo.context.read import read_context
from detect.waymo.readers import read_keys

COMPONENTS = ("camera_image", "camera_box", "stats", "camera_calibration", "lidar_box", "projected_lidar_box",
              "camera_to_lidar_box_association")
# The default class map's COCO ids of the types with labels on the real frame (no bicycle: no riders to pair).
CLASS_OF_TYPE = {1: 3, 2: 1}  # VEHICLE <- car, PEDESTRIAN <- person
TYPE_OF_CLASS = {c: t for t, c in CLASS_OF_TYPE.items()}
QUIET = ["--no-png", "--no-gif", "--no-report", "--no-eval"]


def _copy_segment(folder, to, name=REAL_SEGMENT, time_of_day=None):
    """The real v2 folder's components as segment `name` under `to` (its stats at `time_of_day`)."""
    for component in COMPONENTS:
        table = pq.read_table(folder / component / f"{REAL_SEGMENT}.parquet")
        column = table.schema.get_field_index("key.segment_context_name")
        table = table.set_column(column, "key.segment_context_name", pa.array([name] * table.num_rows, pa.string()))
        if component == "stats" and time_of_day is not None:
            table = table.set_column(table.schema.get_field_index("[StatsComponent].time_of_day"),
                                     "[StatsComponent].time_of_day", pa.array([time_of_day] * table.num_rows))
        (to / component).mkdir(parents=True, exist_ok=True)
        pq.write_table(table, to / component / f"{name}.parquet")
    return to / "camera_image" / f"{name}.parquet"


def _detections_from_labels(segment_dir, source, seed, keep):
    """detections.parquet replaced by boxes a detector might give: `keep` of the VEHICLE and
    PEDESTRIAN labels found (jittered, scored), plus false alarms; their ranges from the source's
    context as a run writes them."""
    rng = np.random.default_rng(seed)
    truth = pq.read_table(segment_dir / "ground_truth.parquet").to_pydict()
    rows = {name: [] for name in ("key.segment_context_name", "key.frame_timestamp_micros", "key.camera_name",
                                  "class_id", "label", "score", "xmin", "ymin", "xmax", "ymax")}
    for i in range(len(truth["type"])):
        box = np.array([truth[c][i] for c in ("xmin", "ymin", "xmax", "ymax")])
        picks = []
        if truth["type"][i] in CLASS_OF_TYPE and rng.random() < keep:
            size = box[2:] - box[:2]
            picks.append((CLASS_OF_TYPE[truth["type"][i]], box + rng.normal(0, 0.08, 4) * np.tile(size, 2)))
        if rng.random() < 0.3:  # a false alarm beside it
            picks.append((rng.choice([1, 3]), box + np.array([300, 40, 300, 40]) * rng.uniform(0.5, 1.5)))
        for class_id, xyxy in picks:
            xyxy = np.clip(np.sort(xyxy.reshape(2, 2), axis=0).reshape(4), 0, 1900)
            xyxy[2:] = np.maximum(xyxy[2:], xyxy[:2] + 2)
            for name, value in zip(rows, [truth["key.segment_context_name"][i], truth["key.frame_timestamp_micros"][i],
                                          truth["key.camera_name"][i], int(class_id), "x", float(rng.uniform(0.05, 1)),
                                          *xyxy.tolist()], strict=True):
                rows[name].append(value)
    from detect.results.table import SCHEMA

    table = pa.table({**rows, **box_context.null_columns(len(rows["score"])),
                      "track_id": pa.nulls(len(rows["score"]), pa.int64())}, schema=SCHEMA)
    order = pc.sort_indices(table, [("key.frame_timestamp_micros", "ascending"), ("key.camera_name", "ascending"),
                                    ("score", "descending")])
    table = table.take(order)
    table = box_context.with_context(table, box_context.context_columns(table, read_context(read_keys(str(source)))))
    pq.write_table(table, segment_dir / "detections.parquet")


@pytest.fixture(scope="module")
def ranged_segment(real_v2_folder, stub_dynamic_dir, tmp_path_factory):
    """The real frame run, its detections replaced by label-like boxes with ranges, evaluated."""
    root = tmp_path_factory.mktemp("ranged")
    source = _copy_segment(real_v2_folder, root / "in")
    assert main(["segment", str(source), "--out", str(root / "out"), "--model", str(stub_dynamic_dir), *QUIET]) == 0
    segment_dir = root / "out" / REAL_SEGMENT
    _detections_from_labels(segment_dir, source, seed=4, keep=0.8)
    assert main(["eval", str(segment_dir), "--quiet"]) == 0
    return segment_dir


def _pycocotools_by_range(segment_dir, types):
    """AP50 per range band and type (LEVEL_2) from pycocotools, every box's area its range_m (-1 when
    null) and the bands as its area ranges."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    truth = pq.read_table(segment_dir / "ground_truth.parquet").to_pydict()
    found = pq.read_table(segment_dir / "detections.parquet").to_pydict()
    images = {}

    def image(i, table):
        key = (table["key.frame_timestamp_micros"][i], table["key.camera_name"][i])
        return images.setdefault(key, len(images) + 1)

    def area(value):
        return -1.0 if value is None else float(value)

    annotations = [{"id": i + 1, "image_id": image(i, truth), "category_id": truth["type"][i], "iscrowd": 0,
                    "bbox": [truth["xmin"][i], truth["ymin"][i], truth["xmax"][i] - truth["xmin"][i],
                             truth["ymax"][i] - truth["ymin"][i]], "area": area(truth["range_m"][i])}
                   for i in range(len(truth["type"]))]
    results = [{"image_id": image(i, found), "category_id": TYPE_OF_CLASS[found["class_id"][i]],
                "bbox": [found["xmin"][i], found["ymin"][i], found["xmax"][i] - found["xmin"][i],
                         found["ymax"][i] - found["ymin"][i]], "score": found["score"][i],
                "range_m": area(found["range_m"][i])} for i in range(len(found["score"]))]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"info": {}, "images": [{"id": i} for i in images.values()], "annotations": annotations,
                      "categories": [{"id": t} for t in types]}
        gt.createIndex()
        dt = gt.loadRes(results)
        for annotation in dt.anns.values():
            annotation["area"] = annotation["range_m"]
        run = COCOeval(gt, dt, "bbox")
        run.params.catIds = list(types)
        run.params.areaRng = RANGE_AREAS
        run.params.areaRngLbl = ["all", "near", "middle", "far"]
        run.evaluate()
        run.accumulate()
    precision = run.eval["precision"]
    ap = {}
    for band in range(1, len(RANGE_AREAS)):
        for k, waymo_type in enumerate(types):
            values = precision[0, :, k, band, -1]
            ap[band, waymo_type] = float(values[values > -1].mean()) if (values > -1).any() else None
    return ap


def test_ap50_per_range_band_equals_pycocotools_with_range_in_place_of_area(ranged_segment):
    report = json.loads((ranged_segment / "eval.json").read_text())
    bands = report["slices"]["range"]
    assert [(b["slice"], b["lo"], b["hi"]) for b in bands] == [("[0, 30)", 0, 30), ("[30, 50)", 30, 50),
                                                                ("[50, inf)", 50, None)]
    expected = _pycocotools_by_range(ranged_segment, [1, 2])
    compared = 0
    for band, piece in enumerate(bands, start=1):
        rows = {row["name"]: row for row in piece["levels"]["LEVEL_2"]}
        for waymo_type, name in ((1, "VEHICLE"), (2, "PEDESTRIAN")):
            if expected[band, waymo_type] is None:
                assert rows[name]["ap50"] is None and rows[name]["labels"] == 0
            else:
                assert rows[name]["ap50"] == pytest.approx(expected[band, waymo_type], abs=0.002)
                compared += rows[name]["ap50"] > 0
    assert compared >= 4  # most bands of both types have labels and hits


def test_range_bands_count_each_ranged_label_once_and_leave_out_those_without_a_range(ranged_segment):
    truth = pq.read_table(ranged_segment / "ground_truth.parquet")
    report = json.loads((ranged_segment / "eval.json").read_text())
    counted = sum(next(r["labels"] for r in piece["levels"]["LEVEL_2"] if r["name"] == "ALL")
                  for piece in report["slices"]["range"])
    assert counted == truth.num_rows - truth.column("range_m").null_count == 64
    ranges = np.array([r for r in truth.column("range_m").to_pylist() if r is not None])
    near = next(r["labels"] for r in report["slices"]["range"][0]["levels"]["LEVEL_2"] if r["name"] == "ALL")
    assert near == int((ranges < RANGE_BANDS[0][1]).sum())


def test_a_two_segment_run_has_a_time_of_day_slice_per_segment_each_its_own_evaluation(
        real_v2_folder, stub_dynamic_dir, tmp_path, capsys):
    night, day = "night_0000000000000000000_000_000_000_000", "day_00000000000000000000_000_000_000_000"
    sources = [_copy_segment(real_v2_folder, tmp_path / "in", night, "Night"),
               _copy_segment(real_v2_folder, tmp_path / "in", day)]
    out = tmp_path / "out"
    assert main(["run", *map(str, sources), "--out", str(out), "--model", str(stub_dynamic_dir), *QUIET]) == 0
    _detections_from_labels(out / night, sources[0], seed=1, keep=0.5)
    _detections_from_labels(out / day, sources[1], seed=2, keep=0.9)
    capsys.readouterr()
    assert main(["eval", str(out), "--by", "time_of_day,range"]) == 0
    printed = capsys.readouterr().out
    run = json.loads((out / "eval.json").read_text())
    slices = {piece["slice"]: piece["levels"] for piece in run["slices"]["time_of_day"]}
    assert sorted(slices) == ["Day", "Night"]
    for name, segment in (("Night", night), ("Day", day)):
        own = json.loads((out / segment / "eval.json").read_text())["levels"]
        without_intervals = {level: [{k: v for k, v in row.items() if k != "ap50_interval"} for row in rows]
                             for level, rows in slices[name].items()}
        assert without_intervals == own
    assert slices["Night"]["LEVEL_2"][-1]["ap50"] != slices["Day"]["LEVEL_2"][-1]["ap50"]
    assert run["slices"]["location"][0]["slice"] == "location_sf"
    images = pq.read_table(out / "images.parquet").to_pandas()  # each image's conditions beside its counts
    night_rows = images[images["key.segment_context_name"] == night]
    assert set(night_rows["time_of_day"]) == {"Night"} and set(images["location"]) == {"location_sf"}
    assert set(images.loc[images["key.segment_context_name"] == day, "time_of_day"]) == {"Day"}
    assert "time_of_day (LEVEL_2): AP50 [its 95% interval] and recall at the threshold (labels)" in printed
    assert "(no interval: 1 block(s) of 2 s, 10 needed)" in printed  # one frame a segment
    assert "range (LEVEL_2)" in printed and "  Night        VEHICLE" in printed and "ALL " in printed
    assert main(["report", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert "<h3>Where and when</h3>" in index and "<td>Night</td>" in index and "<td>Day</td>" in index
    assert "src='./range_bands.png'" in index and (out / "range_bands.png").is_file()


def test_a_segment_page_shows_the_slices_table_and_the_range_picture(ranged_segment):
    assert main(["report", str(ranged_segment)]) == 0
    page = (ranged_segment / "report.html").read_text()
    table = page[page.index("<h3>Where and when</h3>"):]
    assert "<td>[0, 30)</td><td>VEHICLE</td>" in table and "<td>location_sf</td>" in table
    assert "src='./range_bands.png'" in table and "Not available" not in table  # weather: sunny


def test_edited_slices_in_eval_json_give_a_page_without_them(ranged_segment, tmp_path):
    import shutil

    folder = tmp_path / REAL_SEGMENT
    shutil.copytree(ranged_segment, folder)
    report = json.loads((folder / "eval.json").read_text())
    report["slices"] = {"range": [{"slice": "<script>", "levels": {"LEVEL_2": [{"name": "VEHICLE", "labels": "x"}]}},
                                  7, None], "time_of_day": {"a": 1}, "weather": "not available"}
    (folder / "eval.json").write_text(json.dumps(report))
    assert main(["report", str(folder)]) == 0
    page = (folder / "report.html").read_text()
    assert "<td><script>" not in page and "Not available (no such context in the input): time of day, weather." in page


def test_without_context_every_slice_is_not_available(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path / "out"), "--model", str(stub_dynamic_dir),
                 *QUIET]) == 0
    capsys.readouterr()
    segment_dir = next(p for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert main(["eval", str(segment_dir), "--by", "range,weather"]) == 0
    report = json.loads((segment_dir / "eval.json").read_text())
    assert report["slices"] == dict.fromkeys(("range", "time_of_day", "location", "weather"), "not available")
    printed = capsys.readouterr().out
    assert "range: not available" in printed and "weather: not available" in printed
