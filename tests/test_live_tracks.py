"""Track ids given while a segment runs (for the frames drawn then) equal the table's, whatever order
the model saw the cameras in; a camera read out of time order is held back and the run says so."""

from __future__ import annotations

import numpy as np
from helpers.tracks import PARAMS, moving_boxes

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult
from detect.model.classmap import default_class_map
from detect.results.track_ids import live_tracking_notes
from detect.track.live import LiveTracks
from detect.track.table_tracks import track_ids

SEGMENT = "live"


def images(frames: int = 12) -> dict[FrameKey, Detections]:
    """moving_boxes' rows as the engine has them: one Detections per image, a third camera a copy of
    the first (so two cameras hold equal boxes), and two boxes of equal score on camera 2."""
    ts, cam, cls, score, box = moving_boxes(frames)
    out: dict[FrameKey, Detections] = {}
    for t in sorted(set(ts.tolist())):
        for camera in (1, 2, 3):
            rows = np.flatnonzero((ts == t) & (cam == (1 if camera == 3 else camera)))
            xyxy, scores, classes = box[rows], score[rows], cls[rows]
            if camera == 2:  # a tie: the table orders it by the box
                xyxy, scores, classes = np.r_[xyxy, [[600, 200, 650, 320]]], np.r_[scores, 0.7], np.r_[classes, 1]
            out[FrameKey(SEGMENT, t, CameraName(camera))] = Detections(xyxy, scores, classes, ("x",) * len(rows)
                                                                       + (("x",) if camera == 2 else ()))
    return out


def table_ids(by_key: dict[FrameKey, Detections]) -> dict[FrameKey, list[int]]:
    keys = sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name)))
    counts = [len(by_key[k]) for k in keys]
    ids = track_ids(np.repeat([k.frame_timestamp_micros for k in keys], counts),
                    np.repeat([int(k.camera_name) for k in keys], counts),
                    np.concatenate([by_key[k].class_ids for k in keys]), np.concatenate([by_key[k].scores for k in keys]),
                    np.concatenate([by_key[k].xyxy for k in keys]), default_class_map(), PARAMS)
    return {k: v.tolist() for k, v in zip(keys, np.split(ids, np.cumsum(counts)[:-1]), strict=True)}


def live_ids(order: list[FrameKey], by_key: dict[FrameKey, Detections], live: LiveTracks | None = None):
    live = live or LiveTracks(PARAMS, default_class_map())
    got = {}
    for key in order:
        tracked, _ = live.update(key, by_key[key])
        got[key] = None if tracked.track_ids is None else tracked.track_ids.tolist()
    return got, live


def test_live_ids_equal_the_tables_whatever_order_the_cameras_come_in():
    by_key = images()
    expected = table_ids(by_key)
    assert {i for ids in expected.values() for i in ids if i >= 0} == {1, 6, 2, 7, 3, 8}  # two per camera
    by_time = sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name)))
    by_camera_batches = sorted(by_key, key=lambda k: (int(k.camera_name) == 2, k.frame_timestamp_micros // 400_000,
                                                      int(k.camera_name), k.frame_timestamp_micros))
    for order in (by_time, by_camera_batches):
        got, live = live_ids(order, by_key)
        assert got == expected and live.held_back == frozenset()


def test_each_image_gets_the_trails_of_its_tracked_boxes_ending_at_the_box():
    by_key = images()
    live = LiveTracks(PARAMS, default_class_map())
    for key in sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name))):
        detections, trails = live.update(key, by_key[key])
    assert detections.track_ids is not None and key.camera_name == CameraName.FRONT_RIGHT
    assert detections.equals(by_key[key].with_track_ids(detections.track_ids), atol=0)  # the boxes as given
    tracked = {int(i): row for row, i in enumerate(detections.track_ids) if i >= 0}
    assert set(trails) == set(tracked)
    for track_id, row in tracked.items():
        x0, _, x1, y1 = by_key[key].xyxy[row]
        np.testing.assert_allclose(trails[track_id][-1], [(x0 + x1) / 2, y1])
        assert len(trails[track_id]) == 11  # a second of points at 10 Hz, this one included


def test_a_resume_seeded_with_the_finished_images_gives_the_uninterrupted_ids():
    by_key = images()
    order = sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name)))
    uninterrupted, _ = live_ids(order, by_key)
    live = LiveTracks(PARAMS, default_class_map())
    live.seed({k: by_key[k] for k in reversed(order[:13])})  # any order: seed sorts them
    resumed, _ = live_ids(order[13:], by_key, live)
    assert resumed == {k: uninterrupted[k] for k in order[13:]}


def test_a_camera_read_out_of_time_order_is_held_back_and_the_run_says_so():
    by_key = images(4)
    order = sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name)))
    late = [k for k in order if k.camera_name == CameraName.FRONT_LEFT][1]
    order.remove(late)
    order.append(late)  # FRONT_LEFT's second image after its fourth
    got, live = live_ids(order, by_key)
    assert live.held_back == frozenset({2}) and got[late] is None
    assert all(got[k] is not None for k in order if k.camera_name != CameraName.FRONT_LEFT)
    results = {k: FrameResult(k, 1920, 1280, d) for k, d in by_key.items()}
    ids = np.concatenate([table_ids(by_key)[k] for k in sorted(by_key, key=lambda k: (k.frame_timestamp_micros,
                                                                                       int(k.camera_name)))])
    assert live_tracking_notes(SEGMENT, live, results, ids) == [
        "live: FRONT_LEFT images came out of time order and were drawn without track ids from there on; "
        "`detect redraw` draws them"]


def test_the_notes_are_empty_when_the_frames_show_the_tables_ids_and_count_the_images_that_do_not():
    by_key = images(4)
    order = sorted(by_key, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name)))
    _, live = live_ids(order, by_key)
    results = {k: FrameResult(k, 1920, 1280, d) for k, d in by_key.items()}
    ids = np.concatenate([table_ids(by_key)[k] for k in order])
    assert live_tracking_notes(SEGMENT, live, results, ids) == []
    other = ids.copy()
    other[other >= 0] += 100
    assert live_tracking_notes(SEGMENT, live, results, other) == [
        f"live: {sum(1 for k in order if any(i >= 0 for i in table_ids(by_key)[k]))} image(s) drawn with track ids "
        "other than the table's; `detect redraw` draws the table's"]
    assert live_tracking_notes(SEGMENT, None, results, ids) == [
        "live: frames drawn without track ids; `detect redraw` draws them"]
