"""`report.html` per segment and `index.html` per run: static pages, relative links only.

Everything a page shows sits beside it (plots and thumbnails in `report/`, the animations and
frames the run wrote), so a results directory can be copied, zipped or served by any static web
server and still work. Nothing is fetched from the internet; the index's column sorting is a few
lines of plain JavaScript, and the page reads the same without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from detect.core.names import counted
from detect.model.coco_classes import describe_classes
from detect.model.facts import COCO_LABEL_MAP, ModelFacts
from detect.report import charts, filters, gallery, pictures, safe, worst_moments
from detect.report.data import SegmentData, drawn_count
from detect.report.evaluation import evaluation_section, where_and_why
from detect.report.headline import contents, headline, threshold_text
from detect.report.html import Markup, write_page
from detect.report.html import count_cell as _count_cell
from detect.report.html import num as _num
from detect.report.html import table as _table
from detect.report.tracks_section import tracks_section
from detect.results.eval_record import read_eval_record
from detect.results.layout import real_folder
from detect.results.results_folder import Manifest
from detect.results.run_record import RunRecord

REPORT_FILE, INDEX_FILE, ASSETS = "report.html", "index.html", "report"

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; word-break: break-all; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; display: block; max-width: 100%; overflow-x: auto; } \
th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f5f5f5; cursor: default; }
th.sortable { cursor: pointer; } .facts td { text-align: left; } .facts td + td { overflow-wrap: anywhere; } \
.facts td:first-child { white-space: nowrap; } .muted { color: #777; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(360px, 100%), 1fr)); gap: 12px; }
.grid figure { margin: 0; } figcaption { font-size: 13px; color: #555; overflow-wrap: anywhere; } img, video { max-width: 100%; }
.status-failed, .status-done_with_failures, .status-complete_with_failures { color: #b00020; font-weight: 600; }
h3 { font-size: 16px; margin-top: 22px; } .grid.crops { grid-template-columns: repeat(auto-fill, minmax(min(240px, 100%), 1fr)); }
.lead { font-size: 16px; margin: 4px 0; } .headline table.verdict { font-size: 16px; }
.headline table.verdict td:nth-child(3) { font-weight: 700; }
.toc { font-size: 14px; margin: 10px 0 0; padding: 6px 0; border-top: 1px solid #ddd; } .toc a { white-space: nowrap; }
@media (max-width: 600px) { body { padding: 0 10px; } th, td { padding: 4px 5px; }
  .headline table.verdict { font-size: 12.5px; } .headline table.verdict :is(th, td) { padding: 3px 3px; }
  .headline th { white-space: normal; } table.sortable td:first-child { word-break: break-all; min-width: 8em; } }
.grid.cameras { grid-template-columns: repeat(auto-fill, minmax(min(520px, 100%), 1fr)); }
h2[id] { scroll-margin-top: 8px; } .wide figure { margin: 0; } img { height: auto; }
form.filters { font-size: 14px; margin: 10px 0; } form.filters label { margin-right: 10px; white-space: nowrap; }
"""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.classList.add("sortable");
    th.title = "sort by this column";
    th.addEventListener("click", function () {
      var rows = Array.from(table.tBodies[0].rows), down = th.dataset.down !== "1";
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value || a.cells[column].textContent;
        var y = b.cells[column].dataset.value || b.cells[column].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return down ? -order : order;
      });
      th.dataset.down = down ? "1" : "0";
      rows.forEach(function (row) { table.tBodies[0].appendChild(row); });
    });
  });
});
"""


def segment_page(data: SegmentData) -> Path:
    """Write `report.html` (and its plots and thumbnails in `report/`) into the segment directory:
    the verdict first, then the pictures (each once), the errors, the boxes, the time, the details."""
    directory, manifest = data.directory, data.manifest
    assets = real_folder(directory / ASSETS)
    counts, timings = manifest.counts, manifest.timings
    matches = gallery.read_matches(directory, data.name, data.notes) if data.evaluation is not None else None
    outcomes = (gallery.outcomes(matches, data.evaluation.threshold)
                if matches is not None and data.evaluation is not None and data.evaluation.threshold is not None else None)
    tracking = None if data.evaluation is None else data.evaluation.tracking
    sections: list[tuple[str, str, str]] = []  # (anchor, title, html)
    groups = pictures.picture_groups(data, assets, ASSETS)
    if groups:
        sections.append(("pictures", "Pictures", pictures.render(groups)))
    if data.evaluation is not None:
        sections.append(("evaluation", "Against Waymo's labels",
                         evaluation_section(data.evaluation, directory, data.name, assets, data.notes, heading=False,
                                            sources=data.sources)))
    tracks = (tracks_section(directory, data.name, data.timestamps[0], assets, data.notes, data.sources)
              if data.timestamps else "")
    if tracks:
        sections.append(("tracks", "Tracks", tracks))
    sections.append(("boxes", "Boxes", _boxes(data, assets)))
    stage_ms = {k: float(v) for k, v in timings.stage_ms_per_image.items()}
    if stage_ms:
        charts.stages(stage_ms, assets / "stages.png")
        sections.append(("time", "Time", f"<p>{_num(timings.images_per_second)} images/s over "
                         f"{_num(timings.pipeline_s)} s ({_num(timings.total_s)} s in all).</p>"
                         + _plot(f"{ASSETS}/stages.png", "milliseconds per image by step")))
    failures = manifest.failures
    if failures:
        rows = [[f.get("camera"), f.get("key.frame_timestamp_micros"), f.get("stage"), f.get("error")] for f in failures]
        sections.append(("failed", f"Failed frames ({len(failures)})",
                         _table(["camera", "timestamp", "stage", "error"], rows)))
    sections.append(("details", "Run details", _facts(data) + "<h3>Versions</h3>"
                     + _facts_table(manifest.versions)
                     + f"<p class='muted'>Files: <a href='{safe.href('manifest.json')}'>manifest.json</a>, "
                     f"<a href='{safe.href('detections.parquet')}'>detections.parquet</a>"
                     f"{_if_file(directory, 'ground_truth.parquet')}{_if_file(directory, 'eval.json')}. "
                     f"{_count_of(counts.images_processed, 'image')} processed.</p>"))
    top = [f"<h1>{safe.text(data.name)}</h1>", headline(data.evaluation, outcomes, _segment_lead(data), tracking),
           contents([(anchor, title) for anchor, title, _ in sections])]
    body = [f"<h2 id='{anchor}'>{safe.text(title)}</h2>{html}" for anchor, title, html in sections]
    return _write(directory / REPORT_FILE, f"detect: {data.name}", top + body)


def _segment_lead(data: SegmentData) -> str:
    """The run in one line: what was read, by what, and how many boxes the frames show."""
    cameras = len({k.camera_name for k in data.images})
    model = data.manifest.model.short_name or data.manifest.model.description or "an unnamed model"
    status = data.manifest.status
    css = status if status.replace("_", "").isalpha() else "unknown"
    flag = "" if status == "complete" else f"<span class='status-{css}'>{safe.text(status)}</span>; "
    return (f"{flag}{counted(len(data.timestamps), 'frame')}, {counted(len(data.images), 'image')} from "
            f"{counted(cameras, 'camera')}; {safe.text(model)}; {drawn_phrase(data.drawn_count, data.threshold)} "
            f"({len(data.detections)} kept in the table, for evaluation).")


def drawn_phrase(drawn: int | None, threshold: float | None) -> str:
    """"587 boxes drawn (score at least 0.3)": the one way every page counts boxes."""
    at = "" if threshold is None else f" (score at least {threshold:g})"
    return f"{'-' if drawn is None else drawn} {'box' if drawn == 1 else 'boxes'} drawn{at}"


def _boxes(data: SegmentData, assets: Path) -> str:
    """Boxes over time, their scores, and the drawn boxes per camera and class."""
    if data.detections.empty:
        return "<p>No boxes in this segment.</p>"
    charts.scores(data.detections, data.threshold, assets / "scores.png")
    table = data.counts()
    return (_timeline(data, assets) + "<h3>Scores</h3>" + _plot(f"{ASSETS}/scores.png", "score distribution per class")
            + "<h3>Boxes drawn, per camera and class</h3>" + _drawn_note(data)
            + (_table(["camera", *table.columns], [[i, *row] for i, row in zip(table.index, table.values.tolist(), strict=True)],
                      css="counts") if not table.empty else ""))


def _plot(path: str, alt: str) -> str:
    """A plot, linked to itself (full size on a phone)."""
    return pictures.linked(path, path, alt)


def _timeline(data: SegmentData, assets: Path) -> str:
    """The boxes-per-frame plot; one frame has no time to plot, so a sentence says so."""
    frames = len(data.timestamps)
    if frames == 0:
        return ""
    if frames == 1:
        drawn = data.drawn_count
        return (f"<p>One frame, so nothing to plot over time: {counted(drawn, 'box')} drawn on its "
                f"{counted(len(data.images), 'image')}{' (per camera and class in the table below)' if drawn else ''}.</p>")
    charts.timeline(data.boxes_per_image(), assets / "timeline.png")
    return f"<h3>Over time</h3>{_plot(f'{ASSETS}/timeline.png', 'boxes drawn per frame and class')}"


def _drawn_note(data: SegmentData) -> str:
    """What the frames show and what the table keeps, in plain words."""
    drawn, kept, cap = data.drawn_count, len(data.detections), data.manifest.max_boxes
    floor = safe.number(data.manifest.model.score_floor, 2)
    below = (f"{counted(kept - drawn, 'more box')} down to the score floor {safe.text(floor)}"
             if floor != "-" else f"{counted(kept - drawn, 'more box')} below it")
    capped = f", at most {cap} an image (--max-boxes)" if data.capped else ""
    return (f"<p class='muted'>Drawn on the frames: the {counted(drawn, 'box')} scoring at least "
            f"{data.threshold:g} (the drawing threshold){capped}. detections.parquet also keeps {below}, "
            f"{kept} in all, so evaluation can try other thresholds.</p>")


def index_page(root: Path, segments: Sequence[tuple[Path, Manifest]],
               runs: Sequence[RunRecord]) -> Path:
    """Write `index.html` at the top of a run: the pooled verdict, then one row per segment (from
    its manifest, and its eval.json for AP), then what failed and the pooled evaluation."""
    headers = ["segment", "status", "images", "boxes drawn", "threshold", "AP50", "images/s", "model"]
    rows = []
    total_drawn: int | None = 0
    thresholds = set()
    for directory, manifest in segments:
        name = manifest.segment_context_name
        link = directory.relative_to(root).as_posix()
        page = f"{link}/{REPORT_FILE}" if (directory / REPORT_FILE).is_file() else f"{link}/manifest.json"
        status = manifest.status
        css = status if status.replace("_", "").isalpha() else "unknown"
        drawn = drawn_count(directory, manifest)
        total_drawn = None if drawn is None or total_drawn is None else total_drawn + drawn
        if manifest.threshold_recorded:
            thresholds.add(manifest.threshold)
        rows.append([Markup(f"<a href='{safe.href(page)}'>{safe.text(name)}</a>"),
                     Markup(f"<span class='status-{safe.text(css)}'>{safe.text(status)}</span>"),
                     _count_cell(manifest.counts.images_processed), "-" if drawn is None else drawn,
                     threshold_text(manifest.threshold if manifest.threshold_recorded else None), _segment_ap(directory),
                     _num(manifest.timings.images_per_second), _model_cell(manifest.model)])
    sections: list[tuple[str, str, str]] = [
        ("segments", "Segments", "<p class='muted'>Boxes drawn: those scoring at least the segment's threshold, as "
         "its frames and page show them (detections.parquet keeps lower scores too, for evaluation). AP50: the mean "
         "over Waymo types (LEVEL_2). Click a column title to sort.</p>" + _table(headers, rows, css="sortable"))]
    for run in runs:
        failed = run.failed()
        if failed:
            sections.append((f"failed-{len(sections)}", f"Inputs that failed ({len(failed)})",
                             _table(["input", "error"], [[s.get("path"), s.get("error")] for s in failed])))
    evaluation = read_eval_record(root)
    if evaluation is not None:
        failing = where_and_why(evaluation, root) + where_it_fails(root, segments, evaluation.threshold)
        if failing:
            sections.append(("where-it-fails", "Where it fails", failing))
        sections.append(("evaluation", "Against Waymo's labels, pooled",
                         evaluation_section(evaluation, root, heading=False, failures=False)))
    images = sum(m.counts.images_processed or 0 for _, m in segments)
    threshold = next(iter(thresholds)) if len(thresholds) == 1 else None
    lead = (f"{counted(len(segments), 'segment')}, {counted(images, 'image')}; "
            f"{drawn_phrase(total_drawn, threshold)}{'' if len(thresholds) < 2 else ' (at each one' + chr(39) + 's threshold)'}."
            + "".join(f" {_run_line(run, len(runs))}" for run in runs))
    matches = gallery.read_matches(root, None) if evaluation is not None else None
    outcomes = (gallery.outcomes(matches, evaluation.threshold)
                if matches is not None and evaluation is not None and evaluation.threshold is not None else None)
    top = [f"<h1>detect run: {counted(len(segments), 'segment')}</h1>",
           headline(evaluation, outcomes, lead, None if evaluation is None else evaluation.tracking)
           if evaluation is not None else f"<section class='headline' id='headline'><p class='lead'>{lead}</p></section>",
           contents([(anchor, title) for anchor, title, _ in sections])]
    body = [f"<h2 id='{anchor}'>{safe.text(title)}</h2>{html}" for anchor, title, html in sections]
    return _write(root / INDEX_FILE, f"detect: {counted(len(segments), 'segment')}", top + body, script=SORT_SCRIPT)


def where_it_fails(root: Path, segments: Sequence[tuple[Path, Manifest]], threshold: float | None) -> str:
    """The worst moments of every segment of the run (the index's "Where it fails" ends with them)."""
    notes: list[str] = []
    worst = worst_moments.section(root, segments, threshold, real_folder(root / ASSETS), notes)
    parts = [f"<h3 id='worst-moments'>The worst moments</h3>{worst}" if worst else "",
             *(f"<p class='muted'>{safe.text(note)}</p>" for note in notes)]
    return "".join(parts)


def _run_line(run: RunRecord, runs: int) -> str:
    this = run.tally
    tally = ", ".join(f"{safe.count_text(this[k])} {what}" for k, what in (
        ("done", "done"), ("done_with_failures", "with failed frames"), ("skipped", "skipped"), ("failed", "failed")))
    return (f"Last run{'' if runs == 1 else ' (' + safe.text(run.name) + ')'}: {tally}; "
            f"engine {safe.text(run.engine)}.")


def _model_cell(model: ModelFacts) -> Any:
    """The model's short name (its full description on hover), else its description, else "-"."""
    name = model.short_name or model.description
    if not name:
        return "-"
    hover = model.description or name
    return Markup(f"<span title='{safe.text(hover)}'>{safe.text(name)}</span>")


def _facts(data: SegmentData) -> str:
    m = data.manifest
    model, source, counts = m.model, m.input, m.counts
    dropped = source.labels_dropped
    facts = {
        "status": m.data.get("status"),
        "input": f"{source.path} ({source.format})",
        "images": f"{safe.count_text(counts.images_processed)} processed, "
                  f"{safe.count_text(counts.images_failed)} failed",
        "model": model.description or None,
        "model knows": _classes(model.knows_classes),
        "drawn": f"boxes scoring at least {data.threshold:g} (the drawing threshold)",
        "in the table": f"boxes scoring at least {safe.number(model.score_floor, 2)} (the score floor, for evaluation)",
        "labels": str(source.ground_truth or "none")
        + (f" ({counted(dropped, 'unusable row')} dropped)" if dropped else ""),
        "engine": m.engine_name,
        "finished": m.data.get("finished_at"),
    }
    return _facts_table(facts)


def _classes(knows: tuple[int, ...] | None) -> str:
    """"80 COCO classes" in the table, or the names when few (the manifest lists them all)."""
    return COCO_LABEL_MAP if knows is None else describe_classes(list(knows))


def _facts_table(facts: Mapping[str, object]) -> str:
    rows = "".join(f"<tr><td>{safe.text(k)}</td><td>{safe.text(v)}</td></tr>" for k, v in facts.items() if v is not None)
    return f"<table class='facts'><tbody>{rows}</tbody></table>"


def _segment_ap(directory: Path) -> str:
    evaluation = read_eval_record(directory)
    overall = None if evaluation is None else evaluation.overall("LEVEL_2")
    return _num(None if overall is None else overall.get("ap50"), 3)


def _count_of(value: Any, word: str) -> str:
    """A count from a results file with its noun, or "-" and the plural when it is not a count."""
    checked = safe.count(value)
    return f"- {word}s" if checked is None else counted(checked, word)


def _if_file(directory: Path, name: str) -> str:
    return f", <a href='{safe.href(name)}'>{safe.text(name)}</a>" if (directory / name).is_file() else ""


def _write(path: Path, title: str, sections: list[str], script: str = "") -> Path:
    """The page, with the galleries' filter script beside its pictures when it has a gallery to filter."""
    files = ([f"{ASSETS}/{filters.write_script(real_folder(path.parent / ASSETS)).name}"]
             if any(filters.FORM in section for section in sections) else [])
    return write_page(path, title, sections, STYLE, script, files)
