"""The top of every page: the verdict per Waymo type in one short table (AP50 with the labels it
rests on, hits / false alarms / misses at the drawing threshold, the F1-best threshold), a tracking
line when there are track scores, and a short table of contents.

Types the data holds no label of are left out of the table and named in one line: their AP is
not a number, only their false alarms are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from detect.core.matching import SMALL_SAMPLE
from detect.report import safe
from detect.report.gallery import Outcome
from detect.report.html import num, table
from detect.results.eval_record import EvalRecord

LEVEL = "LEVEL_2"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One Waymo type's numbers at a glance."""

    name: str
    labels: int | None
    ap50: object  # from eval.json: shown only when it is a finite number
    hits: int | None
    false_alarms: int | None
    missed: int | None
    best_threshold: str | None  # the F1-best threshold, as eval.json suggests it

    @property
    def small_sample(self) -> bool:
        return self.labels is not None and 0 < self.labels < SMALL_SAMPLE


def verdicts(report: EvalRecord, outcomes: Mapping[str, Outcome] | None) -> tuple[list[Verdict], list[str]]:
    """The types with labels, in eval.json's order, and the names of those without any (left out)."""
    sweeps = report.sweeps
    shown, without = [], []
    for row in report.rows(LEVEL):
        name = str(row.get("name"))
        if name == "ALL":
            continue
        labels = safe.count(row.get("labels"))
        if labels == 0:
            without.append(name)
            continue
        outcome = None if outcomes is None else outcomes.get(name)
        hits = outcome.hits if outcome else safe.count(row.get("true_positives"))
        false_alarms = outcome.false_alarms if outcome else safe.count(row.get("false_positives"))
        missed = outcome.missed if outcome else (None if labels is None or hits is None else labels - hits)
        best = safe.mapping(safe.mapping(sweeps.get(name)).get("best")).get("suggested")
        shown.append(Verdict(name, labels, row.get("ap50"), hits, false_alarms, missed,
                             None if best is None else str(best)))
    return shown, without


def headline(report: EvalRecord | None, outcomes: Mapping[str, Outcome] | None, lead: str,
             tracking: Mapping[str, object] | None = None) -> str:
    """The headline block: `lead` (escaped HTML built by the page), then the verdict table, or a
    line saying there is nothing to score against."""
    parts = [f"<p class='lead'>{lead}</p>"]
    if report is None:
        parts.append("<p class='muted'>No evaluation: the segment has no labels, or <code>detect eval</code> "
                     "has not run.</p>")
        return "<section class='headline' id='headline'>" + "".join(parts) + "</section>"
    shown, without = verdicts(report, outcomes)
    threshold = threshold_text(report.data.get("threshold"))
    rows = [[v.name, _labels(v), _ap(v), _count(v.hits), _count(v.false_alarms), _count(v.missed),
             v.best_threshold or "-"] for v in shown]
    if rows:
        parts.append(table(["type", "labels", "AP50", "hits", "false alarms", "missed", "F1-best"],
                           rows, css="verdict"))
    notes = [f"Hits, false alarms and misses at the drawing threshold {threshold}; AP50 over every score "
             f"(LEVEL_2, IoU 0.5); F1-best: the threshold with the best F1 (try it with <code>--threshold</code>)."]
    if any(v.small_sample for v in shown):
        notes.append(f"* fewer than {SMALL_SAMPLE} labels: too few for the AP to mean much.")
    if without:
        notes.append(f"No labels of {', '.join(safe.text(n) for n in without)} in the data: not scored.")
    parts.append(f"<p class='muted'>{' '.join(notes)}</p>")
    line = tracking_line(tracking or {})
    if line:
        parts.append(f"<p>{line}</p>")
    return "<section class='headline' id='headline'>" + "".join(parts) + "</section>"


def threshold_text(value: object) -> str:
    """A threshold as the command line takes it ("0.3", not "0.30"); "-" when it is not a number."""
    return f"{value:g}" if isinstance(value, (int, float)) and safe.number(value) != "-" else "-"


def tracking_line(scores: Mapping[str, object]) -> str:
    """"Tracking (HOTA): VEHICLE 0.412, PEDESTRIAN 0.350", or "" when the run was not tracked."""
    parts = [f"{safe.text(name)} {safe.number(safe.mapping(s).get('hota'), 3)}" for name, s in scores.items()
             if isinstance(s, dict)]
    return f"Tracking (HOTA, each camera's track ids against the labels' ids): {', '.join(parts)}" if parts else ""


def contents(entries: Sequence[tuple[str, str]]) -> str:
    """A short table of contents: (anchor id, title) of each section the page holds."""
    links = " · ".join(f"<a href='#{safe.text(anchor)}'>{safe.text(title)}</a>" for anchor, title in entries)
    return f"<nav class='toc'>On this page: {links}</nav>" if entries else ""


def _labels(v: Verdict) -> str:
    return "-" if v.labels is None else f"{v.labels}{'*' if v.small_sample else ''}"


def _ap(v: Verdict) -> str:
    return num(v.ap50, 3)


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)
