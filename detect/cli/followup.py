"""After `detect segment` / `detect run`: evaluate against the labels (when there are any) and
write the report, so one command ends with AP per type, the F1-best thresholds and a page to open."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from detect.core.errors import InputError
from detect.core.matching import PROTOCOLS
from detect.core.names import counted
from detect.core.records import WaymoType
from detect.sinks.ground_truth import GROUND_TRUTH_FILE
from detect.sinks.manifest import MANIFEST_FILE
from detect.sinks.source_images import NamedSources

if TYPE_CHECKING:
    from detect.evaluate.commands import EvalResult
    from detect.evaluate.metrics import Evaluation


@dataclasses.dataclass(frozen=True)
class FollowUp:
    """What the follow-up wrote and has to say."""

    lines: list[str]  # for the summary (stdout)
    notes: list[str]  # one line each (stderr)


def follow_up(results: Path, *, evaluate: bool, report: bool, class_map: Path | None, protocol: str,
              pooled: bool, status: Callable[[str], None] = lambda text: None,
              sources: NamedSources = NamedSources(),
              summary: Callable[[EvalResult], list[str]] | None = None) -> FollowUp:
    """`detect eval` on `results` when a segment there has labels, then `detect report`; `status`
    says which of the two is under way (each takes seconds). `sources`: the segment files the user
    named (a run's inputs, redraw's --source), which the report's close-ups read; `summary` picks
    the evaluation's lines to print (default: `evaluation_lines`).

    The evaluation and the report (matplotlib, pandas: ~0.7 s to import) load when they are
    first needed, so a command starts its own work first, and `detect redraw` imports them in
    the thread that evaluates while its frames are drawn."""
    lines: list[str] = []
    notes: list[str] = []
    if evaluate and _has_labels(results, pooled):
        status("evaluating against Waymo's labels")
        from detect.evaluate.commands import run_eval

        try:
            result = run_eval(results, class_map_path=class_map, protocol=PROTOCOLS[protocol])
        except InputError as err:
            notes.append(f"not evaluated: {err}")
        else:
            notes += result.notes
            lines += (summary or evaluation_lines)(result)
    if report:
        status("writing the report")
        written = write_pages(results, pooled, sources)
        lines += written.lines
        notes += written.notes
    return FollowUp(lines, notes)


def write_pages(results: Path, pooled: bool, sources: NamedSources = NamedSources()) -> FollowUp:
    """`detect report` on `results`: the line naming its page, or a note saying why there is none."""
    from detect.report.build import build_reports
    from detect.report.pages import INDEX_FILE, REPORT_FILE

    try:
        written = build_reports(results, sources)
    except InputError as err:
        return FollowUp([], [f"no report: {err}"])
    page = results / (INDEX_FILE if pooled else REPORT_FILE)
    line = f"report: {page}" if page.is_file() else f"reports: {len(written.written)} page(s) under {results}"
    return FollowUp([line], written.notes)


def refresh_pages(results: Path, status: Callable[[str], None] = lambda text: None) -> FollowUp:
    """After `detect eval` or `detect track` changed what the pages show: the report pages that
    exist written again, so that none is older than the eval.json it shows (those at or under
    `results`; for a segment's folder in a run's, the run's index too: it shows the segment's AP);
    none is added but that index. A page whose sources did not change is kept (`build_reports`)."""
    from detect.report.pages import INDEX_FILE, REPORT_FILE

    segment = (results / MANIFEST_FILE).is_file()
    if segment and (results.parent / INDEX_FILE).is_file():
        status(f"writing the report pages of {results.parent}")
        written = write_pages(results.parent, True)
        return FollowUp([f"report: {results / REPORT_FILE}"] if written.lines else [], written.notes)
    if not segment and (results / INDEX_FILE).is_file():
        status(f"writing the report pages of {results}")
        return write_pages(results, True)
    folders = [results] if segment else sorted(p.parent for p in results.glob(f"*/{REPORT_FILE}"))
    folders = [f for f in folders if (f / REPORT_FILE).is_file() and (f / MANIFEST_FILE).is_file()]
    if folders:
        status(f"writing the report pages of {results}")
    lines: list[str] = []
    notes: list[str] = []
    for folder in folders:
        written = write_pages(folder, False)
        lines += written.lines
        notes += written.notes
    if len(lines) > 1:
        lines = [f"reports: {len(lines)} pages under {results}"]
    return FollowUp(lines, notes)


def load_report_code() -> None:
    """Import the report's modules (pandas, matplotlib) ahead of `follow_up` writing it."""
    import detect.report.build  # noqa: F401


def evaluation_lines(result: EvalResult) -> list[str]:
    """AP per type with labels (LEVEL_2, both protocols) and the F1-best thresholds."""
    from detect.evaluate.outputs import best_threshold_lines, threshold_text

    evaluation = result.evaluation
    rows = [r for r in evaluation.levels["LEVEL_2"] if r.name != "ALL" and r.labels]
    if not rows:
        return []
    per_type = ", ".join(f"{r.name} {_fmt(r.ap50)} / {_fmt(r.ap_waymo)}" for r in rows)
    counts = "; ".join(f"{r.name} {counted(r.true_positives, 'hit')}, {counted(r.false_positives, 'false alarm')}, "
                       f"{r.labels - r.true_positives} missed" for r in rows)
    return [f"AP50 / AP70/50 (COCO / Waymo, LEVEL_2): {per_type}",
            f"at threshold {threshold_text(evaluation)(evaluation.threshold)} ({evaluation.protocol.describe()}): {counts}",
            *best_threshold_lines(evaluation), *tracking_line(evaluation)]


def tracking_line(evaluation: Evaluation) -> list[str]:
    """The track ids against the labels' object ids, per type, in one line (none when the run was
    not tracked or its labels carry no object ids)."""
    scores = evaluation.tracking
    ious = {s.iou for s in scores.values()}
    one_iou = len(ious) == 1  # the Waymo protocol asks 0.7 of vehicles, 0.5 of the others
    per_type = ", ".join(f"{WaymoType(t).name} {s.hota:.3f} / {s.mota:.3f} / {s.idf1:.3f}"
                         + ("" if one_iou else f" (IoU {s.iou:g})") for t, s in scores.items())
    return [f"tracking HOTA / MOTA / IDF1{f' (IoU {min(ious):g})' if one_iou else ''}: {per_type}"] if scores else []


def _has_labels(results: Path, pooled: bool) -> bool:
    candidates = [results] if not pooled else [p for p in results.iterdir() if p.is_dir()] if results.is_dir() else []
    return any((p / GROUND_TRUTH_FILE).is_file() for p in candidates)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"

