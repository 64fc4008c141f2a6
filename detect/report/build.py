"""`detect report RESULTS`: a page per segment, and an index for a run.

A results folder is input like any other: a segment whose files are broken is left out with a
note and the others get their pages; a segment folder that is a symlink is never followed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from detect.core.errors import DetectError, InputError
from detect.core.names import printable
from detect.report.data import load
from detect.report.pages import REPORT_FILE, index_page, segment_page
from detect.report.staleness import changed_since, refresh_note, stale_segments
from detect.sinks.eval_record import read_eval_record
from detect.sinks.ground_truth import GROUND_TRUTH_FILE
from detect.sinks.layout import EVAL_FILE
from detect.sinks.manifest import MANIFEST_FILE
from detect.sinks.results_folder import Manifest, read_manifest
from detect.sinks.run_folder import find_segment_folders
from detect.sinks.run_record import read_run_records
from detect.sinks.source_images import NamedSources
from detect.sinks.table import DETECTIONS_FILE


@dataclasses.dataclass(frozen=True)
class Reports:
    written: list[Path]
    notes: list[str]  # one line each: a segment left out, and why


def build_reports(results: Path, sources: NamedSources = NamedSources()) -> Reports:
    """`report.html` in every segment directory at or under `results`; `index.html` at the top of
    a run directory (one that holds segment directories rather than being one). `sources`: the
    segment files the user named, to cut close-ups from (else a segment's recorded file, if local)."""
    results = Path(results)
    found = find_segment_folders(results)
    if found.folders == [results]:
        data = load(results, sources)
        changed = bool(changed_since(data.evaluation, results))
        return Reports([segment_page(data)], data.notes + ([refresh_note(results, [data.name])] if changed else []))
    notes = list(found.skipped)
    directories = found.with_manifest()
    if not directories:
        raise InputError(found.nothing_found(results))
    written: list[Path] = []
    indexed: list[tuple[Path, Manifest]] = []
    for directory in directories:
        try:
            if _up_to_date(directory):
                manifest = read_manifest(directory)
            else:
                data = load(directory, sources)
                written.append(segment_page(data))
                notes += data.notes  # a frame its page could not show
                manifest = data.manifest
        except DetectError as err:  # one broken segment (or a link planted in it) leaves the others' pages
            notes.append(f"{printable(str(err), 300)}; left out")
            continue
        indexed.append((directory, manifest))
    written.append(index_page(results, indexed, read_run_records(results)))
    stale = _stale(results, dict(indexed))
    return Reports(written, notes + ([refresh_note(results, stale)] if stale else []))


def _stale(results: Path, manifests: dict[Path, Manifest]) -> list[str]:
    """The names of the segments whose eval.json, or whose part of the run's, is out of date."""
    folders = {results / folder for folder in stale_segments(changed_since(read_eval_record(results), results))}
    folders |= {d for d in manifests if changed_since(read_eval_record(d), d)}
    return sorted(manifests[d].segment_context_name if d in manifests else d.relative_to(results).as_posix()
                  for d in folders)


def _up_to_date(directory: Path) -> bool:
    """A segment page newer than everything it shows is kept: reports of big runs are incremental."""
    page = directory / REPORT_FILE
    if not page.is_file() or page.is_symlink():
        return False
    sources = [directory / name for name in (MANIFEST_FILE, EVAL_FILE, DETECTIONS_FILE, GROUND_TRUTH_FILE)]
    return all(page.stat().st_mtime_ns > p.stat().st_mtime_ns for p in sources if p.is_file())


