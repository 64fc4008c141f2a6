"""The COCO label map and the class filter parser."""

from __future__ import annotations

import pytest

from detect.model.coco_classes import COCO_LABELS, UnknownClassError, label_for, parse_classes


def test_label_map_has_80_classes_with_the_api_gaps():
    ids = [i for i in COCO_LABELS if i != 0]
    assert len(ids) == 80 and min(ids) == 1 and max(ids) == 90
    assert sorted(set(range(1, 91)) - set(ids)) == [12, 26, 29, 30, 45, 66, 68, 69, 71, 83]
    assert COCO_LABELS[0] == "background"


@pytest.mark.parametrize(
    ("class_id", "label"),
    [(1, "person"), (3, "car"), (10, "traffic light"), (13, "stop sign"), (90, "toothbrush"),
     (3.0, "car"), (12, "class 12"), (95, "class 95")],
)
def test_label_for(class_id, label):
    assert label_for(class_id) == label


def test_parse_classes_accepts_names_ids_and_commas():
    assert parse_classes(["car", "Traffic_Light", "1", 13]) == frozenset({3, 10, 1, 13})
    assert parse_classes(["car, person", "traffic-light"]) == frozenset({3, 1, 10})
    assert parse_classes("stop sign") == frozenset({13})


def test_parse_classes_none_or_empty_means_every_class():
    assert parse_classes(None) is None
    assert parse_classes([]) is None
    assert parse_classes([" , "]) is None


def test_parse_classes_reports_every_bad_value():
    with pytest.raises(UnknownClassError) as err:
        parse_classes(["car,lorry", "12", 0, "95"])
    assert str(err.value) == (
        "unknown COCO classes 'lorry', '12', 0, '95': expected names such as 'person', 'car', "
        "'traffic light' or ids 1-90 (ids 12, 26, 29, 30, 45, 66, 68, 69, 71, 83 are unused)"
    )
    assert isinstance(err.value, ValueError)


def test_parse_classes_single_bad_value_message():
    with pytest.raises(UnknownClassError, match=r"^unknown COCO class 'pedestrian': "):
        parse_classes(["pedestrian"])
