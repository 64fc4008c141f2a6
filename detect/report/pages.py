"""`report.html` per segment and `index.html` per run: static pages, relative links only.

Everything a page shows sits beside it (plots and thumbnails in `report/`, the animations and
frames the run wrote), so a results directory can be copied, zipped or served by any static web
server and still work. Nothing is fetched from the internet; the index's column sorting is a few
lines of plain JavaScript, and the page reads the same without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from detect.model.labels import describe_classes
from detect.report import plots, safe
from detect.report.data import MOSAIC, SegmentData
from detect.report.staleness import evaluation_notice
from detect.sinks.atomic import atomic_path, atomic_write_bytes
from detect.sinks.layout import EVAL_FILE, PR_CURVES_FILE, real_file, real_folder

REPORT_FILE, INDEX_FILE, ASSETS = "report.html", "index.html", "report"
THUMBNAILS, THUMB_WIDTH = 8, 360

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; word-break: break-all; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; display: block; max-width: 100%; overflow-x: auto; } th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f5f5f5; cursor: default; }
th.sortable { cursor: pointer; } .facts td { text-align: left; } .facts td + td { overflow-wrap: anywhere; } .facts td:first-child { white-space: nowrap; } .muted { color: #777; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(360px, 100%), 1fr)); gap: 12px; }
.grid figure { margin: 0; } figcaption { font-size: 13px; color: #555; } img, video { max-width: 100%; }
.status-failed, .status-done_with_failures, .status-complete_with_failures { color: #b00020; font-weight: 600; }
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
    counts = safe.mapping(manifest.get("counts"))
    timings = safe.mapping(manifest.get("timings"))
    sections = [f"<h1>{safe.text(data.name)}</h1>", _facts(data)]
    mosaic = data.animation(MOSAIC)
    if mosaic:
        sections.append(f"<h2>All cameras</h2>{_media(mosaic, 'all cameras, tiled as the car sees them', _gif(data, MOSAIC))}")
    cameras = [(c, data.animation(c)) for c in data.cameras]
    if any(path for _, path in cameras):
        figures = "".join(f"<figure>{_media(path, c, _gif(data, c))}<figcaption>{safe.text(c)}</figcaption></figure>"
                          for c, path in cameras if path)
        sections.append(f"<h2>Each camera</h2><div class='grid'>{figures}</div>")
    drawn = data.drawn
    if not drawn.empty:
        plots.timeline(drawn, sorted(set(drawn["camera"]), key=data.cameras.index), assets / "timeline.png")
        sections.append(f"<h2>Detections over time</h2>{_img(f'{ASSETS}/timeline.png', 'boxes drawn per frame and class')}")
    if not data.detections.empty:
        plots.scores(data.detections, data.threshold, assets / "scores.png")
        sections.append(f"<h2>Scores</h2>{_img(f'{ASSETS}/scores.png', 'score distribution per class')}")
        table = data.counts()
        sections.append(f"<h2>Boxes drawn, per camera and class</h2><p class='muted'>score &ge; {data.threshold:g}; "
                        f"the table keeps {len(data.detections)} boxes down to the score floor.</p>"
                        + _table(["camera", *table.columns], [[i, *row] for i, row in zip(table.index, table.values.tolist(), strict=True)],
                                 css="counts"))
    else:
        sections.append("<h2>Detections</h2><p>No boxes in this segment.</p>")
    thumbs = _thumbnails(data, assets)
    if thumbs:
        sections.append(f"<h2>Frames with the most boxes</h2><div class='grid'>{thumbs}</div>")
    if data.evaluation:
        sections.append(_evaluation(data.evaluation, directory))
    stage_ms = {str(k): float(v) for k, v in safe.mapping(timings.get("stage_ms_per_image")).items()
                if safe.number(v) != "-"}
    if stage_ms:
        plots.stages(stage_ms, assets / "stages.png")
        sections.append(f"<h2>Time</h2><p>{_num(timings.get('images_per_second'))} images/s over "
                        f"{_num(timings.get('pipeline_s'))} s ({_num(timings.get('total_s'))} s in all).</p>"
                        + _img(f"{ASSETS}/stages.png", "milliseconds per image by stage"))
    failures = [f for f in safe.items(manifest.get("failures")) if isinstance(f, dict)]
    if failures:
        rows = [[f.get("camera"), f.get("key.frame_timestamp_micros"), f.get("stage"), f.get("error")] for f in failures]
        sections.append(f"<h2>Failed frames ({len(failures)})</h2>" + _table(["camera", "timestamp", "stage", "error"], rows))
    sections.append("<h2>Versions</h2>" + _facts_table(safe.mapping(manifest.get("versions"))))
    sections.append(f"<p class='muted'>Files: <a href='{safe.href('manifest.json')}'>manifest.json</a>, "
                    f"<a href='{safe.href('detections.parquet')}'>detections.parquet</a>"
                    f"{_if_file(directory, 'ground_truth.parquet')}{_if_file(directory, 'eval.json')}. "
                    f"{safe.count_text(counts.get('images_processed', 0))} images processed.</p>")
    return _write(directory / REPORT_FILE, f"detect: {data.name}", sections)


def index_page(root: Path, segments: Sequence[tuple[Path, dict[str, Any]]],
               runs: Sequence[tuple[str, dict[str, Any]]]) -> Path:
    """Write `index.html` at the top of a run: one row per segment, from its manifest only."""
    def by_label(manifest: dict[str, Any]) -> dict[str, Any]:
        return safe.mapping(safe.mapping(manifest.get("counts")).get("detections_by_label"))

    labels = sorted({str(label) for _, m in segments for label in by_label(m)},
                    key=lambda name: -sum(safe.count(by_label(m).get(name)) or 0 for _, m in segments))[:6]
    headers = ["segment", "status", "images", "failed", "boxes", *labels, "AP50", "images/s"]
    rows = []
    for directory, manifest in segments:
        counts = safe.mapping(manifest.get("counts"))
        name = str(manifest.get("segment_context_name", directory.name))
        link = directory.relative_to(root).as_posix()
        page = f"{link}/{REPORT_FILE}" if (directory / REPORT_FILE).is_file() else f"{link}/manifest.json"
        status = str(manifest.get("status", "?"))
        css = status if status.replace("_", "").isalpha() else "unknown"
        rows.append([Markup(f"<a href='{safe.href(page)}'>{safe.text(name)}</a>"),
                     Markup(f"<span class='status-{safe.text(css)}'>{safe.text(status)}</span>"),
                     *[_count_cell(counts.get(k)) for k in ("images_processed", "images_failed", "detections")],
                     *[_count_cell(by_label(manifest).get(label, 0)) for label in labels], _segment_ap(directory),
                     _num(safe.mapping(manifest.get("timings")).get("images_per_second"))])
    sections = [f"<h1>detect run: {len(segments)} segment{'s' if len(segments) != 1 else ''}</h1>"]
    for name, one in runs:
        this = safe.mapping(one.get("this_run"))
        tally = ", ".join(f"{safe.count_text(this.get(k, 0))} {what}" for k, what in (
            ("done", "done"), ("done_with_failures", "with failed frames"), ("skipped", "skipped"), ("failed", "failed")))
        sections.append(f"<p>Last run{'' if len(runs) == 1 else ' (' + safe.text(name) + ')'}: {tally}; "
                        f"engine {safe.text(one.get('engine'))}.</p>")
        entries = safe.items(one.get("segments"))
        failed = [s for s in entries if isinstance(s, dict) and s.get("status") == "failed"]
        if failed:
            sections.append(f"<h2>Inputs that failed ({len(failed)})</h2>"
                            + _table(["input", "error"], [[s.get("path"), s.get("error")] for s in failed]))
    evaluation = _json_object(root / EVAL_FILE)
    if evaluation:
        sections.append(_evaluation(evaluation, root))
    sections.append("<h2>Segments</h2><p class='muted'>Click a column title to sort.</p>"
                    + _table(headers, rows, css="sortable"))
    return _write(root / INDEX_FILE, f"detect: {len(segments)} segments", sections, script=SORT_SCRIPT)


def _facts(data: SegmentData) -> str:
    m = data.manifest
    model, source, counts = safe.mapping(m.get("model")), safe.mapping(m.get("input")), safe.mapping(m.get("counts"))
    knows = model.get("knows_classes")
    dropped = safe.count(source.get("labels_dropped"))
    facts = {
        "status": m.get("status"),
        "input": f"{source.get('path')} ({source.get('format')})",
        "images": f"{safe.count_text(counts.get('images_processed', 0))} processed, "
                  f"{safe.count_text(counts.get('images_failed', 0))} failed",
        "model": model.get("description"),
        "model knows": _classes(knows),
        "threshold": f"{data.threshold:g} drawn, {safe.number(model.get('score_floor'), 2)} kept",
        "labels": (source.get("ground_truth") or "none") + (f" ({dropped} unusable rows dropped)" if dropped else ""),
        "engine": safe.mapping(m.get("engine")).get("name"),
        "finished": m.get("finished_at"),
    }
    return _facts_table(facts)


def _classes(knows: Any) -> str:
    """"80 COCO classes" in the table, or the names when few (the manifest lists them all)."""
    if not isinstance(knows, list):
        return str(knows)
    try:
        ids = [int(c) for c in knows]
    except (TypeError, ValueError):
        return "unknown"
    return describe_classes(ids)


def _facts_table(facts: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{safe.text(k)}</td><td>{safe.text(v)}</td></tr>" for k, v in facts.items() if v is not None)
    return f"<table class='facts'><tbody>{rows}</tbody></table>"


def _evaluation(report: dict[str, Any], directory: Path) -> str:
    headers = ["type", "level", "labels", "dets", "AP50", "AP", "AR100", "P", "R", "F1"]
    rows = [[r.get("name"), level, _count_cell(r.get("labels")), _count_cell(r.get("detections")),
             *[_num(r.get(k), 3) for k in ("ap50", "ap", "ar100", "precision", "recall", "f1")]]
            for level, level_rows in safe.mapping(report.get("levels")).items() if isinstance(level_rows, list)
            for r in level_rows if isinstance(r, dict)]
    curves = _img(PR_CURVES_FILE, "precision-recall curves") if (directory / PR_CURVES_FILE).is_file() else ""
    library = safe.mapping(report.get("library"))
    types = safe.items(report.get("types"))
    dropped = safe.count(report.get("labels_dropped"))
    note = f" {dropped} unusable label rows were dropped." if dropped else ""
    stale = evaluation_notice(report, directory)
    return (f"<h2>Against Waymo's labels</h2>{f'<p><strong>{safe.text(stale)}</strong></p>' if stale else ''}"
            f"<p class='muted'>{safe.text(library.get('name'))} "
            f"{safe.text(library.get('version'))}; types {safe.text(', '.join(str(t) for t in types))}; "
            f"P, R, F1 at the drawing threshold {_num(report.get('threshold'), 2)} and IoU 0.5.{note}</p>"
            + _table(headers, rows) + curves)


def _json_object(path: Path) -> dict[str, Any] | None:
    """A results file holding a JSON object, or None (missing, unreadable, or not an object)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _segment_ap(directory: Path) -> str:
    report = _json_object(directory / EVAL_FILE) or {}
    rows = safe.mapping(report.get("levels")).get("LEVEL_2")
    overall = rows[-1] if isinstance(rows, list) and rows else None
    return _num(overall.get("ap50") if isinstance(overall, dict) else None, 3)


def _count_cell(value: Any) -> Any:
    """A count from a results file: the number when it is one, else "-" (escaped as text)."""
    checked = safe.count(value)
    return "-" if checked is None else checked


def _thumbnails(data: SegmentData, assets: Path) -> str:
    figures = []
    for camera, ts, boxes, frame in data.busiest_frames(THUMBNAILS):
        thumb = assets / f"thumb_{camera}_{ts}.jpg"
        with Image.open(frame) as opened:
            small = opened.convert("RGB")
        small.thumbnail((THUMB_WIDTH, THUMB_WIDTH))
        with atomic_path(thumb) as tmp:
            small.save(tmp, "JPEG", quality=85)
        link = frame.relative_to(data.directory).as_posix()
        figures.append(f"<figure><a href='{safe.href(link)}'>{_img(f'{ASSETS}/{thumb.name}', f'{camera} at {ts}')}</a>"
                       f"<figcaption>{safe.text(camera)} {ts}: {boxes} box{'es' if boxes != 1 else ''}</figcaption></figure>")
    return "".join(figures)


def _media(path: str, alt: str, poster: str | None = None) -> str:
    """An MP4 in a <video> (its GIF, when there is one, as the picture before it plays), else an <img>."""
    if path.endswith(".mp4"):
        shown = f" poster='{safe.href(poster)}'" if poster else ""
        return (f"<video src='{safe.href(path)}'{shown} controls loop muted playsinline preload='metadata' "
                f"title='{safe.text(alt)}'></video>")
    return _img(path, alt)


def _gif(data: SegmentData, name: str) -> str | None:
    return f"{name}.gif" if (data.directory / f"{name}.gif").is_file() else None


def _img(path: str, alt: str) -> str:
    return f"<img src='{safe.href(path)}' alt='{safe.text(alt)}'>"


def _if_file(directory: Path, name: str) -> str:
    return f", <a href='{safe.href(name)}'>{safe.text(name)}</a>" if (directory / name).is_file() else ""


class Markup(str):
    """HTML this module built itself from escaped parts; every other cell value is escaped."""


def _table(headers: Iterable[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    head = "".join(f"<th>{safe.text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table class='{css}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if isinstance(value, Markup):
        return f"<td>{value}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and safe.number(value) != "-":
        return f"<td data-value='{safe.text(value)}'>{safe.text(value)}</td>"
    return f"<td>{safe.text(value)}</td>"


def _num(value: Any, digits: int = 1) -> str:
    return safe.number(value, digits)


def _write(path: Path, title: str, sections: list[str], script: str = "") -> Path:
    policy = safe.content_security_policy(script, STYLE)
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\"><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{safe.text(title)}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(sections)}{f'<script>{script}</script>' if script else ''}</body></html>\n")
    return atomic_write_bytes(real_file(path), page.encode())
