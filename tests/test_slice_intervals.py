"""The slices' AP50 intervals: a moving-block bootstrap over frames (blocks of 2 s, as compare's),
given only where a slice spans enough independent blocks; the resample that takes every frame once
is the slice's own AP50."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.results_folders import CAR, PERSON, dets, key, labels, segment_folder

from detect.cli import main
from detect.core.records import LEVEL_2, WaymoType
from detect.core.resample import BlockBootstrap, FrameIndex
from detect.evaluate import coco
from detect.evaluate.pooled import Pool, evaluate_chunk, precision_at_recalls
from detect.evaluate.segment_results import load_segment
from detect.evaluate.slice_intervals import FrameBook, ap50_intervals, weighted_ap
from detect.model.classmap import default_class_map
from detect.results import box_context

VEHICLE, PEDESTRIAN = int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN)
NEAR, FAR = 20.0, 60.0  # metres: the car in [0, 30), the walker in [50, inf)


def _images(frames: int, seed: int) -> dict:
    """A car and a walker on every frame (0.1 s apart); the detector finds the car most of the
    time, the walker about half of the time, and sees a car on empty road now and then."""
    rng = np.random.default_rng(seed)
    car, walker, road = (400, 500, 700, 700), (1200, 400, 1260, 560), (100, 900, 300, 1000)
    images = {}
    for i in range(frames):
        found = []
        if rng.random() < 0.8:
            found.append((car, float(rng.uniform(0.5, 0.99)), CAR))
        if rng.random() < 0.5:
            found.append((walker, float(rng.uniform(0.3, 0.9)), PERSON))
        if rng.random() < 0.3:
            found.append((road, float(rng.uniform(0.3, 0.95)), CAR))
        images[key(i)] = (labels((car, VEHICLE), (walker, PEDESTRIAN), ids=["car", "walker"]), dets(*found))
    return images


def _with_context(directory, near_box_right: float = 800.0) -> None:
    """Both tables given each box's range (left of `near_box_right` px: near, else far) and the
    images' time of day, as a run over a v2 folder with its context writes them."""
    for name in ("detections.parquet", "ground_truth.parquet"):
        table = box_context.with_absent(pq.read_table(directory / name))
        right = table.column("xmax").to_numpy()
        ranges = np.where(right <= near_box_right, NEAR, FAR).astype(np.float32)
        columns = {"range_m": pa.array(ranges, pa.float32()),
                   "range_source": pa.array(["ground_plane"] * len(ranges), pa.string()),
                   "time_of_day": pa.array(["Day"] * len(ranges), pa.string())}
        pq.write_table(box_context.with_context(table, columns), directory / name)


@pytest.fixture(scope="module")
def long_segment(tmp_path_factory):
    """24 s of frames (12 blocks of 2 s), with ranges and the time of day."""
    directory = segment_folder(tmp_path_factory.mktemp("long"), _images(240, seed=3))
    _with_context(directory)
    return directory


def test_a_slice_of_enough_blocks_gets_an_interval_around_its_ap50(long_segment, capsys):
    assert main(["eval", str(long_segment), "--by", "time_of_day,range"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((long_segment / "eval.json").read_text())
    [day] = report["slices"]["time_of_day"]
    assert day["slice"] == "Day" and day["blocks"] == 12
    rows = {r["name"]: r for r in day["levels"]["LEVEL_2"]}
    for name in ("VEHICLE", "PEDESTRIAN", "ALL"):
        low, high = rows[name]["ap50_interval"]
        assert 0.0 <= low < high <= 1.0 and low <= rows[name]["ap50"] <= high, name
    assert "ap50_interval" not in day["levels"]["LEVEL_1"][0]  # the pages show LEVEL_2
    near, middle, far = report["slices"]["range"]
    assert (near["blocks"], middle["blocks"], far["blocks"]) == (12, 12, 12)
    assert {r["name"]: r["labels"] for r in near["levels"]["LEVEL_2"]}["VEHICLE"] == 240
    assert next(r for r in near["levels"]["LEVEL_2"] if r["name"] == "VEHICLE")["ap50_interval"] is not None
    assert next(r for r in far["levels"]["LEVEL_2"] if r["name"] == "VEHICLE")["ap50_interval"] is None  # no label
    low, high = rows["VEHICLE"]["ap50_interval"]
    assert f"VEHICLE {rows['VEHICLE']['ap50']:.3f} [{low:.3f}, {high:.3f}]" in printed


def test_a_slice_of_too_few_blocks_has_no_interval_and_says_how_many_it_has(tmp_path, capsys):
    directory = segment_folder(tmp_path, _images(50, seed=4))  # 5 s: 2 blocks
    _with_context(directory)
    assert main(["eval", str(directory), "--by", "time_of_day"]) == 0
    printed = capsys.readouterr().out
    [day] = json.loads((directory / "eval.json").read_text())["slices"]["time_of_day"]
    assert day["blocks"] == 2
    assert all(r["ap50_interval"] is None for r in day["levels"]["LEVEL_2"])
    assert "(no interval: 2 block(s) of 2 s, 10 needed)" in printed
    assert main(["report", str(directory)]) == 0
    assert "<td>2 blocks</td>" in (directory / "report.html").read_text()


def test_the_page_shows_each_interval_beside_its_ap50(long_segment):
    assert main(["eval", str(long_segment), "--quiet"]) == 0
    assert main(["report", str(long_segment)]) == 0
    page = (long_segment / "report.html").read_text()
    report = json.loads((long_segment / "eval.json").read_text())
    [day] = report["slices"]["time_of_day"]
    vehicle = next(r for r in day["levels"]["LEVEL_2"] if r["name"] == "VEHICLE")
    low, high = vehicle["ap50_interval"]
    assert f"<td>{low:.2f}-{high:.2f}</td>" in page and "<th>95%</th>" in page


def test_taking_every_frame_once_gives_the_slices_own_ap50(long_segment):
    """The bootstrap's AP is COCO's accumulation over the pooled matching: with every frame taken
    once it is the library's AP50 of the slice, type by type."""
    segment = load_segment(long_segment)
    types = [VEHICLE, PEDESTRIAN]
    images = {coco.image_id(k): k for k in segment.images}
    pool = Pool(types)
    run, gt, dt = evaluate_chunk(coco.ground_truth([segment], types, LEVEL_2),
                                 coco.detections([segment], default_class_map(), types), types)
    pool.add(run, gt, dt, {i: k.camera_name for i, k in images.items()}, threshold=0.5)
    precision = pool.accumulate()["precision"]
    book = FrameBook()
    book.add(images)
    frames = book.frames(pool.image_ids)
    index = FrameIndex.of_frames(frames)
    frame_of_rank = np.array([index.frame_number(s, t) for s, t in frames])
    recalls = np.asarray(pool.recall_thresholds)
    for k in range(len(types)):
        ap50 = precision[0, :, k, 0, 0].mean()
        assert weighted_ap(pool.ranked(k, 0), np.ones(len(index)), frame_of_rank, recalls) == pytest.approx(ap50, abs=1e-12)
    bootstrap = BlockBootstrap.of(index)
    assert bootstrap.blocks == 12
    for weights in bootstrap.weights(20, seed=7):  # the hits-only reading equals COCO's over every detection
        for k in range(len(types)):
            ranked = pool.ranked(k, 0)
            taken = weights[frame_of_rank[ranked.image]]
            labels = float(weights[frame_of_rank[ranked.label_image]] @ ranked.label_count)
            every = precision_at_recalls(np.cumsum(taken * ranked.hit), np.cumsum(taken * ~ranked.hit), labels, recalls)
            assert weighted_ap(ranked, weights, frame_of_rank, recalls) == pytest.approx(every.mean(), abs=1e-12)
    found = ap50_intervals(pool, 0, types, book, replicates=200)
    assert found.blocks == 12 and set(found.ap50) == {"VEHICLE", "PEDESTRIAN", "ALL"}
    again = ap50_intervals(pool, 0, types, book, replicates=200)
    assert again == found  # one seed, the same resamples


def test_an_images_conditions_recorded_in_one_table_only_still_slice_it(tmp_path):
    """The labels' table records the time of day, the detections' (written before the column) does
    not: the images are still in their time-of-day slice."""
    directory = segment_folder(tmp_path, _images(5, seed=5))
    truth = box_context.with_absent(pq.read_table(directory / "ground_truth.parquet"))
    day = pa.array(["Day"] * truth.num_rows, pa.string())
    pq.write_table(box_context.with_context(truth, {"time_of_day": day}), directory / "ground_truth.parquet")
    assert main(["eval", str(directory), "--quiet"]) == 0
    [piece] = json.loads((directory / "eval.json").read_text())["slices"]["time_of_day"]
    assert piece["slice"] == "Day" and piece["levels"]["LEVEL_2"][-1]["labels"] == 10
