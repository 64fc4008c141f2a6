"""`report.html` per segment and `index.html` per run: static pages, relative links only.

Everything a page shows sits beside it (plots and thumbnails in `report/`, the animations and
frames the run wrote), so a results directory can be copied, zipped or served by any static web
server and still work. Nothing is fetched from the internet; the index's column sorting is a few
lines of plain JavaScript, and the page reads the same without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from detect.model.labels import describe_classes
from detect.report import plots
from detect.report.data import MOSAIC, SegmentData
from detect.sinks.atomic import atomic_path, atomic_write_bytes
from detect.sinks.layout import EVAL_FILE, PR_CURVES_FILE

REPORT_FILE, INDEX_FILE, ASSETS = "report.html", "index.html", "report"
THUMBNAILS, THUMB_WIDTH = 8, 360

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; word-break: break-all; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; } th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f5f5f5; cursor: default; }
th.sortable { cursor: pointer; } .facts td { text-align: left; } .muted { color: #777; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 12px; }
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
    assets = directory / ASSETS
    assets.mkdir(exist_ok=True)
    counts = manifest.get("counts", {})
    timings = manifest.get("timings", {})
    sections = [f"<h1>{escape(data.name)}</h1>", _facts(data)]
    mosaic = data.animation(MOSAIC)
    if mosaic:
        sections.append(f"<h2>All cameras</h2>{_media(mosaic, 'all cameras, tiled as the car sees them', _gif(data, MOSAIC))}")
    cameras = [(c, data.animation(c)) for c in data.cameras]
    if any(path for _, path in cameras):
        figures = "".join(f"<figure>{_media(path, c, _gif(data, c))}<figcaption>{escape(c)}</figcaption></figure>"
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
    stage_ms = timings.get("stage_ms_per_image") or {}
    if stage_ms:
        plots.stages(stage_ms, assets / "stages.png")
        sections.append(f"<h2>Time</h2><p>{_num(timings.get('images_per_second'))} images/s over "
                        f"{_num(timings.get('pipeline_s'))} s ({_num(timings.get('total_s'))} s in all).</p>"
                        + _img(f"{ASSETS}/stages.png", "milliseconds per image by stage"))
    failures = manifest.get("failures", [])
    if failures:
        rows = [[f.get("camera"), f.get("key.frame_timestamp_micros"), f.get("stage"), f.get("error")] for f in failures]
        sections.append(f"<h2>Failed frames ({len(failures)})</h2>" + _table(["camera", "timestamp", "stage", "error"], rows))
    sections.append("<h2>Versions</h2>" + _facts_table(manifest.get("versions", {})))
    sections.append(f"<p class='muted'>Files: <a href='manifest.json'>manifest.json</a>, <a href='detections.parquet'>"
                    f"detections.parquet</a>{_if_file(directory, 'ground_truth.parquet')}{_if_file(directory, 'eval.json')}. "
                    f"{counts.get('images_processed', 0)} images processed.</p>")
    return _write(directory / REPORT_FILE, f"detect: {data.name}", sections)


def index_page(root: Path, segments: Sequence[tuple[Path, dict[str, Any]]], run: dict[str, Any] | None) -> Path:
    """Write `index.html` at the top of a run: one row per segment, from its manifest only."""
    labels = sorted({label for _, m in segments for label in m.get("counts", {}).get("detections_by_label", {})},
                    key=lambda name: -sum(m.get("counts", {}).get("detections_by_label", {}).get(name, 0) for _, m in segments))[:6]
    headers = ["segment", "status", "images", "failed", "boxes", *labels, "AP50", "images/s"]
    rows = []
    for directory, manifest in segments:
        counts, by_label = manifest.get("counts", {}), manifest.get("counts", {}).get("detections_by_label", {})
        name = str(manifest.get("segment_context_name", directory.name))
        link = directory.relative_to(root).as_posix()
        page = f"{link}/{REPORT_FILE}" if (directory / REPORT_FILE).is_file() else f"{link}/manifest.json"
        status = str(manifest.get("status", "?"))
        rows.append([Markup(f"<a href='{escape(page)}'>{escape(name)}</a>"),
                     Markup(f"<span class='status-{escape(status)}'>{escape(status)}</span>"),
                     counts.get("images_processed", 0), counts.get("images_failed", 0), counts.get("detections", 0),
                     *[by_label.get(label, 0) for label in labels], _segment_ap(directory),
                     _num(manifest.get("timings", {}).get("images_per_second"))])
    sections = [f"<h1>detect run: {len(segments)} segments</h1>"]
    if run:
        this = run.get("this_run", {})
        sections.append(f"<p>Last run: {this.get('done', 0)} done, {this.get('done_with_failures', 0)} with failed frames, "
                        f"{this.get('skipped', 0)} skipped, {this.get('failed', 0)} failed; engine {escape(str(run.get('engine')))}.</p>")
        failed = [s for s in run.get("segments", []) if s.get("status") == "failed"]
        if failed:
            sections.append(f"<h2>Inputs that failed ({len(failed)})</h2>"
                            + _table(["input", "error"], [[s.get("path"), s.get("error")] for s in failed]))
    if (root / EVAL_FILE).is_file():
        sections.append(_evaluation(json.loads((root / EVAL_FILE).read_text()), root))
    sections.append("<h2>Segments</h2><p class='muted'>Click a column title to sort.</p>"
                    + _table(headers, rows, css="sortable"))
    return _write(root / INDEX_FILE, f"detect: {len(segments)} segments", sections, script=SORT_SCRIPT)


def _facts(data: SegmentData) -> str:
    m = data.manifest
    model, source = m.get("model", {}), m.get("input", {})
    knows = model.get("knows_classes")
    facts = {
        "status": m.get("status"),
        "input": f"{source.get('path')} ({source.get('format')})",
        "images": f"{m.get('counts', {}).get('images_processed', 0)} processed, {m.get('counts', {}).get('images_failed', 0)} failed",
        "model": model.get("description"),
        "model knows": _classes(knows),
        "threshold": f"{data.threshold:g} drawn, {model.get('score_floor', '?')} kept",
        "labels": source.get("ground_truth") or "none",
        "engine": m.get("engine", {}).get("name"),
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
    rows = "".join(f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in facts.items() if v is not None)
    return f"<table class='facts'><tbody>{rows}</tbody></table>"


def _evaluation(report: dict[str, Any], directory: Path) -> str:
    headers = ["type", "level", "labels", "dets", "AP50", "AP", "AR100", "P", "R", "F1"]
    rows = [[r["name"], level, r["labels"], r["detections"], _num(r["ap50"], 3), _num(r["ap"], 3), _num(r["ar100"], 3),
             _num(r["precision"], 3), _num(r["recall"], 3), _num(r["f1"], 3)]
            for level, level_rows in report.get("levels", {}).items() for r in level_rows]
    curves = _img(PR_CURVES_FILE, "precision-recall curves") if (directory / PR_CURVES_FILE).is_file() else ""
    return (f"<h2>Against Waymo's labels</h2><p class='muted'>{escape(str(report.get('library', {}).get('name')))} "
            f"{escape(str(report.get('library', {}).get('version')))}; types {escape(', '.join(report.get('types', [])))}; "
            f"P, R, F1 at the drawing threshold {report.get('threshold')} and IoU 0.5.</p>" + _table(headers, rows) + curves)


def _segment_ap(directory: Path) -> str:
    try:
        report = json.loads((directory / EVAL_FILE).read_text())
        overall = report["levels"]["LEVEL_2"][-1]["ap50"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return "-"
    return _num(overall, 3)


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
        figures.append(f"<figure><a href='{escape(link)}'>{_img(f'{ASSETS}/{thumb.name}', f'{camera} at {ts}')}</a>"
                       f"<figcaption>{escape(camera)} {ts}: {boxes} box{'es' if boxes != 1 else ''}</figcaption></figure>")
    return "".join(figures)


def _media(path: str, alt: str, poster: str | None = None) -> str:
    """An MP4 in a <video> (its GIF, when there is one, as the picture before it plays), else an <img>."""
    if path.endswith(".mp4"):
        shown = f" poster='{escape(poster)}'" if poster else ""
        return (f"<video src='{escape(path)}'{shown} controls loop muted playsinline preload='metadata' "
                f"title='{escape(alt)}'></video>")
    return _img(path, alt)


def _gif(data: SegmentData, name: str) -> str | None:
    return f"{name}.gif" if (data.directory / f"{name}.gif").is_file() else None


def _img(path: str, alt: str) -> str:
    return f"<img src='{escape(path)}' alt='{escape(alt)}'>"


def _if_file(directory: Path, name: str) -> str:
    return f", <a href='{name}'>{name}</a>" if (directory / name).is_file() else ""


class Markup(str):
    """HTML this module built itself from escaped parts; every other cell value is escaped."""


def _table(headers: Iterable[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table class='{css}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    if isinstance(value, Markup):
        return f"<td>{value}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"<td data-value='{value}'>{value}</td>"
    return f"<td>{escape(str(value))}</td>"


def _num(value: Any, digits: int = 1) -> str:
    return "-" if value is None or (isinstance(value, float) and pd.isna(value)) else f"{float(value):.{digits}f}"


def _write(path: Path, title: str, sections: list[str], script: str = "") -> Path:
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{escape(title)}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(sections)}{f'<script>{script}</script>' if script else ''}</body></html>\n")
    return atomic_write_bytes(path, page.encode())
