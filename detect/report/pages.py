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

from detect.core.atomic import atomic_path
from detect.core.files import UnreadableFileError
from detect.model.coco_classes import describe_classes
from detect.model.facts import COCO_LABEL_MAP, ModelFacts
from detect.report import charts, safe
from detect.report.data import MOSAIC, SegmentData
from detect.report.evaluation import evaluation_section
from detect.report.gallery import note_picture
from detect.report.html import Markup, write_page
from detect.report.html import count_cell as _count_cell
from detect.report.html import img as _img
from detect.report.html import num as _num
from detect.report.html import table as _table
from detect.sinks.eval_record import read_eval_record
from detect.sinks.frames import read_frame
from detect.sinks.layout import real_folder
from detect.sinks.results_folder import Manifest
from detect.sinks.run_record import RunRecord

REPORT_FILE, INDEX_FILE, ASSETS = "report.html", "index.html", "report"
THUMBNAILS, THUMB_WIDTH = 8, 360

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; word-break: break-all; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; display: block; max-width: 100%; overflow-x: auto; } \
th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f5f5f5; cursor: default; }
th.sortable { cursor: pointer; } .facts td { text-align: left; } .facts td + td { overflow-wrap: anywhere; } \
.facts td:first-child { white-space: nowrap; } .muted { color: #777; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(360px, 100%), 1fr)); gap: 12px; }
.grid figure { margin: 0; } figcaption { font-size: 13px; color: #555; } img, video { max-width: 100%; }
.status-failed, .status-done_with_failures, .status-complete_with_failures { color: #b00020; font-weight: 600; }
h3 { font-size: 16px; margin-top: 22px; } .grid.crops { grid-template-columns: repeat(auto-fill, minmax(min(240px, 100%), 1fr)); }
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
    """Write `report.html` (and its plots and thumbnails in `report/`) into the segment directory."""
    directory, manifest = data.directory, data.manifest
    assets = real_folder(directory / ASSETS)
    counts = manifest.section("counts")
    timings = manifest.section("timings")
    sections = [f"<h1>{safe.text(data.name)}</h1>", _facts(data)]
    if data.animation(MOSAIC):
        sections.append(f"<h2>All cameras</h2>{_animation(data, MOSAIC, 'all cameras, tiled as the car sees them')}")
    cameras = [c for c in data.cameras if data.animation(c)]
    if cameras:
        figures = "".join(f"<figure>{_animation(data, c, c)}<figcaption>{safe.text(c)}</figcaption></figure>"
                          for c in cameras)
        sections.append(f"<h2>Each camera</h2><div class='grid'>{figures}</div>")
    sections.append(_timeline(data, assets))
    if not data.detections.empty:
        charts.scores(data.detections, data.threshold, assets / "scores.png")
        sections.append(f"<h2>Scores</h2>{_img(f'{ASSETS}/scores.png', 'score distribution per class')}")
        table = data.counts()
        sections.append("<h2>Boxes drawn, per camera and class</h2>" + _drawn_note(data)
                        + _table(["camera", *table.columns],
                                 [[i, *row] for i, row in zip(table.index, table.values.tolist(), strict=True)], css="counts"))
    else:
        sections.append("<h2>Detections</h2><p>No boxes in this segment.</p>")
    thumbs = _thumbnails(data, assets)
    if thumbs:
        sections.append(f"<h2>Frames with the most boxes</h2><div class='grid'>{thumbs}</div>")
    if data.evaluation is not None:
        sections.append(evaluation_section(data.evaluation, directory, data.name, assets, data.notes))
    stage_ms = {str(k): float(v) for k, v in safe.mapping(timings.get("stage_ms_per_image")).items()
                if isinstance(v, (int, float)) and safe.number(v) != "-"}
    if stage_ms:
        charts.stages(stage_ms, assets / "stages.png")
        sections.append(f"<h2>Time</h2><p>{_num(timings.get('images_per_second'))} images/s over "
                        f"{_num(timings.get('pipeline_s'))} s ({_num(timings.get('total_s'))} s in all).</p>"
                        + _img(f"{ASSETS}/stages.png", "milliseconds per image by stage"))
    failures = manifest.failures
    if failures:
        rows = [[f.get("camera"), f.get("key.frame_timestamp_micros"), f.get("stage"), f.get("error")] for f in failures]
        sections.append(f"<h2>Failed frames ({len(failures)})</h2>" + _table(["camera", "timestamp", "stage", "error"], rows))
    sections.append("<h2>Versions</h2>" + _facts_table(manifest.section("versions")))
    sections.append(f"<p class='muted'>Files: <a href='{safe.href('manifest.json')}'>manifest.json</a>, "
                    f"<a href='{safe.href('detections.parquet')}'>detections.parquet</a>"
                    f"{_if_file(directory, 'ground_truth.parquet')}{_if_file(directory, 'eval.json')}. "
                    f"{_count_of(counts.get('images_processed', 0), 'image')} processed.</p>")
    return _write(directory / REPORT_FILE, f"detect: {data.name}", sections)


def _timeline(data: SegmentData, assets: Path) -> str:
    """The boxes-per-frame plot; one frame has no time to plot, so a sentence says so."""
    frames = len(data.timestamps)
    if frames == 0:
        return ""
    if frames == 1:
        drawn = len(data.drawn)
        return ("<h2>Detections over time</h2><p>One frame, so nothing to plot over time: "
                f"{_plural(drawn, 'box')} drawn on its {_plural(len(data.images), 'image')}"
                f"{' (per camera and class in the table below)' if drawn else ''}.</p>")
    charts.timeline(data.boxes_per_image(), assets / "timeline.png")
    return f"<h2>Detections over time</h2>{_img(f'{ASSETS}/timeline.png', 'boxes drawn per frame and class')}"


def _drawn_note(data: SegmentData) -> str:
    """What the frames show and what the table keeps, in plain words."""
    drawn, kept = len(data.drawn), len(data.detections)
    floor = safe.number(data.manifest.model.score_floor, 2)
    below = (f"{_plural(kept - drawn, 'more box', 'more boxes')} down to the score floor {safe.text(floor)}"
             if floor != "-" else f"{_plural(kept - drawn, 'more box', 'more boxes')} below it")
    return (f"<p class='muted'>Drawn on the frames: the {_plural(drawn, 'box', 'boxes')} scoring at least "
            f"{data.threshold:g} (the drawing threshold). detections.parquet also keeps {below}, "
            f"{kept} in all, so evaluation can try other thresholds.</p>")


def index_page(root: Path, segments: Sequence[tuple[Path, Manifest]],
               runs: Sequence[RunRecord]) -> Path:
    """Write `index.html` at the top of a run: one row per segment, from its manifest only."""
    def by_label(manifest: Manifest) -> Mapping[str, object]:
        return safe.mapping(manifest.section("counts").get("detections_by_label"))

    labels = sorted({str(label) for _, m in segments for label in by_label(m)},
                    key=lambda name: -sum(safe.count(by_label(m).get(name)) or 0 for _, m in segments))[:6]
    headers = ["segment", "status", "model", "threshold", "images", "failed", "boxes", *labels, "AP50", "images/s"]
    rows = []
    for directory, manifest in segments:
        counts = manifest.section("counts")
        name = manifest.segment_context_name
        link = directory.relative_to(root).as_posix()
        page = f"{link}/{REPORT_FILE}" if (directory / REPORT_FILE).is_file() else f"{link}/manifest.json"
        status = manifest.status
        css = status if status.replace("_", "").isalpha() else "unknown"
        rows.append([Markup(f"<a href='{safe.href(page)}'>{safe.text(name)}</a>"),
                     Markup(f"<span class='status-{safe.text(css)}'>{safe.text(status)}</span>"),
                     _model_cell(manifest.model), _num(manifest.threshold if manifest.threshold_recorded else None, 2),
                     *[_count_cell(counts.get(k)) for k in ("images_processed", "images_failed", "detections")],
                     *[_count_cell(by_label(manifest).get(label, 0)) for label in labels], _segment_ap(directory),
                     _num(manifest.section("timings").get("images_per_second"))])
    sections = [f"<h1>detect run: {_plural(len(segments), 'segment')}</h1>"]
    for run in runs:
        this = run.section("this_run")
        tally = ", ".join(f"{safe.count_text(this.get(k, 0))} {what}" for k, what in (
            ("done", "done"), ("done_with_failures", "with failed frames"), ("skipped", "skipped"), ("failed", "failed")))
        sections.append(f"<p>Last run{'' if len(runs) == 1 else ' (' + safe.text(run.name) + ')'}: {tally}; "
                        f"engine {safe.text(run.data.get('engine'))}.</p>")
        failed = run.failed()
        if failed:
            sections.append(f"<h2>Inputs that failed ({len(failed)})</h2>"
                            + _table(["input", "error"], [[s.get("path"), s.get("error")] for s in failed]))
    evaluation = read_eval_record(root)
    if evaluation is not None:
        sections.append(evaluation_section(evaluation, root))
    sections.append("<h2>Segments</h2><p class='muted'>Threshold: boxes scoring at least this are drawn. "
                    "Boxes and the per-class counts are every box in the table, down to the score floor. "
                    "Click a column title to sort.</p>" + _table(headers, rows, css="sortable"))
    return _write(root / INDEX_FILE, f"detect: {_plural(len(segments), 'segment')}", sections, script=SORT_SCRIPT)


def _model_cell(model: ModelFacts) -> Any:
    """The model's short name (its full description on hover), else its description, else "-"."""
    name = model.short_name or model.description
    if not name:
        return "-"
    hover = model.description or name
    return Markup(f"<span title='{safe.text(hover)}'>{safe.text(name)}</span>")


def _facts(data: SegmentData) -> str:
    m = data.manifest
    model, source, counts = m.model, m.section("input"), m.section("counts")
    dropped = safe.count(source.get("labels_dropped"))
    facts = {
        "status": m.data.get("status"),
        "input": f"{source.get('path')} ({source.get('format')})",
        "images": f"{safe.count_text(counts.get('images_processed', 0))} processed, "
                  f"{safe.count_text(counts.get('images_failed', 0))} failed",
        "model": model.description or None,
        "model knows": _classes(model.knows_classes),
        "drawn": f"boxes scoring at least {data.threshold:g} (the drawing threshold)",
        "in the table": f"boxes scoring at least {safe.number(model.score_floor, 2)} (the score floor, for evaluation)",
        "labels": str(source.get("ground_truth") or "none")
        + (f" ({_plural(dropped, 'unusable row')} dropped)" if dropped else ""),
        "engine": m.section("engine").get("name"),
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


def _thumbnails(data: SegmentData, assets: Path) -> str:
    figures = []
    for camera, ts, boxes, frame in data.busiest_frames(THUMBNAILS):
        thumb = assets / f"thumb_{camera}_{ts}.jpg"
        try:
            small = read_frame(frame)
        except UnreadableFileError as err:  # a link, FIFO, truncated or oversized frame: the page still builds
            note_picture(data.notes, err)
            continue
        small.thumbnail((THUMB_WIDTH, THUMB_WIDTH))
        with atomic_path(thumb) as tmp:
            small.save(tmp, "JPEG", quality=85)
        link = frame.relative_to(data.directory).as_posix()
        figures.append(f"<figure><a href='{safe.href(link)}'>{_img(f'{ASSETS}/{thumb.name}', f'{camera} at {ts}')}</a>"
                       f"<figcaption>{safe.text(camera)} {ts}: {_plural(boxes, 'box')}</figcaption></figure>")
    return "".join(figures)


def _animation(data: SegmentData, name: str, alt: str) -> str:
    """A camera's (or the mosaic's) animation; one frame is a still: an image, no player controls."""
    path = data.animation(name)
    gif = _gif(data, name)
    if path is None:
        return ""
    if data.frame_count(None if name == MOSAIC else name) != 1:
        return _media(path, alt, gif)
    if gif:
        return f"<a href='{safe.href(gif)}'>{_img(gif, alt)}</a>"
    # An MP4 alone (--no-gif): its only frame, with nothing drawn over it.
    return f"<video src='{safe.href(path)}' muted playsinline preload='auto' title='{safe.text(alt)}'></video>"


def _media(path: str, alt: str, poster: str | None = None) -> str:
    """An MP4 in a <video> (its GIF, when there is one, as the picture before it plays), else an <img>.

    The video plays by itself, muted and looped like the GIF: the browser hides its controls while
    it plays (they come back on hover), so they do not sit over a paused picture.
    """
    if path.endswith(".mp4"):
        shown = f" poster='{safe.href(poster)}'" if poster else ""
        return (f"<video src='{safe.href(path)}'{shown} controls autoplay loop muted playsinline preload='metadata' "
                f"title='{safe.text(alt)}'></video>")
    return _img(path, alt)


def _plural(count: int, word: str, plural: str | None = None) -> str:
    """"1 box", "3 boxes", "1 segment", "2 segments"."""
    return f"{count} {word if count == 1 else plural or (word + 'es' if word.endswith(('s', 'x')) else word + 's')}"


def _count_of(value: Any, word: str) -> str:
    """A count from a results file with its noun, or "-" and the plural when it is not a count."""
    checked = safe.count(value)
    return f"- {word}s" if checked is None else _plural(checked, word)


def _gif(data: SegmentData, name: str) -> str | None:
    return f"{name}.gif" if (data.directory / f"{name}.gif").is_file() else None


def _if_file(directory: Path, name: str) -> str:
    return f", <a href='{safe.href(name)}'>{safe.text(name)}</a>" if (directory / name).is_file() else ""


def _write(path: Path, title: str, sections: list[str], script: str = "") -> Path:
    return write_page(path, title, sections, STYLE, script)
