"""images.parquet: per camera image and Waymo type, the labels and what the frame shows of them at
the drawing threshold, from the evaluation's own matching."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from helpers.results_folders import CAR, PEDESTRIAN, PERSON, VEHICLE, dets, key, labels, segment_folder

from detect.cli import main
from detect.core.cameras import CameraName

CAR_BOX, PERSON_BOX, EMPTY_ROAD = (100.0, 100.0, 300.0, 200.0), (500.0, 100.0, 560.0, 260.0), (900.0, 900.0, 980.0, 960.0)


def crafted(tmp_path):
    """Image 0: a car found (hit), a pedestrian found only below the threshold (missed), a box on
    empty road (false alarm). Image 1: the car missed, nothing found. Image 2 (SIDE_LEFT): no label,
    no box."""
    images = {
        key(0): (labels((CAR_BOX, VEHICLE), (PERSON_BOX, PEDESTRIAN)),
                 dets((CAR_BOX, 0.9, CAR), (PERSON_BOX, 0.2, PERSON), (EMPTY_ROAD, 0.7, CAR))),
        key(1): (labels((CAR_BOX, VEHICLE)), dets()),
        key(0, CameraName.SIDE_LEFT): (labels(), dets()),
    }
    return segment_folder(tmp_path, images, threshold=0.5, knows=[PERSON, CAR])


@pytest.mark.slow
def test_each_image_and_type_gets_its_hits_false_alarms_and_misses_at_the_threshold(tmp_path):
    """One row per image and type (images without labels or boxes too), counted at the drawing
    threshold: a label found only below it is missed, a box matching no label a false alarm."""
    folder = crafted(tmp_path)
    assert main(["eval", str(folder), "--quiet"]) == 0
    table = pq.read_table(folder / "images.parquet").to_pandas()
    assert list(table.columns[:3]) == ["key.segment_context_name", "key.frame_timestamp_micros", "key.camera_name"]
    rows = {(int(r["key.frame_timestamp_micros"]), int(r["key.camera_name"]), r["type_name"]):
            (r["labels"], r["hits"], r["false_alarms"], r["misses"]) for r in table.to_dict("records")}
    front, side = int(CameraName.FRONT), int(CameraName.SIDE_LEFT)
    t0, t1 = key(0).frame_timestamp_micros, key(1).frame_timestamp_micros
    assert rows[(t0, front, "VEHICLE")] == (1, 1, 1, 0)
    assert rows[(t0, front, "PEDESTRIAN")] == (1, 0, 0, 1)
    assert rows[(t1, front, "VEHICLE")] == (1, 0, 0, 1)
    assert rows[(t0, side, "VEHICLE")] == (0, 0, 0, 0)
    types = set(table["type_name"])
    assert len(table) == 3 * len(types)


@pytest.mark.slow
def test_summed_over_images_misses_are_labels_less_true_positives(tmp_path):
    """The table and eval.json agree, type by type (LEVEL_2)."""
    folder = crafted(tmp_path)
    assert main(["eval", str(folder), "--quiet"]) == 0
    sums = pq.read_table(folder / "images.parquet").to_pandas().groupby("type_name")[["labels", "hits", "misses"]].sum()
    for row in json.loads((folder / "eval.json").read_text())["levels"]["LEVEL_2"]:
        if row["name"] in sums.index:
            assert sums.loc[row["name"], "labels"] == row["labels"]
            assert sums.loc[row["name"], "hits"] == row["true_positives"]
            assert sums.loc[row["name"], "misses"] == row["labels"] - row["true_positives"]
