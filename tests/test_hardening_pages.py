"""Results folders as hostile input to `detect report`: values that carry HTML, links that carry
schemes, symlinks planted in the folder, broken files, the run files of a sharded run. Every page
escapes and type-checks what it shows, links only to relative paths, runs no script but its own,
and writes nothing through a link."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.browser import chromium, needs_chromium
from helpers.cli import without_status
from helpers.examples import examples
from helpers.paths import TINY_SEGMENT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from detect.cli import main
from detect.report.build import build_reports
from detect.report.pages import SORT_SCRIPT

SEGMENT_FILES = ("manifest.json", "detections.parquet")


class Audit(HTMLParser):
    """Every script, event handler, link and CSP of a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self.links: list[str] = []
        self.policies: list[str] = []
        self._in_script = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        self.handlers += [name for name, _ in attrs if name.lower().startswith("on")]
        self.links += [values[n] for n in ("href", "src", "poster") if values.get(n) is not None]
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "content-security-policy":
            self.policies.append(values.get("content") or "")

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False


def assert_safe(page: Path) -> None:
    audit = Audit(page.read_text())
    assert audit.handlers == [], audit.handlers
    assert all(script in (SORT_SCRIPT, "") for script in audit.scripts), audit.scripts  # "": a file's (filters.js)
    assert len(audit.policies) == 1 and "script-src" in audit.policies[0] and "'unsafe-inline'" not in audit.policies[0]
    for link in audit.links:
        if re.fullmatch(r"#[a-z0-9-]+", link):  # the table of contents: a section of the page
            continue
        assert link.startswith("./") and ":" not in link, link  # relative, no scheme (":" is quoted as %3A)


@pytest.fixture(scope="module")
def segment_results(tiny_v2_path, stub_dynamic_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seg")
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-gif", "--max-frames", "2"]) == 0
    return out / TINY_SEGMENT


def copy_segment(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for name in SEGMENT_FILES:
        shutil.copy(source / name, target / name)
    return target


def edit_manifest(directory: Path, **changes) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    for dotted, value in changes.items():
        node = manifest
        *parents, last = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    (directory / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.slow
def test_values_from_results_files_never_become_html(segment_results, tmp_path):
    run = tmp_path / "run"
    seg = copy_segment(segment_results, run / "seg_a")
    script = "<script>alert(1)</script>"
    edit_manifest(seg, segment_context_name=script, status="<img src=x onerror=alert(2)>",
                  counts__images_processed=script, counts__detections_by_label={script: 3},
                  timings__images_per_second=10**400, settings__draw__threshold=script,
                  model__description="<svg onload=alert(3)>", input__labels_dropped=script)
    (seg / "eval.json").write_text(json.dumps({"threshold": script, "types": [script], "labels_dropped": "<b>",
                                                "library": {"name": script},
                                                "levels": {"LEVEL_2": [{"name": script, "labels": script, "ap50": script}]}}))
    (run / "run.json").write_text(json.dumps({"engine": script, "this_run": {"done": script, "failed": 10**400},
                                              "segments": [{"status": "failed", "path": script, "error": script}]}))
    (run / "eval.json").write_text(json.dumps({"threshold": script, "levels": script}))
    reports = build_reports(run)
    # the manifest now names another segment than the table's rows: left out (as eval leaves them), said on stderr
    [note] = reports.notes
    assert note.startswith(f"{seg / 'detections.parquet'}: ") and note.endswith(f"name another segment than {script}; left out")
    for page in reports.written:
        html = page.read_text()
        assert "<script>alert" not in html and "<img src=x" not in html and "<svg" not in html and "<b>" not in html
        assert_safe(page)


@pytest.mark.slow
def test_a_folder_named_like_a_javascript_url_is_a_relative_link(segment_results, tmp_path):
    run = tmp_path / "run"
    copy_segment(segment_results, run / "javascript:alert(document.domain)")
    page = build_reports(run).written[-1]
    links = Audit(page.read_text()).links
    assert "./javascript%3Aalert%28document.domain%29/report.html" in links
    assert_safe(page)


@pytest.mark.slow
def test_a_symlink_in_a_results_folder_is_never_written_through(segment_results, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = tmp_path / "run"
    planted = copy_segment(segment_results, run / "seg_a")
    (planted / "report").symlink_to(elsewhere)
    linked = run / "seg_b"
    linked.symlink_to(copy_segment(segment_results, tmp_path / "outside_seg"))
    reports = build_reports(run)
    assert reports.notes == [
        f"{linked}: a symlink, not followed; left out",
        f"{planted / 'report'} is a symlink: detect writes only real folders and files; remove it; left out",
    ]
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "outside_seg" / "report.html").exists()
    assert reports.written == [run / "index.html"]


@pytest.mark.slow
def test_a_report_html_that_is_a_symlink_is_refused(segment_results, tmp_path, capsys):
    seg = copy_segment(segment_results, tmp_path / "seg")
    target = tmp_path / "target.html"
    target.write_text("keep me")
    (seg / "report.html").symlink_to(target)
    assert main(["report", str(seg)]) == 2
    printed = without_status(capsys.readouterr().err)
    assert printed == (f"detect: error: {seg / 'report.html'} is a symlink: detect writes only real "
                                       f"folders and files; remove it\n")
    assert target.read_text() == "keep me"


@pytest.mark.slow
def test_one_broken_results_file_leaves_the_other_pages(segment_results, tmp_path, capsys):
    run = tmp_path / "run"
    good = copy_segment(segment_results, run / "seg_good")
    edit_manifest(good, timings__images_per_second=10**400)
    bad_table = copy_segment(segment_results, run / "seg_table")
    (bad_table / "detections.parquet").write_bytes(b"PAR1 broken")
    bad_manifest = copy_segment(segment_results, run / "seg_manifest")
    (bad_manifest / "manifest.json").write_text("[1, 2")
    assert main(["report", str(run)]) == 0
    notes = without_status(capsys.readouterr().err).splitlines()
    assert len(notes) == 2 and all(note.endswith("; left out") for note in notes)
    assert notes[0].startswith(f"detect: note: {bad_manifest / 'manifest.json'}: cannot read the manifest (")
    assert notes[1].startswith(f"detect: note: {bad_table / 'detections.parquet'}: not a readable detections table (")
    assert (good / "report.html").is_file() and (run / "index.html").is_file()
    assert "seg_good" in (run / "index.html").read_text() and "seg_table" not in (run / "index.html").read_text()


@pytest.mark.slow
def test_the_index_of_a_sharded_run_shows_every_shard(segment_results, tmp_path):
    run = tmp_path / "run"
    copy_segment(segment_results, run / "seg_a")
    for index, done in ((0, 3), (1, 5)):
        (run / f"run-shard-{index}-of-2.json").write_text(json.dumps(
            {"engine": "local", "this_run": {"done": done, "done_with_failures": 0, "skipped": 0, "failed": 0},
             "segments": []}))
    html = build_reports(run).written[-1].read_text()
    assert "Last run (run-shard-0-of-2.json): 3 done" in html and "Last run (run-shard-1-of-2.json): 5 done" in html


JSON = st.recursive(st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats() | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
                    max_leaves=8)


# 20 examples in CI: each builds a whole report (matplotlib's charts, ~0.5 s); the page-level
# escaping of every value is also held by the cheaper property tests above.
@pytest.mark.slow
@settings(max_examples=examples(1 / 15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(manifest_values=st.dictionaries(st.sampled_from(["status", "counts", "timings", "settings", "model", "input",
                                                        "failures", "versions", "segment_context_name", "engine"]),
                                       JSON, max_size=6),
       evaluation=JSON, run_file=JSON)
def test_any_results_files_give_safe_pages_or_a_note(segment_results, tmp_path_factory, manifest_values, evaluation,
                                                     run_file):
    run = tmp_path_factory.mktemp("fuzz") / "run"
    seg = copy_segment(segment_results, run / "seg")
    manifest = json.loads((seg / "manifest.json").read_text()) | manifest_values
    (seg / "manifest.json").write_text(json.dumps(manifest, allow_nan=True))
    (seg / "eval.json").write_text(json.dumps(evaluation, allow_nan=True))
    (run / "run.json").write_text(json.dumps(run_file, allow_nan=True))
    reports = build_reports(run)
    assert all(note.endswith("; left out") for note in reports.notes)
    for page in reports.written:
        assert page.resolve().is_relative_to(run.resolve())
        assert_safe(page)


@pytest.mark.slow  # starts Chromium
@needs_chromium
def test_the_policy_lets_the_page_own_script_run_and_nothing_else(segment_results, tmp_path):
    run = tmp_path / "run"
    for name in ("seg_a", "seg_b"):
        edit_manifest(copy_segment(segment_results, run / name), segment_context_name=name)
    page_path = build_reports(run).written[-1]
    html = page_path.read_text()
    # A script the data could have smuggled in, were escaping ever to fail: the policy must stop it.
    page_path.write_text(html.replace("</body>", "<script>document.title = 'injected'</script></body>"))
    with chromium() as browser:
        page = browser.new_page()
        page.goto(page_path.as_uri())
        assert page.title() != "injected"
        names = "cells => cells.map(c => c.textContent)"
        first = page.locator("table.sortable th").first
        assert page.eval_on_selector_all("table.sortable tbody tr td:first-child", names) == ["seg_a", "seg_b"]
        first.click()  # the page's own script sorts: descending first
        assert page.eval_on_selector_all("table.sortable tbody tr td:first-child", names) == ["seg_b", "seg_a"]
