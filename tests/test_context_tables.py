"""The context columns of detections.parquet and ground_truth.parquet: each box's range and where
it came from, each image's conditions; kept by `detect track` and `detect redraw`, null in tables
written before them."""

import pyarrow.parquet as pq
import pytest
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.results.ground_truth import read_ground_truth
from detect.results.results_tables import RowBudget
from detect.results.table import SCHEMA


@pytest.fixture(scope="module")
def real_v2_run(real_v2_folder, stub_dynamic_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("context_run")
    assert main(["segment", str(real_v2_folder / "camera_image" / f"{REAL_SEGMENT}.parquet"), "--out", str(out),
                 "--model", str(stub_dynamic_dir), "--no-png", "--no-gif", "--no-report"]) == 0
    return out / REAL_SEGMENT


def test_both_tables_of_a_v2_run_carry_each_boxs_range_and_its_images_conditions(real_v2_run):
    for name in ("detections.parquet", "ground_truth.parquet"):
        table = pq.read_table(real_v2_run / name)
        assert table.schema.field("range_m").type == "float"
        assert table.num_rows and set(table.column("time_of_day").to_pylist()) == {"Day"}
        assert set(table.column("location").to_pylist()) == {"location_sf"}
        ranges, sources = table.column("range_m").to_pylist(), table.column("range_source").to_pylist()
        assert [r is None for r in ranges] == [s is None for s in sources]
        assert set(sources) <= {"projected_box", "ground_plane", None}
    truth = pq.read_table(real_v2_run / "ground_truth.parquet")
    assert truth.num_rows == 66
    assert truth.column("range_source").to_pylist().count("projected_box") == 15


def test_a_ground_truth_table_written_before_ranges_still_reads(real_v2_run, tmp_path):
    old = pq.read_table(real_v2_run / "ground_truth.parquet").drop_columns(
        ["range_m", "range_source", "time_of_day", "location", "weather"])
    pq.write_table(old, tmp_path / "ground_truth.parquet")
    labels, dropped = read_ground_truth(tmp_path / "ground_truth.parquet", RowBudget(5))
    assert sum(len(v) for v in labels.values()) == 66 and dropped == 0


def test_detect_track_keeps_the_context_columns(real_v2_run, tmp_path):
    import shutil

    folder = tmp_path / REAL_SEGMENT
    shutil.copytree(real_v2_run, folder)
    before = pq.read_table(folder / "detections.parquet")
    assert main(["track", str(folder)]) == 0
    after = pq.read_table(folder / "detections.parquet")
    assert after.schema == SCHEMA
    assert after.column("range_m").equals(before.column("range_m"))
    assert after.column("time_of_day").equals(before.column("time_of_day"))


def test_a_run_over_a_folder_with_a_hostile_component_is_refused_in_one_line_before_writing(
        real_v2_folder, stub_dynamic_dir, tmp_path, capsys):
    import pyarrow as pa

    for component in ("camera_image", "camera_box", "stats"):
        (tmp_path / "in" / component).mkdir(parents=True)
        (tmp_path / "in" / component / f"{REAL_SEGMENT}.parquet").write_bytes(
            (real_v2_folder / component / f"{REAL_SEGMENT}.parquet").read_bytes())
    stats = tmp_path / "in" / "stats" / f"{REAL_SEGMENT}.parquet"
    pq.write_table(pq.read_table(stats).set_column(3, "[StatsComponent].location", pa.array([b"\xff" * 300])), stats)
    out = tmp_path / "out"
    assert main(["segment", str(tmp_path / "in" / "camera_image" / f"{REAL_SEGMENT}.parquet"), "--out", str(out),
                 "--model", str(stub_dynamic_dir), "--no-png", "--no-gif", "--no-report"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "stats" in err and f"{REAL_SEGMENT}.parquet" in err and "[StatsComponent].location" in err
    assert not (out / REAL_SEGMENT / "detections.parquet").exists()


def test_context_columns_of_another_type_read_as_unknown_not_as_a_broken_table(real_v2_run, tmp_path):
    """An edited table whose ranges are text still gives its labels; the ranges read as unknown."""
    import pyarrow as pa

    from detect.results.ground_truth import read_ground_truth_table

    table = pq.read_table(real_v2_run / "ground_truth.parquet")
    index = table.schema.get_field_index("range_m")
    table = table.set_column(index, "range_m", pa.array(["far"] * table.num_rows))
    pq.write_table(table, tmp_path / "ground_truth.parquet")
    read = read_ground_truth_table(tmp_path / "ground_truth.parquet", RowBudget(5))
    assert sum(len(v) for v in read.labels.values()) == 66 and read.dropped == 0
    assert all(len(r) and all(r != r) for r in read.ranges.values())  # NaN: unknown
    assert set(read.conditions.values()) == {("Day", "location_sf", "sunny")}


def test_matches_carry_each_boxs_range_and_the_gallery_files_it_under_its_band(real_v2_run, tmp_path):
    """matches.parquet's range_m is the range detections.parquet and ground_truth.parquet hold for
    that box, and the report's gallery items say the band it falls in."""
    import re
    import shutil

    import numpy as np

    folder = tmp_path / REAL_SEGMENT
    shutil.copytree(real_v2_run, folder)
    assert main(["eval", str(folder), "--quiet"]) == 0
    matches = pq.read_table(folder / "matches.parquet").to_pandas()
    truth = pq.read_table(folder / "ground_truth.parquet").to_pandas()
    labels = matches[matches["kind"] == "label"]
    assert len(labels) == len(truth) == 66
    by_box = {(r.xmin, r.ymin, r.xmax, r.ymax): r.range_m for r in truth.itertuples()}
    got = [by_box[(r.xmin, r.ymin, r.xmax, r.ymax)] for r in labels.itertuples()]
    np.testing.assert_array_equal(labels["range_m"].to_numpy(np.float64), np.asarray(got, np.float64))
    found = matches[matches["kind"] == "detection"]
    detections = pq.read_table(folder / "detections.parquet").to_pandas()
    assert len(found) and found["range_m"].notna().all() == detections["range_m"].notna().all()
    assert set(np.round(found["range_m"].dropna(), 3)) <= set(np.round(detections["range_m"].dropna(), 3))
    assert main(["report", str(folder)]) == 0
    bands = set(re.findall(r"data-range='([^']*)'", (folder / "report.html").read_text()))
    assert bands - {"unknown"} and bands <= {"0-30 m", "30-50 m", "50+ m", "unknown"}
