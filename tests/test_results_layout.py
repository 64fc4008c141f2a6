"""The results layout's version: every record `detect` writes carries `layout_version`, a folder
written before versions existed (the committed `fixtures/results_layout1`) reads through the one
upgrade step, and a layout newer than the code knows is refused in one line naming the file."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from helpers.cli import without_status
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.compare.comparison import Comparison
from detect.core.errors import RecordError
from detect.results.eval_record import read_eval_record
from detect.results.layout_version import COMPARE, EVAL, LAYOUT_KEY, LAYOUT_VERSION, MANIFEST, RUN, STEPS, upgraded
from detect.results.results_folder import read_manifest
from detect.results.run_record import read_run_records

GOLDEN = Path(__file__).parent / "fixtures" / "results_layout1"
RECORDS = {MANIFEST: f"run/{TINY_SEGMENT}/manifest.json", EVAL: f"run/{TINY_SEGMENT}/eval.json", RUN: "run/run.json",
           COMPARE: "compare/compare.json"}


def golden(kind: str) -> dict[str, object]:
    return json.loads((GOLDEN / RECORDS[kind]).read_text())


def detect(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    code = main(list(argv), stdout=io.StringIO(), stderr=err)
    return code, err.getvalue()


def test_the_golden_folder_is_layout_1_and_reads_as_the_current_layout_in_one_step_per_version():
    """The committed folder carries no version (layout 1); each record reads upgraded by the steps,
    with its values as written, and a manifest's keys from after its time read as not recorded."""
    assert len(STEPS) == LAYOUT_VERSION - 1
    for kind in RECORDS:
        record = golden(kind)
        assert LAYOUT_KEY not in record
        current = upgraded(record, kind, RECORDS[kind])
        assert current[LAYOUT_KEY] == LAYOUT_VERSION and next(iter(current)) == LAYOUT_KEY
        assert {k: v for k, v in current.items() if k != LAYOUT_KEY} == record  # written today: nothing to fill in
    old = golden(MANIFEST)
    del old["tracking"], old["counts"]["drawn"]  # type: ignore[attr-defined]
    filled = upgraded(old, MANIFEST, "manifest.json")
    assert filled["tracking"] is None and filled["counts"]["drawn"] is None  # type: ignore[index]


def test_the_golden_folders_records_read_through_the_readers():
    """The readers of each record read the layout-1 files: the manifest's threshold, model and
    counts, the run's entries, the evaluation's levels, the comparison's sides."""
    manifest = read_manifest(GOLDEN / "run" / TINY_SEGMENT)
    assert manifest.segment_context_name == TINY_SEGMENT and manifest.threshold == 0.5
    assert manifest.data[LAYOUT_KEY] == LAYOUT_VERSION and manifest.counts.drawn == 75
    (run,) = read_run_records(GOLDEN / "run")
    assert [e["segment_context_name"] for e in run.entries] == [TINY_SEGMENT] and run.data[LAYOUT_KEY] == LAYOUT_VERSION
    evaluation = read_eval_record(GOLDEN / "run" / TINY_SEGMENT)
    assert evaluation is not None and evaluation.threshold == 0.5 and evaluation.rows("LEVEL_2")
    comparison = Comparison.from_json(golden(COMPARE))
    assert comparison.images == golden(COMPARE)["images"] and comparison.to_json()[LAYOUT_KEY] == LAYOUT_VERSION


@pytest.mark.slow
def test_a_report_and_an_evaluation_of_the_golden_folder_run(tmp_path):
    """`detect eval` and `detect report` read a copy of the layout-1 folder (its tables and records)."""
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "run", run)
    assert detect("eval", str(run), "--quiet")[0] == 0
    code, err = detect("report", str(run))
    assert code == 0, err
    assert "75 boxes drawn (score at least 0.5)" in (run / TINY_SEGMENT / "report.html").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("kind", [MANIFEST, EVAL, RUN])
def test_a_newer_layout_is_refused_in_one_line_naming_the_file(tmp_path, kind):
    """A record of a layout this code does not know is not guessed at: one line names it (the report
    leaves a segment out, or stops at a newer run file; eval of a folder whose only manifest is newer
    exits 2)."""
    run = tmp_path / "run"
    shutil.copytree(GOLDEN / "run", run)
    path = tmp_path / RECORDS[kind]
    path.write_text(json.dumps({LAYOUT_KEY: LAYOUT_VERSION + 1} | golden(kind)))
    refusal = (f"{path}: written by a newer detect ({LAYOUT_KEY} {LAYOUT_VERSION + 1}; this one reads up to "
               f"{LAYOUT_VERSION}); read it with that version")
    for command in ("eval", "report") if kind == MANIFEST else ("report",):
        code, err = detect(command, str(run))
        lines = without_status(err).splitlines()
        assert "Traceback" not in err and sum(refusal in line for line in lines) == 1, err
        assert code == (2 if kind == RUN or command == "eval" else 0)  # a segment left out, or nothing to read


@pytest.mark.parametrize("version", ["2", 0, True, 1.5])
def test_a_layout_version_that_is_not_a_whole_number_from_1_is_refused(version):
    with pytest.raises(RecordError, match=rf"^manifest.json: {LAYOUT_KEY}: expected a whole number from 1, got "):
        upgraded({LAYOUT_KEY: version}, MANIFEST, "manifest.json")


@pytest.mark.slow
def test_every_record_a_run_writes_carries_the_current_layout_first(tmp_path, tiny_v2_path, stub_dynamic_dir):
    """manifest.json, eval.json, run.json and compare.json each start with `layout_version`."""
    for name, threshold in (("a", "0.5"), ("b", "0.3")):
        assert detect("run", str(tiny_v2_path), "--out", str(tmp_path / name), "--model", str(stub_dynamic_dir),
                      "--threshold", threshold, "--no-png", "--no-gif", "--no-report", "--quiet")[0] == 0
    assert detect("eval", str(tmp_path / "a"), "--quiet")[0] == 0
    assert detect("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c"), "--quiet")[0] == 0
    for path in (tmp_path / "a" / TINY_SEGMENT / "manifest.json", tmp_path / "a" / TINY_SEGMENT / "eval.json",
                 tmp_path / "a" / "eval.json", tmp_path / "a" / "run.json", tmp_path / "c" / "compare.json"):
        assert next(iter(json.loads(path.read_text()).items())) == (LAYOUT_KEY, LAYOUT_VERSION), path
