"""eval.json read back: the threshold checked once, the rows the page shows, none when unusable."""

from __future__ import annotations

import json

import pytest

from detect.results.eval_record import EvalRecord, read_eval_record
from detect.results.results_folder import fraction

ALL = {"name": "ALL", "ap50": 0.5}


@pytest.mark.parametrize(("value", "expected"), [(0.3, 0.3), (1, 1.0), (0, 0.0), (True, None), (1.5, None),
                                                 (-0.1, None), ("0.3", None), (None, None), (10**400, None)])
def test_a_threshold_is_a_number_from_0_to_1(value, expected):
    assert fraction(value) == expected
    assert EvalRecord.from_json({"threshold": value}).threshold == expected


def test_rows_and_sections_read_what_is_an_object_and_skip_the_rest():
    record = EvalRecord.from_json({"levels": {"LEVEL_2": [{"name": "VEHICLE"}, "x", ALL], "LEVEL_1": "x"},
                                   "protocol": ["coco"]})
    assert record.rows("LEVEL_2") == [{"name": "VEHICLE"}, ALL] and record.rows("LEVEL_1") == []
    assert record.overall("LEVEL_2") == ALL and record.overall("LEVEL_1") is None
    assert record.protocol == {} and record.protocol_name is None and record.rows("LEVEL_3") == []
    assert record.levels == ["LEVEL_2", "LEVEL_1"] and record.tracking == {}
    # ALL is the last row: a last row that is not an object is no overall row, not the one before it
    assert EvalRecord.from_json({"levels": {"LEVEL_2": [ALL, 3]}}).overall("LEVEL_2") is None


def test_an_eval_json_that_cannot_be_used_or_is_empty_reads_as_none(tmp_path):
    assert read_eval_record(tmp_path) is None
    for text in ("{}", "[1]", "{", '{"threshold": NaN}'):
        (tmp_path / "eval.json").write_text(text)
        assert read_eval_record(tmp_path) is None, text
    (tmp_path / "eval.json").write_text(json.dumps({"threshold": 0.4, "levels": {"LEVEL_2": [ALL]}}))
    record = read_eval_record(tmp_path)
    assert record is not None and record.threshold == 0.4 and record.overall("LEVEL_2") == ALL
