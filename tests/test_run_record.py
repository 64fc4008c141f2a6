"""Run files read back: one record for the runner (outcomes carried over) and the report (the index page)."""

from __future__ import annotations

import json

from detect.results.run_record import RUN_FILE, RunRecord, read_run_record, read_run_records, run_file_name


def test_a_run_file_is_named_once_per_shard_and_every_one_is_found(tmp_path):
    assert (run_file_name(None), run_file_name((1, 3))) == (RUN_FILE, "run-shard-1-of-3.json")
    for name in (run_file_name((1, 2)), run_file_name(None), run_file_name((0, 2))):
        (tmp_path / name).write_text(json.dumps({"engine": "local", "segments": []}))
    (tmp_path / "run-broken.json").write_text("{")  # unusable: left out
    (tmp_path / "run-link.json").symlink_to(tmp_path / RUN_FILE)  # a link: left out
    assert [r.name for r in read_run_records(tmp_path)] == ["run-shard-0-of-2.json", "run-shard-1-of-2.json",
                                                            RUN_FILE]  # sorted by name
    assert read_run_record(tmp_path / "nowhere.json") is None


def test_entries_that_are_not_objects_are_left_out_and_inputs_are_found_by_path(tmp_path):
    ok = {"path": "a.tfrecord", "status": "done"}
    failed = {"path": "b.tfrecord", "status": "failed", "error": "not a TFRecord"}
    nameless = {"path": 5, "status": "failed"}
    (tmp_path / RUN_FILE).write_text(json.dumps({"this_run": {"done": 1}, "engine": "ray",
                                                 "segments": [ok, "x", failed, nameless, None]}))
    record = read_run_record(tmp_path / RUN_FILE)
    assert record is not None and record.entries == (ok, failed, nameless)
    assert record.by_input() == {"a.tfrecord": ok, "b.tfrecord": failed}
    assert record.failed() == [failed, nameless]  # the page lists it; the runner cannot match it to an input
    assert record.tally == {"done": 1, "done_with_failures": 0, "skipped": 0, "failed": 0} and record.engine == "ray"
    assert RunRecord.from_json({"segments": {"path": "a"}}, RUN_FILE).entries == ()
