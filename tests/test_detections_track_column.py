"""A Detections record's optional track column: None for an image that was not tracked, one id per
box (NO_TRACK where the tracker kept none) for one that was, carried through every new record."""

from __future__ import annotations

import numpy as np
import pytest

from detect.core.records import NO_TRACK, TRACK_ID_DTYPE, Detections


def three(track_ids=None) -> Detections:
    return Detections(np.array([[0, 0, 4, 4], [1, 1, 5, 5], [2, 2, 6, 6]], np.float32), np.array([0.9, 0.8, 0.7]),
                      np.array([1, 3, 1]), ("person", "car", "person"), invalid=2, track_ids=track_ids)


def ids(d: Detections) -> list[int]:
    assert d.track_ids is not None
    return d.track_ids.tolist()


def test_detections_are_untracked_unless_given_track_ids():
    assert three().track_ids is None and Detections.empty().track_ids is None


def test_track_ids_are_kept_as_int64_one_per_box():
    d = three(np.array([6, NO_TRACK, 11], np.int32))
    assert d.track_ids is not None and d.track_ids.dtype == TRACK_ID_DTYPE and d.track_ids.tolist() == [6, -1, 11]


def test_an_empty_record_of_a_tracked_image_has_an_empty_track_column():
    empty = Detections.empty(tracked=True)
    assert len(empty) == 0 and empty.track_ids is not None and empty.track_ids.dtype == TRACK_ID_DTYPE
    assert empty.track_ids.shape == (0,)


def test_an_image_without_boxes_takes_an_empty_track_column_of_any_dtype():
    assert ids(Detections.empty().with_track_ids(np.array([]))) == []


def test_select_carries_the_track_ids_of_the_rows_it_picks():
    d = three(np.array([6, NO_TRACK, 11]))
    assert ids(d.select(np.array([2, 0]))) == [11, 6]
    assert ids(d.select(np.array([False, True, False]))) == [NO_TRACK]
    assert ids(d.select(np.zeros(3, bool))) == []
    assert three().select(np.array([1])).track_ids is None


def test_with_track_ids_gives_a_new_record_and_leaves_the_old_one_as_it_was():
    d = three()
    tracked = d.with_track_ids(np.array([1, 2, 3]))
    assert d.track_ids is None and ids(tracked) == [1, 2, 3]
    assert tracked.labels == d.labels and tracked.invalid == 2 and np.array_equal(tracked.xyxy, d.xyxy)
    assert tracked.with_track_ids(None).track_ids is None


def test_with_track_ids_checks_the_column_as_the_constructor_does():
    with pytest.raises(ValueError, match=r"^track_ids must have shape \(3,\), got \(2,\)$"):
        three().with_track_ids(np.array([1, 2]))


def test_equals_compares_the_track_ids_and_whether_the_image_was_tracked():
    ids = np.array([6, NO_TRACK, 11])
    assert three(ids).equals(three(ids.copy()))
    assert not three(ids).equals(three(np.array([6, NO_TRACK, 16])))
    assert not three(ids).equals(three())
    assert not three().equals(three(ids))
    assert three().equals(three())
