"""Track ids from a detections table: a function of its boxes alone, whatever order the rows come in."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.tracks import PARAMS, moving_boxes

from detect.model.classmap import default_class_map
from detect.track import SegmentTracker, group_keys
from detect.track.table_tracks import track_ids


def test_each_object_keeps_one_id_unique_in_the_segment_and_faint_boxes_get_none():
    ts, cam, cls, score, box = moving_boxes()
    ids = track_ids(ts, cam, cls, score, box, default_class_map(), PARAMS)
    per_object = [set(ids[k::4].tolist()) for k in range(4)]
    assert [len(s) for s in per_object[:3]] == [1, 1, 1] and per_object[3] == {-1}
    assert len(set.union(*per_object[:3])) == 3 and -1 not in set.union(*per_object[:3])


def test_the_ids_do_not_depend_on_the_row_order_and_equal_the_tracker_fed_image_by_image():
    ts, cam, cls, score, box = moving_boxes()
    ids = track_ids(ts, cam, cls, score, box, default_class_map(), PARAMS)
    shuffled = np.random.default_rng(4).permutation(len(ts))
    again = track_ids(ts[shuffled], cam[shuffled], cls[shuffled], score[shuffled], box[shuffled],
                      default_class_map(), PARAMS)
    np.testing.assert_array_equal(again, ids[shuffled])
    tracker = SegmentTracker(PARAMS)
    direct = np.full(len(ts), -1)
    for t in sorted(set(ts.tolist())):
        for c in (1, 2):
            rows = np.flatnonzero((ts == t) & (cam == c))
            direct[rows] = tracker.update(c, t, box[rows], score[rows], group_keys(cls[rows], default_class_map()))
    np.testing.assert_array_equal(direct, ids)


def test_an_empty_table_has_no_ids_and_ragged_columns_are_refused():
    empty = np.zeros(0)
    assert track_ids(empty, empty, empty, empty, np.zeros((0, 4)), default_class_map(), PARAMS).tolist() == []
    with pytest.raises(ValueError, match=r"^expected one camera, class, score and box per row \(2\), got 2, 2, 1 and 2$"):
        track_ids(np.zeros(2), np.ones(2), np.ones(2), np.ones(1), np.zeros((2, 4)), default_class_map(), PARAMS)
