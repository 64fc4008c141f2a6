"""`detect report RESULTS`: a page per segment, and an index for a run."""

from __future__ import annotations

import json
from pathlib import Path

from detect.core.errors import InputError
from detect.report.data import load
from detect.report.pages import REPORT_FILE, index_page, segment_page
from detect.sinks.layout import EVAL_FILE
from detect.sinks.manifest import MANIFEST_FILE
from detect.sinks.table import DETECTIONS_FILE

RUN_FILES = ("run.json",)


def build_reports(results: Path) -> list[Path]:
    """`report.html` in every segment directory at or under `results`; `index.html` at the top of
    a run directory (one that holds segment directories rather than being one)."""
    results = Path(results)
    if not results.is_dir():
        raise InputError(f"{results}: no such results directory")
    if (results / MANIFEST_FILE).is_file():
        return [segment_page(load(results))]
    directories = sorted(p.parent for p in results.glob(f"*/{MANIFEST_FILE}"))
    if not directories:
        raise InputError(f"{results}: no segment results here (no */{MANIFEST_FILE})")
    written = [segment_page(load(d)) for d in directories if not _up_to_date(d)]
    manifests = [(d, json.loads((d / MANIFEST_FILE).read_text())) for d in directories]
    run = _run_file(results)
    written.append(index_page(results, manifests, run))
    return written


def _up_to_date(directory: Path) -> bool:
    """A segment page newer than everything it shows is kept: reports of big runs are incremental."""
    page = directory / REPORT_FILE
    if not page.is_file():
        return False
    sources = [directory / name for name in (MANIFEST_FILE, EVAL_FILE, DETECTIONS_FILE)]
    return all(page.stat().st_mtime_ns > p.stat().st_mtime_ns for p in sources if p.is_file())


def _run_file(results: Path) -> dict | None:
    for path in sorted(results.glob("run*.json")):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return None
