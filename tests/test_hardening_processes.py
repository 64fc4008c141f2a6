"""Writers, locks and what is printed: `detect gif` during a run, two runs on one OUT, a lock that could
not be made, escape sequences from files, messages that said the wrong thing, Ctrl-C while the
command starts."""

from __future__ import annotations

import gc
import importlib.abc
import io
import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers.cli import without_status
from helpers.frames import frames, jpeg
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.core.errors import OutputError
from detect.core.names import segment_dir_name
from detect.model.formats import SIDECAR
from detect.results.layout import RunLock, SegmentLock
from detect.tools.synthetic import write_camera_image_parquet

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


@pytest.fixture
def segment_out(tiny_v2_path, stub_dynamic_dir, tmp_path) -> Path:
    out = tmp_path / "out"
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--max-frames", "2", "--no-eval", "--no-report"]) == 0  # the GIFs are what these tests read
    return out


@pytest.mark.slow
def test_detect_gif_leaves_out_a_segment_being_written(segment_out, capsys):
    directory = segment_out / TINY_SEGMENT
    before = (directory / "mosaic.gif").stat().st_mtime_ns
    with SegmentLock(directory):  # what a running `detect segment` holds
        assert main(["gif", str(segment_out)]) == 1
    captured = capsys.readouterr()
    assert without_status(captured.err).startswith(f"detect: note: {directory} is being written by another detect process (pid ")
    assert without_status(captured.err).endswith("; wait for it to finish or choose another --out; left out\n")
    assert captured.out == "" and (directory / "mosaic.gif").stat().st_mtime_ns == before
    assert main(["gif", str(segment_out)]) == 0  # once the writer is done


def test_a_second_run_on_one_out_says_it_is_busy_and_leaves_the_records(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text('{"kept": true}')
    with RunLock(out, "run.json"):  # what the first `detect run` holds until it ends
        assert main(["run", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"detect: error: {out} is busy: another detect process (pid ")
    assert err.endswith("is running there and keeps run.json; wait for it to finish, or give this run another --out\n")
    assert (out / "run.json").read_text() == '{"kept": true}' and not (out / TINY_SEGMENT).exists()
    # shards keep their own run files, so the shards of one run go side by side
    with RunLock(out, "run-shard-0-of-2.json"):
        assert main(["run", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                     "--shard", "1/2", "--no-eval", "--no-report"]) == 0


def test_a_lock_that_cannot_be_made_is_one_error_and_no_traceback_later(tmp_path, monkeypatch):
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(OutputError, match=r": cannot create the output directory \(Not a directory\)$"):
        SegmentLock(tmp_path / "file" / "segment")
    gc.collect()
    assert unraisable == []


@pytest.mark.slow
def test_escape_sequences_from_files_are_printed_visibly(tiny_v2_path, stub_dynamic_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    (model / SIDECAR).write_text(json.dumps({"kind": "real", "description": "evil\x1b[2J\x1b]0;title\x07 model\rX"}))
    out, err = io.StringIO(), io.StringIO()
    assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / "o"), "--max-frames", "1",
                 "--no-gif"], stdout=out, stderr=err) == 0
    printed = out.getvalue() + without_status(err.getvalue())
    assert "\x1b" not in printed and "\x07" not in printed and "\r" not in printed
    assert "evil\\x1b[2J\\x1b]0;title\\x07 model\\x0dX" in out.getvalue()


@pytest.mark.slow
def test_a_partial_class_map_says_which_detected_classes_it_leaves_out(real_frame_path, stub_dynamic_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["segment", str(real_frame_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif", "--no-png", "--no-eval", "--no-report"]) == 0  # evaluated below, with the map
    (tmp_path / "map.json").write_text('{"person": "PEDESTRIAN"}')
    assert main(["eval", str(out), "--quiet", "--class-map", str(tmp_path / "map.json")]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "leaves out" in line]
    assert len(notes) == 1 and notes[0].startswith(f"detect: note: --class-map {tmp_path / 'map.json'} leaves out ")
    assert "car (" in notes[0] and notes[0].endswith("; their boxes are not evaluated")


def test_detect_gif_keeps_the_caption_of_a_renamed_segment(stub_dynamic_dir, tmp_path):
    name = "seg.with.dots"
    source = write_camera_image_parquet(tmp_path / "in.parquet", frames(name, jpeg(), jpeg()))
    out = tmp_path / "out"
    assert main(["segment", str(source), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-report"]) == 0
    directory = out / segment_dir_name(name)
    assert directory.name.startswith("renamed-")
    written = (directory / "mosaic.gif").read_bytes()
    assert main(["gif", str(out)]) == 0
    assert (directory / "mosaic.gif").read_bytes() == written  # same caption, same bytes


class _Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "detect.cli.app":
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_command_starts_is_one_line(monkeypatch):
    monkeypatch.delitem(sys.modules, "detect.cli.app", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Interrupt(), *sys.meta_path])
    err = io.StringIO()
    assert main(["info", "x"], stderr=err) == 130
    assert err.getvalue() == "detect: interrupted while starting; nothing was written\n"
