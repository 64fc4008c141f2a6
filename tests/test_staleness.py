"""A stale evaluation says so: eval.json records fingerprints of what it was computed from, and
`detect report` compares them with the results as they are now."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers.cli import without_status
from helpers.results_folders import (
    BOX_A,
    BOX_B,
    NESTED,
    PERSON,
    SEGMENT,
    TOP,
    dets,
    key,
    labels,
    segment_folder,
    segment_with_frame,
)

from detect.cli import main
from detect.core.cameras import CameraName
from detect.core.records import FrameKey, FrameResult
from detect.report.staleness import stale_notice
from detect.results.fingerprint import Fingerprint, changed_files, fingerprint, recorded_sources
from detect.results.table import DETECTIONS_FILE, write_table

A = Fingerprint(10, 1, "a" * 64)


def test_only_a_change_of_content_counts():
    moved = Fingerprint(10, 2, "a" * 64)  # copied: new mtime, same bytes
    assert changed_files({".": {"detections.parquet": A}}, {".": {"detections.parquet": moved}}) == []
    assert changed_files({".": {"detections.parquet": A}}, {".": {"detections.parquet": Fingerprint(10, 1, "b" * 64)}}) == [
        "detections.parquet"]
    assert changed_files({"s": {"ground_truth.parquet": None}}, {"s": {"ground_truth.parquet": A}}) == ["s/ground_truth.parquet"]
    assert changed_files({"s": {"ground_truth.parquet": A}}, {"s": {"ground_truth.parquet": None}}) == ["s/ground_truth.parquet"]
    assert changed_files({"s": {"ground_truth.parquet": None}}, {"s": {"ground_truth.parquet": None}}) == []


def test_a_file_whose_size_and_mtime_are_as_recorded_is_not_read_again(tmp_path):
    path = tmp_path / "detections.parquet"
    path.write_bytes(b"rows")
    taken = fingerprint(path)
    assert taken == Fingerprint(4, os.stat(path).st_mtime_ns, hashlib.sha256(b"rows").hexdigest())
    trusted = Fingerprint(4, taken.mtime_ns, "f" * 64)
    assert fingerprint(path, trusted) is trusted  # git's index shortcut: stat only
    os.utime(path, ns=(1, 1))
    assert fingerprint(path, trusted) == Fingerprint(4, 1, taken.sha256)  # moved: hashed again
    assert fingerprint(tmp_path / "missing") is None


def test_recorded_sources_read_only_what_they_can_trust():
    good = A.to_json()
    evaluation = {"computed_from": {".": {"detections.parquet": good, "ground_truth.parquet": {"size": True}},
                                    "../out": {"detections.parquet": good}, "/etc": {"detections.parquet": good}}}
    assert recorded_sources(evaluation) == {".": {"detections.parquet": A, "ground_truth.parquet": None}}
    assert recorded_sources({"levels": {}}) is None  # an eval.json from before fingerprints: cannot tell


def test_the_notice_names_the_changed_files():
    assert stale_notice([]) is None
    assert stale_notice(["a/detections.parquet", "b/detections.parquet", "c/x", "d/x"]) == (
        "Out of date: a/detections.parquet, b/detections.parquet, c/x and 1 more changed after this evaluation was "
        "computed; run detect eval on this results folder again to refresh it.")


def rerun(directory: Path) -> None:
    """What a rerun of the segment leaves: a new detections table."""
    write_table(directory / DETECTIONS_FILE, [FrameResult(key(), 1920, 1280, dets((BOX_B, 0.6, PERSON)))])


def report(results: Path) -> str:
    err = io.StringIO()
    assert main(["report", str(results)], stdout=io.StringIO(), stderr=err) == 0
    return without_status(err.getvalue())


@pytest.mark.slow
def test_a_rerun_makes_the_segment_eval_stale_until_eval_runs_again(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON)))})
    assert main(["eval", str(directory), "--quiet"]) == 0
    recorded = json.loads((directory / "eval.json").read_text())["computed_from"]
    assert list(recorded) == ["."] and recorded["."]["detections.parquet"]["sha256"] == hashlib.sha256(
        (directory / DETECTIONS_FILE).read_bytes()).hexdigest()
    assert report(directory) == ""
    notice = "Out of date: detections.parquet changed after this evaluation was computed"
    assert notice not in (directory / "report.html").read_text()
    rerun(directory)
    assert report(directory) == (f"detect: note: eval.json is out of date for 1 segment(s) ({SEGMENT}): their detections "
                                 f"or labels changed after it was computed; refresh with `detect eval {directory}`, then "
                                 f"`detect report {directory}`\n")
    assert notice in (directory / "report.html").read_text()
    assert main(["eval", str(directory), "--quiet"]) == 0
    assert report(directory) == "" and notice not in (directory / "report.html").read_text()


def test_a_copied_results_folder_is_not_stale(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON)))})
    assert main(["eval", str(directory), "--quiet"]) == 0
    copy = shutil.copytree(directory, tmp_path / "copy", copy_function=shutil.copy)  # new mtimes
    assert os.stat(copy / DETECTIONS_FILE).st_mtime_ns != os.stat(directory / DETECTIONS_FILE).st_mtime_ns
    assert report(copy) == ""


@pytest.mark.slow
def test_a_run_names_the_rerun_segment_and_its_index_says_the_pooled_numbers_are_stale(tmp_path):
    run = tmp_path / "run"
    segment_with_frame(run, TOP)
    rerun_dir = segment_with_frame(run / "training", NESTED)
    assert main(["eval", str(run), "--quiet"]) == 0
    assert report(run) == ""
    rerun_key = FrameKey(NESTED, 1_000_000, CameraName.FRONT)
    write_table(rerun_dir / DETECTIONS_FILE, [FrameResult(rerun_key, 1920, 1280, dets((BOX_B, 0.6, PERSON)))])
    assert report(run) == (f"detect: note: eval.json is out of date for 1 segment(s) ({NESTED}): their detections or "
                           f"labels changed after it was computed; refresh with `detect eval {run}`, then "
                           f"`detect report {run}`\n")
    index = (run / "index.html").read_text()
    assert f"Out of date: training/{NESTED}/detections.parquet changed after this evaluation" in index
    assert "Out of date" not in (run / TOP / "report.html").read_text()
    assert "Out of date: detections.parquet changed" in (rerun_dir / "report.html").read_text()


def test_an_eval_json_from_before_fingerprints_shows_no_notice(tmp_path):
    directory = segment_folder(tmp_path, {key(): (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON)))})
    assert main(["eval", str(directory), "--quiet"]) == 0
    evaluation = json.loads((directory / "eval.json").read_text())
    del evaluation["computed_from"]
    (directory / "eval.json").write_text(json.dumps(evaluation))
    rerun(directory)
    assert report(directory) == "" and "Out of date" not in (directory / "report.html").read_text()
