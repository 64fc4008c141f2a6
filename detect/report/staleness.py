"""Whether an `eval.json` still describes the results beside it: after a segment is run again, its
evaluation is stale until `detect eval` runs again, and the report says so instead of showing old
numbers as if they were current (fingerprints: `detect.results.fingerprint`)."""

from __future__ import annotations

from pathlib import Path

from detect.core.names import printable
from detect.results.eval_record import EvalRecord
from detect.results.fingerprint import changed_files, current_sources, recorded_sources

SHOWN = 3  # files named in a notice; the rest counted


def changed_since(evaluation: EvalRecord | None, directory: Path) -> list[str]:
    """The results files under `directory` that changed after `evaluation` (its eval.json, read
    from `directory`) was computed; empty when none did, when there is none, or when it does not
    say what it was computed from (written by an older `detect`: nothing to compare)."""
    recorded = None if evaluation is None else recorded_sources(evaluation.data)
    if not recorded:
        return []
    return changed_files(recorded, current_sources(directory, recorded))


def stale_notice(changed: list[str]) -> str | None:
    """The one line a page shows above a stale evaluation, or None when it is current; pure."""
    if not changed:
        return None
    more = f" and {len(changed) - SHOWN} more" if len(changed) > SHOWN else ""
    named = ", ".join(printable(c, 120) for c in changed[:SHOWN]) + more
    return (f"Out of date: {named} changed after this evaluation was computed; run detect eval on this results "
            f"folder again to refresh it.")


def evaluation_notice(evaluation: EvalRecord, directory: Path) -> str | None:
    """What the evaluation section of a page shows first: a notice when it is stale, else None."""
    return stale_notice(changed_since(evaluation, directory))


def stale_segments(changed: list[str]) -> list[str]:
    """The segment folders (relative, `.` for the folder itself) named by changed files; pure."""
    return sorted({c.rpartition("/")[0] or "." for c in changed})


def refresh_note(results: Path, segments: list[str]) -> str:
    """The note `detect report` prints when some evaluations are stale; pure."""
    named = ", ".join(printable(s, 64) for s in segments[:SHOWN]) + ("..." if len(segments) > SHOWN else "")
    return (f"eval.json is out of date for {len(segments)} segment(s) ({named}): their detections or labels changed "
            f"after it was computed; refresh with `detect eval {results}`, then `detect report {results}`")
