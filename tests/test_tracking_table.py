"""tracking.parquet's rows: which label each tracked box stands for, and the boxes that made TrackEval's
ID switches and fragmentations, on a crafted sequence whose switches are known."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from detect.core.cameras import CameraName
from detect.core.matching import WAYMO_PROTOCOL
from detect.core.records import FrameKey, WaymoType
from detect.evaluate.tracking import CameraSequence
from detect.evaluate.tracking_table import TRACKING_SCHEMA, TrackingWriter, tracking_table
from detect.track import TrackEvalFrame, metric_results


def box(cx: float, cy: float = 100.0) -> list[float]:
    return [cx - 20, cy - 40, cx + 20, cy + 40]


def crossing() -> CameraSequence:
    """Objects a and b with tracks 1 and 2; on image 3 the ids swap (two switches); on image 4
    a is not tracked and on image 5 track 2 takes it up again (a fragmentation, no switch)."""
    labels = np.array([box(100), box(300)])
    frames = []
    for tracks in ([1, 2], [1, 2], [1, 2], [2, 1], [-1, 1], [2, 1]):
        kept = [i for i, t in enumerate(tracks) if t >= 0]
        frames.append(TrackEvalFrame(("a", "b"), labels, np.array([tracks[i] for i in kept]), labels[kept]))
    keys = tuple(FrameKey("seg", 100_000 * t, CameraName.FRONT) for t in range(len(frames)))
    return CameraSequence(int(WaymoType.PEDESTRIAN), keys, frames)


def test_the_rows_name_the_label_and_the_known_switches_and_fragmentation():
    table = tracking_table([crossing()], WAYMO_PROTOCOL)
    assert table.schema == TRACKING_SCHEMA
    rows = table.to_pylist()
    assert [(r["key.frame_timestamp_micros"] // 100_000, r["track_id"], r["key.camera_object_id"]) for r in rows] == [
        (0, 1, "a"), (0, 2, "b"), (1, 1, "a"), (1, 2, "b"), (2, 1, "a"), (2, 2, "b"),
        (3, 2, "a"), (3, 1, "b"), (4, 1, "b"), (5, 2, "a"), (5, 1, "b")]
    assert [(r["track_id"], r["previous_track_id"]) for r in rows if r["id_switch"]] == [(2, 1), (1, 2)]
    assert all(r["key.frame_timestamp_micros"] == 300_000 for r in rows if r["id_switch"])
    assert [(r["key.frame_timestamp_micros"], r["key.camera_object_id"]) for r in rows if r["fragmentation"]] == [
        (500_000, "a")]
    assert all(r["previous_track_id"] is None for r in rows if not r["id_switch"])
    assert {r["iou"] for r in rows} == {1.0} and {r["type_name"] for r in rows} == {"PEDESTRIAN"}
    assert {r["iou_threshold"] for r in rows} == {0.5}
    clear = metric_results([crossing().frames], 0.5)["CLEAR"]  # the library counts the same
    assert (clear["IDSW"], clear["Frag"]) == (2, 1)


def test_a_box_on_no_label_has_no_object_id_and_no_iou():
    far = np.array([box(900)])
    frames = [TrackEvalFrame(("a",), np.array([box(100)]), np.array([7]), far)]
    sequence = CameraSequence(int(WaymoType.VEHICLE), (FrameKey("seg", 1, CameraName.SIDE_LEFT),), frames)
    row = tracking_table([sequence], WAYMO_PROTOCOL).to_pylist()[0]
    assert (row["track_id"], row["key.camera_object_id"], row["iou"], row["id_switch"]) == (7, None, None, False)
    assert row["key.camera_name"] == int(CameraName.SIDE_LEFT) and row["iou_threshold"] == pytest.approx(0.7)


def test_the_writer_writes_atomically_and_leaves_no_file_without_tracked_rows(tmp_path):
    path = tmp_path / "tracking.parquet"
    with TrackingWriter(path, WAYMO_PROTOCOL) as writer:
        writer.write([crossing()])
        assert not path.exists()  # renamed into place only at the end
        writer.write([crossing()])
    assert len(pq.read_table(path)) == 22 and writer.rows == 22
    with pytest.raises(RuntimeError), TrackingWriter(path, WAYMO_PROTOCOL) as failing:
        failing.write([crossing()])
        raise RuntimeError("evaluation failed")
    assert len(pq.read_table(path)) == 22  # the old file stays whole
    assert [p.name for p in tmp_path.iterdir()] == ["tracking.parquet"]
    with TrackingWriter(path, WAYMO_PROTOCOL):
        pass
    assert not path.exists()  # an earlier evaluation's tracks are not left to describe these
