"""detections.parquet read back by its one typed reader (`detect.results.detections_table`): the
rows that are detections, typed columns, optional label and track-id columns, one line for what
was left out, a link refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from detect.core.errors import InputError
from detect.results.detections_table import read_detections
from detect.results.results_tables import RowBudget

BUDGET = RowBudget(10)
SEGMENT = "seg"


def write(path, **extra) -> None:
    rows = {
        "key.segment_context_name": [SEGMENT] * 4,
        "key.frame_timestamp_micros": [1_600_000_000_000_001, 1_600_000_000_000_001, 2, 2],
        "key.camera_name": [1, 1, 2, 9],  # camera 9: Waymo has none
        "xmin": [0.0, 10.0, 5.0, 1.0], "ymin": [0.0, 10.0, 5.0, 1.0],
        "xmax": [4.0, float("nan"), 9.0, 2.0], "ymax": [4.0, 20.0, 9.0, 2.0],
        "class_id": [3, 1, 1, 3], "score": [0.9, 0.8, 0.7, 0.6],
    }
    pq.write_table(pa.table(rows | extra), path)


def test_the_boxes_are_read_as_typed_columns_and_the_rest_is_one_line(tmp_path):
    """Only the rows that are detections are kept (a NaN box and an unknown camera are not); the
    timestamps keep every digit; without track_id or label columns those are None."""
    path = tmp_path / "detections.parquet"
    write(path)
    table = read_detections(path, BUDGET)
    assert len(table) == 2 and table.segments == [SEGMENT, SEGMENT]
    assert table.timestamps.tolist() == [1_600_000_000_000_001, 2] and table.cameras.tolist() == [1, 2]
    assert table.xyxy.tolist() == [[0, 0, 4, 4], [5, 5, 9, 9]] and table.class_ids.dtype == np.int32
    assert table.labels is None and table.track_ids is None and table.track_note is None
    assert table.not_boxes is not None and table.not_boxes.startswith(f"{path}: 2 row(s) are not boxes")
    assert table.take(np.array([False, True])).scores.tolist() == [np.float32(0.7)]
    assert [(k.frame_timestamp_micros, k.camera_name.name) for k in table.keys] == [(1_600_000_000_000_001, "FRONT"),
                                                                                (2, "FRONT_LEFT")]


def test_labels_and_track_ids_are_optional_columns_of_the_one_record(tmp_path):
    path = tmp_path / "detections.parquet"
    write(path, label=["car", "person", "person", "car"], track_id=[4, 5, -1, 6])
    table = read_detections(path, BUDGET, labels=True)
    assert table.labels is not None and table.labels.tolist() == ["car", "person"]
    assert table.track_ids is not None and table.track_ids.tolist() == [4, -1]


def test_a_table_without_a_column_asked_for_or_behind_a_link_is_one_line(tmp_path):
    path = tmp_path / "detections.parquet"
    write(path)
    with pytest.raises(InputError, match=rf"^{path}: not a detections table \(no label column\)$"):
        read_detections(path, BUDGET, labels=True)
    link = tmp_path / "link.parquet"
    link.symlink_to(path)
    with pytest.raises(InputError, match=rf"^{link} is a symbolic link; only regular files are read here$"):
        read_detections(link, BUDGET)


def test_track_ids_it_cannot_use_are_left_out_with_a_line_and_the_boxes_kept(tmp_path):
    path = tmp_path / "detections.parquet"
    write(path, track_id=["a", "b", "c", "d"])
    table = read_detections(path, BUDGET)
    assert len(table) == 2 and table.track_ids is None
    assert table.track_note is not None and "not whole numbers" in table.track_note
