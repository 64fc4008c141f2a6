"""The one count of "boxes drawn": what one image's drawing shows, by the renderer's own rule
(`detect.render.verdicts.boxes_drawn`), and what a run's manifest, its page and the run table
record from it."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.core.matching import COCO_PROTOCOL
from detect.core.records import Detections, Labels, WaymoType
from detect.judge import ErrorRules
from detect.model.classmap import default_class_map
from detect.render.draw import DrawStyle, chosen_boxes
from detect.render.verdicts import MISSED, boxes_drawn, judge

PERSON, BICYCLE, CAR = 1, 2, 3
RULES = ErrorRules(default_class_map(), (int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN), int(WaymoType.CYCLIST)),
                   COCO_PROTOCOL)
RIDER, BIKE = [100, 50, 140, 160], [90, 110, 150, 170]  # a person whose lower part lies on the bicycle


def cars(count: int) -> Detections:
    """`count` cars side by side, scores falling from 0.9."""
    boxes = np.array([[10 + 50 * i, 10, 50 + 50 * i, 50] for i in range(count)], np.float32).reshape(-1, 4)
    return Detections(boxes, np.linspace(0.9, 0.6, count).astype(np.float32), np.full(count, CAR), ("car",) * count)


def rider() -> Detections:
    return Detections(np.array([RIDER, BIKE], np.float32), np.array([0.8, 0.7], np.float32),
                      np.array([PERSON, BICYCLE]), ("person", "bicycle"))


def test_an_image_with_more_boxes_than_max_boxes_counts_the_boxes_drawn_not_the_boxes_scored():
    """Above the threshold a capped drawing shows `max_boxes` boxes, and the count is what it draws."""
    style = DrawStyle(threshold=0.5, max_boxes=3)
    assert boxes_drawn(cars(7), style) == 3 == len(chosen_boxes(cars(7), style)[0])
    assert boxes_drawn(cars(7), DrawStyle(threshold=0.5)) == 7
    assert boxes_drawn(cars(2), style) == 2


def test_errors_mode_counts_a_paired_rider_and_its_bicycle_as_the_one_cyclist_box_it_draws():
    """A person on a bicycle is drawn as one CYCLIST when errors are drawn, so it counts once; a
    missed label is a label, not a box drawn; the detections drawing counts both rows."""
    truth = Labels(np.array([[90, 50, 150, 170], [400, 400, 450, 450]], np.float32),
                   np.array([WaymoType.CYCLIST, WaymoType.VEHICLE]), np.ones(2), ("a", "b"))
    style = DrawStyle(threshold=0.3)
    judged = judge(rider(), truth, RULES, style)
    assert judged.states.count(MISSED) == 1 and len(judged.states) == 2
    assert boxes_drawn(rider(), style, RULES, truth) == 1
    assert boxes_drawn(rider(), style) == 2
    assert boxes_drawn(rider(), DrawStyle(threshold=0.3, max_boxes=1), RULES, truth) == 1


@pytest.mark.slow
def test_a_run_with_max_boxes_records_and_shows_the_capped_count(tmp_path, tiny_v2_path, stub_dynamic_dir):
    """`detect segment --max-boxes 2` with the stub model (six boxes an image): the manifest's
    `counts.drawn` and the page's headline give the capped number, two an image."""
    out = tmp_path / "out"
    code = main(["segment", str(tiny_v2_path), "--out", str(out), "--model", str(stub_dynamic_dir), "--threshold", "0.1",
                 "--max-boxes", "2", "--no-gif", "--quiet"], stdout=io.StringIO(), stderr=io.StringIO())
    assert code == 0
    segment = out / TINY_SEGMENT
    table = pq.read_table(segment / "detections.parquet").to_pylist()
    images = {(r["key.camera_name"], r["key.frame_timestamp_micros"]) for r in table}
    assert len(table) > 2 * len(images)  # more boxes an image than the cap
    assert json.loads((segment / "manifest.json").read_text())["counts"]["drawn"] == 2 * len(images)
    assert f"{2 * len(images)} boxes drawn (score at least 0.1)" in (segment / "report.html").read_text()
