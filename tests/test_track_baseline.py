"""The tracker comparison tool (detect/tools/track_baseline.py): its files, its tracking and its scores."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from detect.core.matching import WAYMO_PROTOCOL
from detect.core.records import Detections
from detect.core.tf_env import import_tensorflow
from detect.tools import track_baseline as tb
from detect.track import SegmentTracker, TrackerParams, TrackEvalFrame, score_tracks
from detect.waymo.readers import iter_frames

ROOT = Path(__file__).resolve().parents[1]
SEQUENCE = "mot17_09_frcnn"
MOT17_IMAGE = tb.MOT17 / f"{SEQUENCE}.parquet"
MOT17_BOX = tb.MOT17.parent / "camera_box" / f"{SEQUENCE}.parquet"
# The python of a throwaway venv with trackers==2.6.1 (the tool's docstring makes one), if a developer has it.
TRACKERS_PYTHON = os.environ.get("DETECT_TRACKERS_PYTHON")


def label_frames(frames: int) -> list[tuple[list[str], np.ndarray]]:
    """The first frames' labels, read here without the tool: (ids, xyxy) per frame."""
    t = pq.read_table(MOT17_BOX).to_pandas().sort_values("key.frame_timestamp_micros", kind="stable")
    out = []
    for _, rows in list(t.groupby("key.frame_timestamp_micros", sort=True))[:frames]:
        cx, cy = rows["[CameraBoxComponent].box.center.x"].to_numpy(), rows["[CameraBoxComponent].box.center.y"].to_numpy()
        w, h = rows["[CameraBoxComponent].box.size.x"].to_numpy(), rows["[CameraBoxComponent].box.size.y"].to_numpy()
        out.append((rows["key.camera_object_id"].tolist(), np.c_[cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]))
    return out


@pytest.fixture(scope="module")
def labels_as_detections():
    """Three frames of a MOT17 sequence through the tool, a stub detector returning the labels (person, 0.9,
    each box moved 2 px right, and one chair no group shares) in place of the model."""
    if not MOT17_IMAGE.exists():
        pytest.skip(f"MOT17 fixtures not found at {MOT17_IMAGE}")
    labels = label_frames(3)
    seen: list[tuple[int, ...]] = []

    def stub(images: list[np.ndarray]) -> list[Detections]:
        seen.extend(im.shape for im in images)
        return [Detections(np.r_[xyxy + [2, 0, 2, 0], [[10, 10, 60, 90]]], [0.9] * len(ids) + [0.8],
                           [1] * len(ids) + [62], ("person",) * len(ids) + ("chair",)) for ids, xyxy in labels]

    return tb.mot17_sequence(MOT17_IMAGE, stub, frames=3), labels, seen


def test_the_sequence_holds_the_detections_and_the_labels_with_their_ids(labels_as_detections):
    seq, labels, seen = labels_as_detections
    assert seen == [(1080, 1920, 3)] * 3  # the decoded camera images reached the detector
    assert (seq.name, seq.fps, seq.types.tolist()) == (SEQUENCE, 30, [2])
    assert np.diff(seq.timestamps).tolist() == [33333, 33334]  # 1e6 / 30, rounded per frame
    assert seq.gt_id.tolist() == [i for ids, _ in labels for i in ids]
    np.testing.assert_allclose(seq.gt_xyxy, np.concatenate([xyxy for _, xyxy in labels]), atol=1e-3)
    assert seq.det_frame.tolist() == [f for f, (ids, _) in enumerate(labels) for _ in range(len(ids) + 1)]
    # persons track in the PEDESTRIAN group (2), the chair alone in its own
    assert set(seq.det_group[seq.det_class == 1].tolist()) == {2} and set(seq.det_group[seq.det_class == 62].tolist()) == {1062}


def test_sequences_and_tracks_round_trip_through_their_files(labels_as_detections, tmp_path):
    seq = labels_as_detections[0]
    tb.save(seq, tmp_path / "seq.npz")
    back = tb.load_sequence(tmp_path / "seq.npz")
    assert (back.name, back.fps) == (seq.name, seq.fps)
    for name in ("timestamps", "types", "det_frame", "det_xyxy", "det_score", "det_class", "det_group", "gt_frame",
                 "gt_xyxy", "gt_id", "gt_type"):
        np.testing.assert_array_equal(getattr(back, name), getattr(seq, name), err_msg=name)
    tracks = tb.track_ours(seq)
    tb.save(tracks, tmp_path / "tracks.npz")
    again = tb.load_tracks(tmp_path / "tracks.npz")
    for name in ("frame", "xyxy", "track_id", "group", "ms"):
        np.testing.assert_array_equal(getattr(again, name), getattr(tracks, name), err_msg=name)
    assert len(tracks.ms) == 3 and (tracks.ms > 0).all()


def test_the_tools_scores_are_score_tracks_run_directly(labels_as_detections):
    seq, labels, _ = labels_as_detections
    tracker, frames = SegmentTracker(TrackerParams.for_threshold(0.3)), []
    for k, (ids, xyxy) in enumerate(labels):
        boxes = xyxy + [2, 0, 2, 0]
        track_ids = tracker.update(1, int(seq.timestamps[k]), boxes, np.full(len(ids), 0.9), np.full(len(ids), 2))
        frames.append(TrackEvalFrame(tuple(ids), xyxy, track_ids, boxes))
    expected = score_tracks({2: [frames]}, WAYMO_PROTOCOL)[2]
    got = tb.scores([seq], [tb.track_ours(seq)])
    assert got[SEQUENCE, 2] == expected and got["pooled", 2] == expected
    # confirmed on the first frame, every label kept its id: the chair (a false alarm of no type) is not scored
    assert expected.id_switches == 0 and expected.mota == 1.0 and expected.hota > 0.9


def test_the_table_has_a_row_per_sequence_and_type_and_a_pooled_one(labels_as_detections):
    seq = labels_as_detections[0]
    tracks = tb.track_ours(seq)
    lines = tb.table([seq], {"ours": [tracks], "copy": [tracks]}).splitlines()
    assert lines[0] == ("| sequence | type | frames | boxes/frame | ours: HOTA | MOTA | IDF1 | ms/frame "
                        "| copy: HOTA | MOTA | IDF1 | ms/frame |")
    rows = [line.split(" | ")[:3] for line in lines[2:]]
    assert rows == [[f"| {SEQUENCE}", "PEDESTRIAN", "3"], ["| pooled", "PEDESTRIAN", "3"]]
    assert lines[2].split(" | ")[4:7] == lines[2].split(" | ")[8:11]  # the same tracks score the same


def test_the_pan_moves_and_zooms_the_labels_and_drops_those_half_outside():
    height = 1280
    xyxy = np.array([[100, 600, 200, 700], [1650, 600, 1750, 700], [1680, 600, 1780, 700]], float)
    kept, keep = tb.pan_labels(xyxy, 0, height)  # the first window is the left 1700 pixels, unzoomed
    assert keep.tolist() == [True, True, False] and kept.tolist() == [[100, 600, 200, 700], [1650, 600, 1700, 700]]
    x0, y0, zoom = tb.pan_window(20, height)
    assert (x0, zoom) == (40.0, 1.02) and y0 == pytest.approx((height - height / 1.02) / 2)
    kept, keep = tb.pan_labels(xyxy[:1], 20, height)
    np.testing.assert_allclose(kept, [[(100 - 40) * 1.02, (600 - y0) * 1.02, (200 - 40) * 1.02, (700 - y0) * 1.02]])
    assert tb.pan_window(tb.PAN_FRAMES - 1, height)[0] == tb.PAN_STEP  # back near the start


@pytest.mark.slow  # the real frame's images and labels (Waymo's protos) and 60 crops
def test_the_pan_shows_the_camera_image_through_its_window(real_frame_path):
    got: list[np.ndarray] = []

    def stub(images):
        got.extend(images[:2])
        return [Detections.empty() for _ in images]

    front = next(tb.pan_sequences(real_frame_path, stub))  # one camera: the others are made the same way, lazily
    assert front.name == "waymo_pan_FRONT"
    assert len(front.timestamps) == tb.PAN_FRAMES >= 40 and front.types.tolist() == [1, 2]
    assert got[0].shape == (1280, 1700, 3)
    tf = import_tensorflow()
    original = tf.io.decode_jpeg(next(iter_frames(str(real_frame_path))).jpeg, channels=3).numpy()
    assert np.abs(got[0].astype(int) - original[:, :1700].astype(int)).mean() < 2  # frame 0: the left 1700 px
    assert np.abs(got[1].astype(int) - original[:, 2:1702].astype(int)).mean() < 15  # frame 1: 2 px on, zoomed 0.1%


@pytest.mark.slow  # the trackers venv of the docs, if present; a real pass of trackers' ByteTrack
def test_the_baseline_half_writes_trackers_tracks_in_its_own_venv(labels_as_detections, tmp_path):
    if not TRACKERS_PYTHON:
        pytest.skip("no trackers venv: DETECT_TRACKERS_PYTHON names the python of one with trackers==2.6.1")
    seq = labels_as_detections[0]
    tb.save(seq, tmp_path / "detections" / f"{seq.name}.npz")
    done = subprocess.run([TRACKERS_PYTHON, "-m", "detect.tools.track_baseline", "--baseline", "--work", str(tmp_path),
                           "--repeats", "1"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for name in ("trackers-default", "trackers-moved"):
        tracks = tb.load_tracks(tmp_path / "tracks" / name / f"{seq.name}.npz")
        assert len(tracks.ms) == 3 and set(tracks.group.tolist()) <= {2, 1062}
    moved = tb.scores([seq], [tb.load_tracks(tmp_path / "tracks" / "trackers-moved" / f"{seq.name}.npz")])[SEQUENCE, 2]
    assert moved.mota > 0.5  # confirmed on its second frame: the first frame's labels are missed
