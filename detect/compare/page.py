"""compare.html: two detectors on the same frames, in one static page (relative links only)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detect.compare.close_ups import CloseUp
from detect.compare.comparison import Change, Comparison
from detect.compare.naming import title
from detect.compare.pictures import APART_MICROS, PER_CAMERA
from detect.compare.stats import Disagreement
from detect.core.names import counted
from detect.core.records import FrameKey
from detect.report import safe
from detect.report.html import Markup, img, num, table, write_page

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; overflow-wrap: anywhere; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; display: block; max-width: 100%; overflow-x: auto; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f5f5f5; } .muted { color: #777; }
.facts td, .facts th { text-align: left; overflow-wrap: anywhere; } \
.facts td:first-child { overflow-wrap: normal; } .better { font-weight: 600; }
table.changes { display: table; } .changes td, .changes th { padding: 3px 10px; vertical-align: top; }
.changes td:last-child, .changes th:last-child { text-align: left; } .changes tr.group th { background: none; \
text-align: left; padding-top: 10px; } .changes .small { display: block; font-size: 12px; color: #777; }
.lead { font-size: 16px; }
details { margin: 8px 0 16px; } summary { cursor: pointer; color: #555; }
figure { margin: 0 0 16px; } figcaption { font-size: 13px; color: #555; } img { max-width: 100%; }
.close-ups { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(170px, 100%), 1fr)); gap: 8px 16px; \
margin-bottom: 24px; }
@media (max-width: 480px) { .changes td, .changes th { padding: 3px 5px; } }
"""


def write(path: Path, comparison: Comparison, shown: list[FrameKey], disagreement: list[Disagreement],
          files: dict[FrameKey, Path], close_ups: Mapping[FrameKey, list[CloseUp]] | None = None) -> Path:
    """The page, verdict first: what differs, then per type each AP's change and its verdict; the
    settings that differ, every other fact folded; then the labels found, tracking, agreement and
    the pictures."""
    heading = title(comparison.a, comparison.b, comparison.names)
    sections = [f"<h1>{safe.text(heading)}</h1>", _lead(comparison), _verdicts(comparison), _settings(comparison),
                _found(comparison), _tracking(comparison), _agreement(comparison)]
    animations = comparison.animations
    if animations:
        figures = "".join(f"<figure>{img(name, f'A | B, {name}')}<figcaption>{safe.text(name)}</figcaption></figure>"
                          for name in animations)
        sections.append(f"<h2>The same frames, A | B</h2><p class='muted'>Each camera's frames as each run drew them"
                        f"{' (hits, false alarms and misses against the same labels)' if comparison.labels else ''}"
                        f".</p>{figures}")
    if shown:
        why = {d.key: d for d in disagreement}
        figures = "".join(
            f"<figure><a href='{safe.href(files[k].name)}'>{img(files[k].name, 'A | B')}</a><figcaption>"
            f"{safe.text(k.camera_name.name)} {k.frame_timestamp_micros} ({safe.text(k.segment_context_name)}): "
            f"{safe.text(disagreement_caption(why[k], comparison.names))}</figcaption></figure>"
            + _close_ups((close_ups or {}).get(k, [])) for k in shown)
        ringed = ("the labeled objects one side found and the other missed" if comparison.labels
                  else "the boxes without a partner on the other side")
        sections.append(f"<h2>Where they disagree most</h2><p class='muted'>Ringed in magenta on both sides: {ringed}"
                        f", tagged with the side that found them; below each, the largest of them cut from the camera image. "
                        f"At most {PER_CAMERA} pictures of a camera, "
                        f"{APART_MICROS / 1e6:g} s apart or more.</p>{figures}")
    notes = comparison.notes
    if notes:
        sections.append("<h2>Notes</h2><ul>" + "".join(f"<li>{safe.text(n)}</li>" for n in notes) + "</ul>")
    sections.append(f"<p class='muted'>Every number: <a href='{safe.href('compare.json')}'>compare.json</a>.</p>")
    return write_page(path, f"detect compare: {heading}", sections, STYLE)


def _close_ups(found: list[CloseUp]) -> str:
    if not found:
        return ""
    figures = "".join(f"<figure>{img(c.file, c.caption)}<figcaption>{safe.text(c.caption)}</figcaption></figure>"
                      for c in found)
    return f"<div class='close-ups'>{figures}</div>"


def disagreement_caption(item: Disagreement, names: tuple[str, str]) -> str:
    """"2 labeled objects found by one side only: 2 by A (tiles 512), 0 by B (no tiles)"."""
    by_a = sum(1 for m in item.marks if m.found_by == "A")
    by_b = sum(1 for m in item.marks if m.found_by == "B")
    return f"{item.count} {item.what}: {by_a} by A ({names[0]}), {by_b} by B ({names[1]})"


def _lead(comparison: Comparison) -> str:
    """What differs between the runs, and how much data the comparison stands on."""
    a, b = comparison.a.to_json(), comparison.b.to_json()
    differs = "; ".join(f"{key}, {_value(a.get(key))} in A and {_value(b.get(key))} in B" for key in comparison.differs)
    blocks = comparison.bootstrap.blocks
    return (f"<p class='lead'>{safe.text(f'What differs: {differs}.' if differs else 'Nothing recorded differs.')} "
            f"{_n(comparison.images, 'image')} in common ({_n(comparison.frames, 'frame')}, "
            f"{_n(blocks, 'block')} of at least {comparison.bootstrap.block_seconds:g} s). "
            f"{safe.text(' '.join(comparison.left_out))}</p>")


def _verdicts(comparison: Comparison) -> str:
    """Per type, each AP of A and B, the change with its interval and the verdict."""
    if not comparison.labels:
        return "<p>Neither results folder has labels: the runs are compared box for box below.</p>"
    groups = []
    for t in comparison.types:
        rows = [(Markup(f"{safe.text(metric)}<span class='small'>{safe.text(', '.join(protocols))}</span>"),
                 _ap(change.a, t.outputs_a), _ap(change.b, t.outputs_b), change)
                for metric, protocols, change in t.ap_rows()]
        groups.append((f"{t.name} ({counted(t.labels, 'label')})", rows))
    bootstrap = comparison.bootstrap
    return (_changes("AP", groups)
            + f"<p class='muted'>AP per Waymo type on the common images, every label: COCO's protocol asks IoU 0.5 of "
            f"every type (AP50), Waymo's 2D protocol 0.7 of vehicles (AP70) and 0.5 of pedestrians and cyclists. "
            f"The interval: a paired bootstrap, {bootstrap.replicates} resamples of {safe.text(bootstrap.unit)}; "
            f"consecutive frames show nearly the same scene, so they are resampled together. A verdict needs "
            f"{bootstrap.min_blocks} blocks; a difference whose interval excludes 0 is larger than the noise. "
            f"'not output': the model has no class of that type (no AP is made up for it).</p>")


def _changes(what: str, groups: list[tuple[str, list[tuple[Markup, str, str, Change]]]]) -> str:
    """A narrow table of changes, a heading row per group (a Waymo type): per row, what is measured,
    A, B, B - A over its 95% interval, the verdict."""
    head = "".join(f"<th>{safe.text(h)}</th>" for h in (what, "A", "B", "B - A", "verdict"))
    body = []
    for group, rows in groups:
        body.append(f"<tr class='group'><th colspan='5'>{safe.text(group)}</th></tr>")
        for measured, a, b, change in rows:
            difference = "-" if change.difference is None else f"{change.difference:+.3f}"
            interval = ("" if change.low is None or change.high is None
                        else f"<span class='small'>{change.low:+.3f} to {change.high:+.3f}</span>")
            verdict = change.verdict
            css = "better" if verdict in ("A better", "B better") else "muted" if verdict.startswith("too") else ""
            body.append(f"<tr><td>{measured}</td><td>{safe.text(a)}</td><td>{safe.text(b)}</td>"
                        f"<td>{safe.text(difference)}{interval}</td><td class='{css}'>{safe.text(verdict)}</td></tr>")
    return f"<table class='changes'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _settings(comparison: Comparison) -> str:
    """The settings that differ, side by side; every fact of both runs folded below."""
    a, b = comparison.a.to_json(), comparison.b.to_json()
    differ = [[k, a.get(k), b.get(k)] for k in comparison.differs]
    shown = (f"<h2>The settings that differ</h2>{table(['', 'A', 'B'], differ, css='facts')}" if differ
             else "<h2>The two runs</h2><p>No recorded setting differs.</p>")
    every = [[Markup(f"<span class='better'>{safe.text(k)}</span>") if k in comparison.differs else k, a.get(k), b.get(k)]
             for k in a]
    return (f"{shown}<details><summary>Every fact of the two runs ({len(every)}: model, settings, where, how fast)"
            f"</summary>{table(['', 'A', 'B'], every, css='facts')}</details>")


def _found(comparison: Comparison) -> str:
    """The labeled objects each run found at its own drawing threshold."""
    rows = [[t.name, t.labels, t.found_by_both, t.only_a, t.only_b, t.neither] for t in comparison.types
            if t.outputs_a and t.outputs_b]
    if not rows:
        return ""
    return ("<h2>Labeled objects found</h2><p class='muted'>Each run at its own drawing threshold, "
            f"{safe.text(comparison.protocol.describe())}.</p>"
            + table(["type", "labels", "by both", "only A", "only B", "neither"], rows))


def _tracking(comparison: Comparison) -> str:
    """Both sides' HOTA, MOTA and IDF1 per type, with the same resamples ("" when not tracked)."""
    groups: dict[str, list[tuple[Markup, str, str, Change]]] = {}
    for row in comparison.tracking:
        groups.setdefault(row.name, []).append((Markup(safe.text(row.metric)), num(row.change.a, 3),
                                                num(row.change.b, 3), row.change))
    if not groups:
        return ""
    return ("<h2>Tracking</h2><p class='muted'>Each run's track ids against the labels' object ids on the common "
            "images (TrackEval: HOTA over IoU 0.05-0.95, MOTA and IDF1 at the protocol's IoU), with the same "
            "resamples as AP: each resample weights each image's share of the scores (the matching decided on the "
            "whole sequence).</p>" + _changes("metric", list(groups.items())))


def _agreement(comparison: Comparison) -> str:
    rows = [[name, v.pairs, v.only_a, v.only_b, num(v.score_correlation, 2)] for name, v in comparison.agreement.items()
            if v.pairs or v.only_a or v.only_b]  # types neither drew are left out
    per_a, per_b = comparison.boxes_per_image
    return ("<h2>Box for box</h2><p class='muted'>Boxes each run drew (at its own threshold) of the types both output, "
            f"matched A to B at IoU 0.5. Boxes drawn per image: A {num(per_a, 1)}, "
            f"B {num(per_b, 1)}.</p>"
            + table(["type", "in both", "only A", "only B", "score correlation"], rows))


def _value(value: object) -> str:
    return "-" if value is None else str(value)


def _ap(value: float | None, outputs: bool) -> str:
    return "not output" if not outputs else "-" if value is None else f"{value:.3f}"


def _n(count: Any, word: str) -> str:
    return safe.text(counted(count, word)) if isinstance(count, int) else f"{safe.count_text(count)} {word}s"
