"""Tracking: ByteTrack on crafted and real boxes, and its scores held to TrackEval and to published numbers."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.paths import ROOT, SHARED

from detect.core.matching import COCO_PROTOCOL, WAYMO_PROTOCOL
from detect.core.records import WaymoType
from detect.model.classmap import ClassMap
from detect.track import (
    CLASS_GROUP_BASE,
    ByteTracker,
    IdAllocator,
    SegmentTracker,
    TrackerParams,
    TrackEvalFrame,
    group_keys,
    metric_results,
    score_tracks,
    to_trackeval,
    track_flags,
)
from detect.track.scoring import trackeval_metrics

FIXTURES = SHARED / "fixtures"
MOT17 = FIXTURES / "mot17mini_v2" / "camera_box"
REAL_FRAME = FIXTURES / "waymo_v1_one_frame.tfrecord"
TUD = {  # TrackEval on motmetrics' TUD files, as published with TrackEval's scores
    "TUD-Campus": {"IDF1": 0.557659, "MOTA": 0.526462, "IDSW": 7, "HOTA": 0.391397},
    "TUD-Stadtmitte": {"IDF1": 0.644619, "MOTA": 0.564014, "IDSW": 7, "HOTA": 0.397849},
}
S = 1_000_000  # microseconds


def box(cx: float, cy: float, w: float = 40, h: float = 80) -> list[float]:
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def run(tracker: ByteTracker, frames: list[list[list[float]]], fps: float = 10, score: float = 0.9) -> list[np.ndarray]:
    return [tracker.update(round(k * S / fps), np.asarray(b, float).reshape(-1, 4), np.full(len(b), score))
            for k, b in enumerate(frames)]


def tracker(**params: float) -> ByteTracker:
    return ByteTracker(TrackerParams(**params), IdAllocator())


# --- parameters -----------------------------------------------------------------------------------

def test_defaults_are_the_references_but_a_lower_first_gate_for_10_hz():
    p = TrackerParams()
    assert (p.high_score, p.low_score, p.new_track_score) == (0.5, 0.1, 0.6)
    assert (p.low_match_min_iou, p.unconfirmed_min_similarity, p.lost_seconds) == (0.5, 0.3, 1.0)
    assert (p.position_noise, p.velocity_noise, p.first_match_min_similarity) == (1 / 20, 1 / 160, 0.05)
    assert TrackerParams(**p.to_json()) == p


def test_thresholds_follow_the_drawing_threshold():
    expected = TrackerParams(high_score=0.3, new_track_score=0.4, low_score=0.1)
    assert TrackerParams.for_threshold(0.3).to_json() == expected.to_json()
    assert (TrackerParams.for_threshold(0.15).low_score, TrackerParams.for_threshold(0.15).new_track_score) == (0.05, 0.25)
    assert TrackerParams.for_threshold(0.95).new_track_score == 0.95
    assert TrackerParams.for_threshold(0.5, lost_seconds=2.0).lost_seconds == 2.0


@pytest.mark.parametrize("kwargs, message", [
    ({"high_score": 0.05}, "tracker scores: expected low_score < high_score <= new_track_score, got 0.1, 0.05, 0.6"),
    ({"new_track_score": 1.5}, "tracker new_track_score: expected a value in (0, 1], got 1.5"),
    ({"lost_seconds": -1}, "tracker lost_seconds: expected a value >= 0, got -1"),
    ({"lost_seconds": float("nan")}, "tracker lost_seconds: expected a finite number, got nan"),
    ({"position_noise": "0.1"}, "tracker position_noise: expected a finite number, got '0.1'"),
])
def test_bad_parameters_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError) as err:
        TrackerParams(**kwargs)
    assert str(err.value) == message


def test_a_drawing_threshold_outside_0_1_is_refused():
    with pytest.raises(ValueError, match=r"^drawing threshold: expected a value in \(0, 1\), got 1.0$"):
        TrackerParams.for_threshold(1.0)


# --- crafted sequences ----------------------------------------------------------------------------

def test_two_crossing_objects_keep_their_ids():
    frames = [[box(100 + 15 * k, 300), box(700 - 15 * k, 310, 44, 84)] for k in range(40)]
    ids = np.array(run(tracker(), frames))
    assert (ids[:, 0] == ids[0, 0]).all() and (ids[:, 1] == ids[0, 1]).all() and ids[0, 0] != ids[0, 1]


@pytest.mark.parametrize("gap_frames, same_id", [(5, True), (9, True), (12, False), (30, False)])
def test_a_gap_keeps_the_id_only_within_the_lost_buffer(gap_frames, same_id):
    frames = [[box(200 + 4 * k, 300)] if not 10 <= k < 10 + gap_frames else [] for k in range(20 + gap_frames)]
    ids = run(tracker(), frames)
    assert bool(ids[-1][0] == ids[0][0]) is same_id
    assert ids[0][0] == 1 and ids[-1][0] in ((1,) if same_id else (2,))


def test_the_lost_buffer_is_in_seconds_whatever_the_frame_rate():
    # 0.8 s missing keeps the id at 30 fps (24 frames), 1.2 s loses it at 10 fps (12 frames)
    at_30 = run(tracker(), [[box(200 + k, 300)] if not 30 <= k < 54 else [] for k in range(70)], fps=30)
    at_10 = run(tracker(), [[box(200 + 3 * k, 300)] if not 10 <= k < 22 else [] for k in range(30)], fps=10)
    assert at_30[-1][0] == at_30[0][0]
    assert at_10[-1][0] != at_10[0][0]


def test_the_prediction_covers_the_time_between_frames():
    # fast motion (30 px per 0.1 s), then 0.5 s missing: the predicted box must have moved 150 px
    frames = [[box(100 + 30 * k, 300)] if not 10 <= k < 15 else [] for k in range(20)]
    ids = run(tracker(), frames)
    assert ids[-1][0] == ids[0][0] == 1


def test_an_object_leaving_and_reentering_after_the_buffer_is_a_new_track():
    frames = [[box(300, 300)] if k < 10 or k >= 25 else [] for k in range(35)]  # 1.5 s away
    ids = run(tracker(), frames)
    assert ids[0][0] == 1 and ids[-1][0] == 2


def test_low_score_boxes_continue_tracks_but_never_start_them():
    t = tracker()
    first = t.update(0, [box(300, 300), box(600, 300)], [0.9, 0.3])
    second = t.update(S // 10, [box(302, 300), box(602, 300)], [0.3, 0.3])
    assert first.tolist() == [1, -1] and second.tolist() == [1, -1]


def test_a_new_track_is_confirmed_by_its_second_frame():
    t = tracker()
    t.update(0, [box(300, 300)], [0.9])
    assert t.update(S // 10, [box(302, 300), box(800, 300)], [0.9, 0.9]).tolist() == [1, -1]
    assert t.update(2 * S // 10, [box(304, 300), box(802, 300)], [0.9, 0.9]).tolist() == [1, 2]


def test_only_a_trackers_first_frame_confirms_at_once_even_when_it_held_nothing_before():
    t = tracker()
    assert t.update(0, [box(300, 300)], [0.3]).tolist() == [-1] and len(t) == 0  # a low box alone: no track
    assert t.update(S // 10, [box(600, 300)], [0.9]).tolist() == [-1]  # born on a later frame: unconfirmed
    assert t.update(2 * S // 10, [box(602, 300)], [0.9]).tolist() == [1]
    fresh = tracker()
    assert fresh.update(0, [box(600, 300), box(900, 300)], [0.9, 0.3]).tolist() == [1, -1]


def test_boxes_below_the_low_score_and_new_boxes_below_the_new_track_score_get_no_id():
    t = tracker()
    assert t.update(0, [box(300, 300), box(600, 300)], [0.05, 0.55]).tolist() == [-1, -1]
    assert len(t) == 0


def test_timestamps_must_increase():
    t = tracker()
    t.update(100, [box(300, 300)], [0.9])
    with pytest.raises(ValueError, match="^timestamps must increase: got 100 after 100$"):
        t.update(100, [box(300, 300)], [0.9])


def test_scores_must_match_the_boxes():
    with pytest.raises(ValueError, match=r"^scores: expected 1 values \(one per box\), got 2$"):
        tracker().update(0, [box(300, 300)], [0.9, 0.8])


def test_memory_stays_flat_over_1000_frames():
    t = tracker()
    held = []
    rng = np.random.default_rng(0)
    for k in range(1000):
        # 20 objects living 15 frames each, born in turn: dead ones must be dropped
        boxes = [box(50 + 90 * ((k // 15 + j) % 20), 200 + 200 * (j % 3) + k % 15) for j in range(20)]
        t.update(k * S // 10, np.asarray(boxes) + rng.normal(0, 1, (20, 4)), np.full(20, 0.9))
        held.append(len(t))
    assert max(held[100:]) <= 40


# --- groups, cameras and the segment's ids ----------------------------------------------------------

CLASS_MAP = ClassMap({1: int(WaymoType.PEDESTRIAN), 3: int(WaymoType.VEHICLE), 8: int(WaymoType.VEHICLE),
                      62: int(WaymoType.UNKNOWN)}, "test")


def test_classes_of_one_waymo_type_share_a_group_others_track_alone():
    keys = group_keys(np.array([3, 8, 1, 18, 62]), CLASS_MAP)
    assert keys.tolist() == [1, 1, 2, CLASS_GROUP_BASE + 18, CLASS_GROUP_BASE + 62]
    assert group_keys(np.zeros(0, int), CLASS_MAP).tolist() == []


def test_a_car_called_a_truck_for_two_frames_keeps_its_id():
    segment = SegmentTracker(TrackerParams())
    classes = [3] * 5 + [8, 8] + [3] * 5
    ids = [segment.update(1, k * S // 10, [box(300 + 5 * k, 300, 120, 80)], [0.9], group_keys(np.array([c]), CLASS_MAP))[0]
           for k, c in enumerate(classes)]
    assert set(ids) == {1}


def test_a_dog_and_a_chair_on_the_same_box_are_two_tracks():
    segment = SegmentTracker(TrackerParams())
    for k in range(3):
        groups = group_keys(np.array([18, 62]), CLASS_MAP)
        ids = segment.update(1, k * S // 10, [box(300, 300), box(300, 300)], [0.9, 0.9], groups)
    assert sorted(ids.tolist()) == [1, 6]  # FRONT's ids: 1, 6, 11, ...


def test_track_ids_are_unique_within_a_segment_across_cameras_and_groups():
    segment = SegmentTracker(TrackerParams())
    seen: dict[int, tuple[int, int]] = {}
    for k in range(5):
        for camera in range(1, 6):
            ids = segment.update(camera, k * S // 10, [box(300 + k, 300), box(600, 300), box(900, 300)], [0.9] * 3,
                                 np.array([1, 2, CLASS_GROUP_BASE + 18]))
            for i, g in zip(ids.tolist(), (1, 2, 18)):
                assert seen.setdefault(i, (camera, g)) == (camera, g)
    assert sorted(seen) == list(range(1, 16))
    assert all(i % 5 == camera % 5 for i, (camera, _) in seen.items())  # the id says the camera


def test_a_cameras_ids_do_not_depend_on_how_the_cameras_took_turns():
    def run(order):
        segment, out = SegmentTracker(TrackerParams()), {}
        for camera, k in order:
            out[camera, k] = segment.update(camera, k * S // 10, [box(300 + 9 * k, 300), box(700, 300 + 4 * k)],
                                            [0.9, 0.8], [1, 2]).tolist()
        return out

    by_time = [(c, k) for k in range(6) for c in (1, 2, 4)]
    by_camera = [(c, k) for c in (4, 2, 1) for k in range(6)]
    assert run(by_time) == run(by_camera)
    assert {i for ids in run(by_time).values() for i in ids if i >= 0} == {1, 6, 2, 7, 4, 9}


def test_a_segment_tracker_refuses_a_camera_that_waymo_does_not_have():
    with pytest.raises(ValueError, match="^camera 9: expected a Waymo camera number, 1-5$"):
        SegmentTracker(TrackerParams()).update(9, 0, [], [], [])


def test_a_group_without_boxes_still_ages_its_lost_tracks():
    segment = SegmentTracker(TrackerParams())
    segment.update(1, 0, [box(300, 300)], [0.9], [1])
    for k in range(1, 13):
        segment.update(1, k * S // 10, [box(600, 300)], [0.9], [2])
    assert segment.tracks_held() == 1  # the vehicle, lost for 1.2 s, is gone


def test_a_segment_tracker_refuses_time_going_back_per_camera():
    segment = SegmentTracker(TrackerParams())
    segment.update(1, 200, [], [], [])
    segment.update(2, 100, [], [], [])
    with pytest.raises(ValueError, match="^camera 1: timestamps must increase, got 150 after 200$"):
        segment.update(1, 150, [], [], [])


# --- scores: helpers ------------------------------------------------------------------------------

def track_boxes(label_frames: list[tuple[list, np.ndarray]], params: TrackerParams, rng=None, drop: float = 0.0,
                jitter: float = 0.0, fps: float = 10, timestamps: list[int] | None = None) -> list[TrackEvalFrame]:
    """Labels used as detections (score 0.9), optionally jittered and dropped, tracked -> TrackEvalFrame."""
    t = ByteTracker(params, IdAllocator())
    out = []
    for k, (ids, xyxy) in enumerate(label_frames):
        dets = np.asarray(xyxy, float).reshape(-1, 4)
        if rng is not None:
            dets = dets[rng.random(len(dets)) >= drop]
            size = np.repeat(dets[:, 2:] - dets[:, :2], 2, axis=0).reshape(-1, 4)
            dets = dets + rng.normal(0, jitter, dets.shape) * size
        ts = round(k * S / fps) if timestamps is None else timestamps[k]
        track_ids = t.update(ts, dets, np.full(len(dets), 0.9))
        out.append(TrackEvalFrame(tuple(ids), xyxy, track_ids, dets))
    return out


def trackeval_directly(sequences: list[list[TrackEvalFrame]], iou: float) -> dict[str, dict]:
    """TrackEval on the same boxes, its own IoU and id handling (np.unique), no code of ours."""
    m = trackeval_metrics()
    with contextlib.redirect_stdout(io.StringIO()):
        from trackeval.datasets._base_dataset import _BaseDataset
    metrics = {"HOTA": m.HOTA(), "CLEAR": m.CLEAR({"THRESHOLD": iou, "PRINT_CONFIG": False}),
               "Identity": m.Identity({"THRESHOLD": iou, "PRINT_CONFIG": False})}
    results: dict[str, dict] = {name: {} for name in metrics}
    for n, frames in enumerate(sequences):
        all_gt = np.unique(np.concatenate([np.asarray(f.label_ids, object) for f in frames]).astype(str))
        all_tr = np.unique(np.concatenate([f.track_ids[f.track_ids >= 0] for f in frames]))
        gt_ids, tr_ids, sims = [], [], []
        for f in frames:
            keep = f.track_ids >= 0
            gt_ids.append(np.searchsorted(all_gt, np.asarray(f.label_ids, object).astype(str)))
            tr_ids.append(np.searchsorted(all_tr, f.track_ids[keep]))
            sims.append(_BaseDataset._calculate_box_ious(f.label_xyxy, f.track_xyxy[keep], box_format="x0y0x1y1"))
        data = {"num_timesteps": len(frames), "num_gt_ids": len(all_gt), "num_tracker_ids": len(all_tr),
                "num_gt_dets": sum(map(len, gt_ids)), "num_tracker_dets": sum(map(len, tr_ids)),
                "gt_ids": gt_ids, "tracker_ids": tr_ids, "similarity_scores": sims}
        for name, metric in metrics.items():
            results[name][str(n)] = metric.eval_sequence(data)
    return {name: metric.combine_sequences(results[name]) for name, metric in metrics.items()}


def assert_same_as_trackeval(sequences: list[list[TrackEvalFrame]], waymo_type: int, protocol=WAYMO_PROTOCOL) -> None:
    ours = score_tracks({waymo_type: sequences}, protocol)[waymo_type]
    theirs = trackeval_directly(sequences, protocol.iou(waymo_type))
    expected = {"hota": np.mean(theirs["HOTA"]["HOTA"]), "deta": np.mean(theirs["HOTA"]["DetA"]),
                "assa": np.mean(theirs["HOTA"]["AssA"]), "mota": theirs["CLEAR"]["MOTA"], "motp": theirs["CLEAR"]["MOTP"],
                "idf1": theirs["Identity"]["IDF1"], "id_switches": theirs["CLEAR"]["IDSW"],
                "fragmentations": theirs["CLEAR"]["Frag"], "mostly_tracked": theirs["CLEAR"]["MT"],
                "partly_tracked": theirs["CLEAR"]["PT"], "mostly_lost": theirs["CLEAR"]["ML"]}
    for name, value in expected.items():
        assert getattr(ours, name) == pytest.approx(value, abs=1e-9), name
    for frames in sequences:  # the per-box flags name the boxes behind the counts
        one = trackeval_directly([frames], protocol.iou(waymo_type))["CLEAR"]
        flags = track_flags(frames, protocol.iou(waymo_type))
        assert (int(flags.switch.sum()), int(flags.fragment.sum())) == (one["IDSW"], one["Frag"])


# --- scores: the published TUD numbers -------------------------------------------------------------

@pytest.fixture(scope="session")
def motmetrics_wheel() -> zipfile.ZipFile:
    """motmetrics 1.4.0's wheel (real MOT ground truth and a tracker's output for TUD; CC BY-NC-SA, so
    fetched into the git-ignored models/build/ and read from the zip, never copied into the repo)."""
    folder = ROOT / "models" / "build" / "motmetrics"
    wheels = sorted(folder.glob("motmetrics-1.4.0-*.whl"))
    if not wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "motmetrics==1.4.0",
                               "-d", str(folder)], capture_output=True, text=True, timeout=300)
        wheels = sorted(folder.glob("motmetrics-1.4.0-*.whl"))
        if done.returncode or not wheels:
            pytest.skip(f"motmetrics 1.4.0 could not be downloaded: {done.stderr.strip()[-200:]}")
    return zipfile.ZipFile(wheels[0])


def mot_frames(wheel: zipfile.ZipFile, sequence: str) -> list[TrackEvalFrame]:
    def load(name: str) -> np.ndarray:
        return np.loadtxt(io.StringIO(wheel.read(f"motmetrics/data/{sequence}/{name}").decode()), delimiter=",", ndmin=2)

    gt, tr = load("gt.txt"), load("test.txt")

    def xyxy(rows: np.ndarray) -> np.ndarray:
        return np.c_[rows[:, 2:4], rows[:, 2:4] + rows[:, 4:6]]

    last = int(max(gt[:, 0].max(), tr[:, 0].max()))
    return [TrackEvalFrame(tuple(str(int(i)) for i in gt[gt[:, 0] == f, 1]), xyxy(gt[gt[:, 0] == f]),
                        tr[tr[:, 0] == f, 1].astype(np.int64), xyxy(tr[tr[:, 0] == f])) for f in range(1, last + 1)]


@pytest.mark.parametrize("sequence", sorted(TUD))
def test_tud_scores_are_the_published_ones(motmetrics_wheel, sequence):
    frames = mot_frames(motmetrics_wheel, sequence)
    scores = score_tracks({int(WaymoType.PEDESTRIAN): [frames]}, COCO_PROTOCOL)[int(WaymoType.PEDESTRIAN)]
    expected = TUD[sequence]
    assert scores.idf1 == pytest.approx(expected["IDF1"], abs=1e-6)
    assert scores.mota == pytest.approx(expected["MOTA"], abs=1e-6)
    assert scores.id_switches == expected["IDSW"]
    assert scores.hota == pytest.approx(expected["HOTA"], abs=1e-6)
    assert_same_as_trackeval([frames], int(WaymoType.PEDESTRIAN), COCO_PROTOCOL)


# --- scores: hostile label ids ----------------------------------------------------------------------

def test_null_empty_and_repeated_label_ids_are_objects_seen_once():
    b = np.array([box(100, 100), box(300, 100), box(500, 100), box(700, 100)])
    frames = [TrackEvalFrame(("a", None, "", "a"), b, np.array([1, 2, 3, 4]), b),
              TrackEvalFrame(("a", None, "", "a"), b, np.array([1, 2, 3, 4]), b)]
    seq = to_trackeval(frames)
    assert seq.singletons == 6 and seq.data["num_gt_ids"] == 7
    scores = score_tracks({2: [frames]}, COCO_PROTOCOL)[2]
    # every box is found (no false alarm, no miss); identities hold only for "a"
    assert (scores.mota, scores.id_switches, scores.objects) == (1.0, 0, 7)
    # IDF1: "a" and track 1 share 2 boxes; tracks 2, 3, 4 each keep one of their two singletons: 2 x 5 / (8 + 8)
    assert scores.idf1 == pytest.approx(0.625, abs=1e-12)
    flags = track_flags(frames, 0.5)
    assert flags.label_id.tolist() == ["a", None, None, None] * 2


def test_a_null_camera_object_id_is_read_as_no_id_not_as_the_string_none():
    import pyarrow as pa

    from detect.waymo.camera_labels import labels_by_image
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

    table = pa.table({SEGMENT: ["s"] * 3, TIMESTAMP: pa.array([1, 1, 2], pa.int64()), CAMERA: pa.array([1, 1, 1], pa.int8()),
                      OBJECT_ID: ["a", None, None], BOX_CENTER_X: [10.0, 50.0, 50.0], BOX_CENTER_Y: [10.0] * 3,
                      BOX_SIZE_X: [4.0] * 3, BOX_SIZE_Y: [4.0] * 3, BOX_TYPE: pa.array([2, 2, 2], pa.int8())})
    by_key, dropped = labels_by_image(table, "s")
    assert dropped == 0 and [labels.object_ids for labels in by_key.values()] == [("a", ""), ("",)]


def test_a_track_id_twice_on_one_image_is_refused():
    with pytest.raises(ValueError, match=r"^track_ids: a track id appears twice on one image: \[1, 1\]$"):
        TrackEvalFrame(("a", "b"), np.array([box(1, 1), box(5, 5)]), np.array([1, 1]), np.array([box(1, 1), box(5, 5)]))


def test_no_sequence_is_refused():
    with pytest.raises(ValueError, match="^no sequence to score$"):
        metric_results([], 0.5)


def test_switch_and_fragment_flags_mark_the_boxes():
    b = np.array([box(100, 100)])
    none = np.zeros((0, 4))
    frames = [TrackEvalFrame(("a",), b, np.array([1]), b), TrackEvalFrame(("a",), b, np.array([1]), b),
              TrackEvalFrame(("a",), b, np.zeros(0, np.int64), none), TrackEvalFrame(("a",), b, np.array([2]), b)]
    flags = track_flags(frames, 0.5)
    assert flags.frame.tolist() == [0, 1, 3] and flags.track_id.tolist() == [1, 1, 2]
    assert flags.switch.tolist() == [False, False, True]
    # as TrackEval: an image without tracked boxes does not break "tracked on the previous image"
    assert flags.fragment.tolist() == [False, False, False]


# --- scores: real labels tracked ------------------------------------------------------------------

def mot17_sequences() -> dict[str, tuple[list[tuple[list, np.ndarray]], list[int]]]:
    """Per segment: the labels per frame and the frames' timestamps (each sequence at its own frame rate)."""
    if not MOT17.exists():
        pytest.skip(f"MOT17 fixtures not found at {MOT17}")
    out = {}
    for path in sorted(MOT17.glob("*.parquet")):
        t = pq.read_table(path).to_pandas().sort_values("key.frame_timestamp_micros", kind="stable")
        frames, timestamps = [], []
        for ts, rows in t.groupby("key.frame_timestamp_micros", sort=True):
            timestamps.append(int(ts))
            cx, cy = rows["[CameraBoxComponent].box.center.x"].to_numpy(), rows["[CameraBoxComponent].box.center.y"].to_numpy()
            w, h = rows["[CameraBoxComponent].box.size.x"].to_numpy(), rows["[CameraBoxComponent].box.size.y"].to_numpy()
            frames.append((rows["key.camera_object_id"].tolist(), np.c_[cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]))
        out[path.stem] = (frames, timestamps)
    return out


def test_mot17_labels_as_perfect_detections_are_tracked_perfectly():
    sequences = [track_boxes(frames, TrackerParams(), timestamps=ts) for frames, ts in mot17_sequences().values()]
    scores = score_tracks({2: sequences}, COCO_PROTOCOL)[2]
    # One swap, an honest one: in MOT17-05 (14 fps) mot5 walks in front of mot14 (their boxes overlap at
    # IoU ~0.7) on its second frame; with motion alone, mot14's track follows mot5's box.
    assert scores.id_switches == 1 and scores.fragmentations == 0
    assert scores.hota > 0.95 and scores.idf1 > 0.95 and scores.mota > 0.95
    assert_same_as_trackeval(sequences, 2, COCO_PROTOCOL)


@pytest.mark.parametrize("seed", [0, 1])
def test_mot17_labels_jittered_and_dropped_score_as_trackeval_says(seed):
    rng = np.random.default_rng(seed)
    sequences = [track_boxes(frames, TrackerParams(), rng=rng, drop=0.15, jitter=0.04, timestamps=ts)
                 for frames, ts in mot17_sequences().values()]
    scores = score_tracks({2: sequences}, COCO_PROTOCOL)[2]
    assert 0.4 < scores.hota < 0.95 and scores.mota < 1
    assert_same_as_trackeval(sequences, 2, COCO_PROTOCOL)


def pan_over(labels_by_camera, n_frames: int = 60, width: float = 1700, step: float = 2.0):
    """A window panning right then back left (2 px per frame) and zooming in slowly over each camera's
    real labels: boxes keep their ids, boxes less than half inside leave the picture and come back."""
    out = {}
    for camera, (ids, xyxy) in labels_by_camera.items():
        frames = []
        for k in range(n_frames):
            x0 = step * (k if k < n_frames // 2 else n_frames - k)
            zoom = 1 + 0.001 * k
            b = (xyxy - [x0, 0, x0, 0]) * zoom
            inside = np.clip(b[:, [0, 2]], 0, width * zoom)
            visible = (inside[:, 1] - inside[:, 0]) / np.maximum(b[:, 2] - b[:, 0], 1e-9)
            keep = visible >= 0.5
            b = b[keep]
            b[:, [0, 2]] = np.clip(b[:, [0, 2]], 0, width * zoom)
            frames.append(([i for i, k_ in zip(ids, keep) if k_], b))
        out[camera] = frames
    return out


@pytest.fixture(scope="module")
def real_labels():
    from detect.waymo.camera_labels import read_labels
    from detect.waymo.readers import read_keys

    if not REAL_FRAME.exists():
        pytest.skip(f"real Waymo fixture not found at {REAL_FRAME}")
    labels = read_labels(read_keys(str(REAL_FRAME)))
    assert labels is not None
    return {key.camera_name: labels.by_key[key] for key in labels.by_key}


@pytest.mark.slow  # reading the real frame's labels loads Waymo's protos (2-7 s here)
@pytest.mark.parametrize("waymo_type", [int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN)])
def test_a_pan_over_the_real_frames_labels_is_tracked_and_scored_as_trackeval(real_labels, waymo_type):
    by_camera = {c: (np.asarray(lab.object_ids)[lab.types == waymo_type].tolist(),
                     lab.xyxy[lab.types == waymo_type].astype(float))
                 for c, lab in real_labels.items()}
    pans = pan_over({c: v for c, v in by_camera.items() if len(v[0])})
    segment = SegmentTracker(TrackerParams())
    sequences, owner = [], {}
    for camera, frames in pans.items():
        seq = []
        for k, (ids, xyxy) in enumerate(frames):
            track_ids = segment.update(int(camera), k * S // 10, xyxy, np.full(len(xyxy), 0.9), np.full(len(xyxy), waymo_type))
            seq.append(TrackEvalFrame(tuple(ids), xyxy, track_ids, xyxy))
            for t in track_ids[track_ids >= 0].tolist():
                assert owner.setdefault(t, camera) == camera  # ids unique across cameras
        sequences.append(seq)
    assert sum(len(f.label_ids) for s in sequences for f in s) >= 40 * 5
    # objects away from the picture for more than the lost buffer come back as new tracks: the only switches
    away_too_long = 0
    for frames in pans.values():
        present = {}
        for k, (ids, _) in enumerate(frames):
            for i in ids:
                present.setdefault(i, []).append(k)
        away_too_long += sum(int(np.any(np.diff(ks) > 11)) for ks in present.values())
    scores = score_tracks({waymo_type: sequences}, WAYMO_PROTOCOL)[waymo_type]
    assert scores.id_switches == away_too_long
    assert scores.hota > 0.9 and scores.mota > 0.95
    assert_same_as_trackeval(sequences, waymo_type)


def test_the_tracker_benchmark_times_frames_of_the_asked_size():
    from detect.tools.bench_track import ms_per_frame, synthetic_frames

    frames = synthetic_frames(29, 3)
    assert [f[0].shape for f in frames] == [(29, 4)] * 3 and [f[1].shape for f in frames] == [(29,)] * 3
    assert 0 < ms_per_frame(80, frames=20) < 1000
