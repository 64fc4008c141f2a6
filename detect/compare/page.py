"""compare.html: two detectors on the same frames, in one static page (relative links only)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detect.compare.close_ups import CloseUp
from detect.compare.comparison import BOOTSTRAP_UNIT, MIN_FRAMES, Comparison
from detect.compare.naming import title
from detect.compare.pictures import APART_MICROS, PER_CAMERA
from detect.compare.stats import Disagreement
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
figure { margin: 0 0 16px; } figcaption { font-size: 13px; color: #555; } img { max-width: 100%; }
.close-ups { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(170px, 100%), 1fr)); gap: 8px 16px; \
margin-bottom: 24px; }
"""


def write(path: Path, comparison: Comparison, shown: list[FrameKey], disagreement: list[Disagreement],
          files: dict[FrameKey, Path], close_ups: Mapping[FrameKey, list[CloseUp]] | None = None) -> Path:
    a, b = comparison.a, comparison.b
    heading = title(a, b, comparison.names)
    sections = [f"<h1>{safe.text(heading)}</h1>",
                f"<p>{_n(comparison.images, 'image')} in common ({_n(comparison.frames, 'frame')}). "
                f"{safe.text(' '.join(comparison.left_out))}</p>",
                _facts(a.to_json(), b.to_json(), comparison.differs)]
    sections.append(_types(comparison))
    sections.append(_tracking(comparison))
    sections.append(_agreement(comparison))
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


def _facts(a: dict[str, object], b: dict[str, object], differs: list[str]) -> str:
    rows = [[Markup(f"<span class='better'>{safe.text(k)}</span>") if k in differs else k, a.get(k), b.get(k)]
            for k in a]
    return "<h2>The two runs</h2>" + table(["", "A", "B"], rows, css="facts")


def _types(comparison: Comparison) -> str:
    if not comparison.labels:
        return "<h2>Against the labels</h2><p>Neither results folder has labels: the runs are compared box for box below.</p>"
    rows = []
    for t in comparison.types:
        interval = "-" if t.low is None or t.high is None else f"{t.low:+.3f} to {t.high:+.3f}"
        rows.append([t.name, t.labels, _ap(t.ap_a, t.outputs_a), _ap(t.ap_b, t.outputs_b),
                     num(t.difference, 3), interval, t.verdict,
                     *([t.found_by_both, t.only_a, t.only_b, t.neither] if t.outputs_a and t.outputs_b
                       else ["-"] * 4)])
    return (f"<h2>Against the labels</h2><p class='muted'>AP per Waymo type on the common images "
            f"({safe.text(comparison.protocol.describe())}, every label). The interval: a paired bootstrap over "
            f"{safe.text(BOOTSTRAP_UNIT)}, {comparison.replicates} resamples (none for fewer than "
            f"{MIN_FRAMES} frames); a difference whose interval excludes "
            f"0 is larger than the frame-to-frame noise. 'not output': the model has no class of that type (no AP is "
            f"made up for it). Found: labeled objects each run found at its own drawing threshold.</p>"
            + table(["type", "labels", "A", "B", "B - A", "95% interval", "verdict", "found by both", "only A", "only B",
                     "neither"], rows))


def _tracking(comparison: Comparison) -> str:
    """Both sides' HOTA, MOTA and IDF1 per type, with the same bootstrap ("" when not tracked)."""
    rows = [[t.name, t.metric, num(t.a, 3), num(t.b, 3), num(t.difference, 3),
             "-" if t.low is None or t.high is None else f"{t.low:+.3f} to {t.high:+.3f}", t.verdict]
            for t in comparison.tracking]
    if not rows:
        return ""
    return ("<h2>Tracking</h2><p class='muted'>Each run's track ids against the labels' object ids on the common "
            "images (TrackEval: HOTA over IoU 0.05-0.95, MOTA and IDF1 at the protocol's IoU), with the same paired "
            "bootstrap over frames as AP: the same resamples weight each image's share of the scores (the matching "
            "decided on the whole sequence).</p>"
            + table(["type", "metric", "A", "B", "B - A", "95% interval", "verdict"], rows))


def _agreement(comparison: Comparison) -> str:
    rows = [[name, v.pairs, v.only_a, v.only_b, num(v.score_correlation, 2)] for name, v in comparison.agreement.items()
            if v.pairs or v.only_a or v.only_b]  # types neither drew are left out
    per_a, per_b = comparison.boxes_per_image
    return ("<h2>Box for box</h2><p class='muted'>Boxes each run drew (at its own threshold) of the types both output, "
            f"matched A to B at IoU 0.5. Boxes drawn per image: A {num(per_a, 1)}, "
            f"B {num(per_b, 1)}.</p>"
            + table(["type", "in both", "only A", "only B", "score correlation"], rows))


def _ap(value: float | None, outputs: bool) -> str:
    return "not output" if not outputs else "-" if value is None else f"{value:.3f}"


def _n(count: Any, word: str) -> str:
    return f"{safe.count_text(count)} {word}{'' if count == 1 else 's'}"
