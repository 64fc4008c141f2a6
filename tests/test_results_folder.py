"""One reader of a results folder: eval and the report see the same manifest and the same images."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.core.errors import InputError, OutputError
from detect.evaluate.segment_results import load_segment
from detect.report.data import load as load_report_data
from detect.results import journal
from detect.results.frames import frame_path, list_frames
from detect.results.layout_version import EVAL, LAYOUT_KEY, LAYOUT_VERSION
from detect.results.rebuild import recorded_name
from detect.results.results_folder import (
    DEFAULT_THRESHOLD,
    Counts,
    Manifest,
    finished_frames,
    processed_images,
    read_manifest,
    read_results_json,
)

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


@pytest.fixture
def run(stub_dynamic_dir, tiny_v2_path, tmp_path):
    out = tmp_path / "out"
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif", "--no-report"]) == 0
    return out / TINY_SEGMENT


@pytest.mark.slow
def test_eval_and_the_report_count_the_images_the_journal_names_not_a_stray_frame(run):
    frames = list_frames(run)
    stray = frame_path(run, frames[0].camera_name, frames[0].frame_timestamp_micros + 1, "png")
    shutil.copy(frames[0].path, stray)  # a frame no run wrote (copied in by hand)
    done = set(journal.load(run, TINY_SEGMENT)[0])
    assert len(list_frames(run)) == len(done) + 1
    assert load_segment(run).images == done == processed_images(run, TINY_SEGMENT)
    assert load_report_data(run).images == done  # one view: the same keys


@pytest.mark.slow
def test_without_a_journal_the_frames_and_the_tables_stand_in(run):
    done = set(journal.load(run, TINY_SEGMENT)[0])
    shutil.rmtree(run / ".detect")
    assert processed_images(run, TINY_SEGMENT) == done  # every image has its frame on disk
    for frame in list_frames(run):
        frame.path.unlink()
    assert processed_images(run, TINY_SEGMENT) == frozenset()
    assert processed_images(run, TINY_SEGMENT, sorted(done, key=lambda k: k.order)[:1]) == {min(done, key=lambda k: k.order)}


@pytest.mark.slow
def test_the_manifest_reads_back_typed_and_edited_values_read_as_not_recorded(run):
    manifest = read_manifest(run)
    assert (manifest.segment_context_name, manifest.status, manifest.threshold_recorded) == (TINY_SEGMENT, "complete",
                                                                                           True)
    assert manifest.model.kind == "stub" and manifest.input_path and manifest.counts.images_failed == 0
    edited = json.loads((run / "manifest.json").read_text())
    edited["settings"]["draw"]["threshold"] = "0.3"
    edited["input"]["labels_dropped"] = -4
    edited["counts"]["drawn"] = 1.5
    edited["timings"]["stage_ms_per_image"] = {"detect": "fast", "draw": 2}
    odd = Manifest.from_json(edited, run)
    assert (odd.threshold, odd.threshold_recorded, odd.labels_dropped) == (DEFAULT_THRESHOLD, False, 0)
    assert odd.counts.drawn is None and odd.timings.stage_ms_per_image == {"draw": 2}
    assert odd.timings.detect_ms_per_image is None and odd.input.labels_dropped == 0
    empty = Manifest.from_json({}, run)
    assert empty.segment_context_name == run.name and empty.counts == Counts() and empty.settings == {}


def test_a_manifest_that_is_not_an_object_is_one_line_naming_it(tmp_path):
    (tmp_path / "manifest.json").write_text("[1, 2]")
    with pytest.raises(InputError, match=rf"^{tmp_path / 'manifest.json'}: cannot read the manifest \("):
        read_manifest(tmp_path)


def test_the_json_files_beside_the_results_read_as_none_when_they_cannot_be_used(tmp_path):
    (tmp_path / "eval.json").write_text('{"images": 3}')
    assert read_results_json(tmp_path / "eval.json", EVAL) == {LAYOUT_KEY: LAYOUT_VERSION, "images": 3}
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "link.json").symlink_to(tmp_path / "eval.json")
    os.mkfifo(tmp_path / "fifo.json")  # would block a plain open()
    (tmp_path / "folder.json").mkdir()
    for name in ("missing.json", "list.json", "broken.json", "link.json", "fifo.json", "folder.json"):
        assert read_results_json(tmp_path / name, EVAL) is None, name


@pytest.mark.slow
def test_the_name_a_manifest_records_is_a_non_empty_string_or_none(run, tmp_path):
    assert read_manifest(run).recorded_name == TINY_SEGMENT == recorded_name(run)
    for value in ("", 5, None, ["x"]):
        assert Manifest.from_json({"segment_context_name": value}, tmp_path).recorded_name is None
    (tmp_path / "manifest.json").write_text("[1]")
    assert recorded_name(tmp_path) is None and recorded_name(tmp_path / "nowhere") is None


def test_the_failed_frames_a_manifest_records_are_its_objects(tmp_path):
    failure = {"camera": "FRONT", "stage": "decode", "error": "not a JPEG"}
    assert Manifest.from_json({"failures": [failure, "x", None]}, tmp_path).failures == [failure]
    assert Manifest.from_json({"failures": {"camera": "FRONT"}}, tmp_path).failures == []


def test_a_settings_file_that_is_a_fifo_or_a_link_is_refused_not_waited_on_or_followed(tmp_path):
    state = tmp_path / journal.STATE_DIR
    state.mkdir()
    settings = state / "settings.json"
    (tmp_path / "elsewhere.json").write_text('{"a": 1}')
    settings.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(OutputError, match=rf"^{settings} is unreadable \({settings} is a symbolic link; .*"
                                          r"cannot check the earlier run's settings; use --overwrite to start again$"):
        journal.load_settings(tmp_path)
    settings.unlink()
    os.mkfifo(settings)  # a plain read would wait for a writer forever
    with pytest.raises(OutputError, match=rf"^{settings} is unreadable \({settings} is a FIFO; "):
        journal.load_settings(tmp_path)


@pytest.mark.slow
def test_a_journal_that_is_a_fifo_or_a_link_is_no_journal_and_the_frames_stand_in(run, tmp_path):
    done = set(journal.load(run, TINY_SEGMENT)[0])
    assert set(finished_frames(run, TINY_SEGMENT)) == done
    path = journal.journal_path(run)
    path.rename(tmp_path / "journal.jsonl")
    path.symlink_to(tmp_path / "journal.jsonl")  # a link could pull in another run's journal
    with pytest.raises(InputError, match="is a symbolic link"):
        journal.load(run, TINY_SEGMENT)
    assert finished_frames(run, TINY_SEGMENT) == {} and processed_images(run, TINY_SEGMENT) == done
    path.unlink()
    os.mkfifo(path)  # a plain open() would wait for a writer forever
    assert finished_frames(run, TINY_SEGMENT) == {} and load_segment(run).images == done
