"""The evaluation section of a report page: what the detector got right and wrong against Waymo's
labels. Numbers from `eval.json` (the library's), counts and galleries from `matches.parquet`
(the matching the frames are drawn with), so the page, the table and the pictures agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from detect.core.resample import BLOCK_SECONDS, MIN_BLOCKS
from detect.report import filters, gallery, safe
from detect.report.failures_section import failures_section
from detect.report.html import Markup, count_cell, img, num, table
from detect.report.staleness import evaluation_notice
from detect.results.eval_record import EvalRecord
from detect.results.layout import PR_CURVES_FILE, RANGE_BANDS_FILE, THRESHOLDS_FILE
from detect.results.source_images import NamedSources, SourceImages

SIZES = ("small", "medium", "large")
SLICE_DIMENSIONS = ("range", "time_of_day", "location", "weather")  # eval.json's `slices`
CROPS = ("Close-ups from the camera image, only the object in question drawn: a false alarm dashed vermillion, "
         "a missed label dotted yellow; in white the detection that matched it below the threshold, else the box "
         "that overlaps it most. Each links to its drawn frame.")
LEGEND = ("In the frames: <b>hits</b> solid sky blue; <b>false alarms</b> dashed vermillion, their label starting "
          "with FA; <b>missed labels</b> dotted yellow; boxes not evaluated (classes no Waymo type covers, types "
          "without labels) thin grey.")


def evaluation_section(report: EvalRecord, directory: Path, segment: str | None = None,
                       assets: Path | None = None, notes: list[str] | None = None, heading: bool = True,
                       sources: NamedSources = NamedSources(), failures: bool = True) -> str:
    """The section for `eval.json` in `directory` with the error counts of `matches.parquet` (of
    `segment`, or of the whole run for None); with `assets`, the galleries too (a frame they
    cannot read is a line in `notes`). Without `heading`, the page gives the section its title;
    without `failures`, the slices and error kinds are left to the page's "Where it fails"."""
    protocol = report.protocol
    library = report.library
    threshold = safe.number(report.data.get("threshold"), 2)
    dropped = safe.count(report.data.get("labels_dropped"))
    level_2 = report.rows("LEVEL_2")
    title = protocol.get("title") or "COCO"
    ious = ", ".join(f"{k} {safe.number(v, 1)}" for k, v in safe.mapping(protocol.get("iou")).items())
    stale = evaluation_notice(report, directory)
    top = "<h2>Against Waymo's labels</h2>" if heading else ""
    parts = [f"{top}{f'<p><strong>{safe.text(stale)}</strong></p>' if stale else ''}"
             f"<p class='muted'>Matching: {safe.text(title)} protocol (IoU {safe.text(ious)}); "
             f"at the drawing threshold {threshold}; every label counted (LEVEL_2) unless the table says LEVEL_1. "
             f"{safe.text(library.get('name'))} {safe.text(library.get('version'))}."
             f"{f' {dropped} unusable label rows were dropped.' if dropped else ''}</p>"]
    matches = gallery.read_matches(directory, segment, notes)
    if matches is not None and report.threshold is not None:
        parts.append(_outcomes(gallery.outcomes(matches, report.threshold), level_2))
    parts.append(_levels(report))
    parts.append(_tracking(report.tracking))
    parts.append(_by_size_and_camera(level_2, report.cameras))
    if failures:
        parts.append(where_and_why(report, directory))
    if (directory / PR_CURVES_FILE).is_file():
        parts.append("<h3>Precision and recall</h3><p class='muted'>Dots: the drawing threshold; diamonds: the "
                     "F1-best threshold.</p>" + linked(PR_CURVES_FILE, "precision-recall curves per type"))
    parts.append(_thresholds(report, directory))
    if assets is not None:
        gallery.clear(assets)  # an earlier evaluation's crops
    if matches is not None and assets is not None and report.threshold is not None:
        chosen = gallery.select(matches, report.threshold, track_ids=gallery.TrackIds.read(directory))
        parts.append(_galleries(chosen, directory, assets, gallery.source_images(directory, chosen, sources), notes))
    return "".join(parts)


def where_and_why(report: EvalRecord, directory: Path) -> str:
    """The slices (where and when) and the error kinds with the confusion matrix (why)."""
    return _slices(report.slices, directory) + failures_section(report)


def _outcomes(counts: dict[str, gallery.Outcome], level_2: Sequence[Mapping[str, object]]) -> str:
    ap = {str(r.get("name")): r for r in level_2}
    rows = [[name, c.labels, c.hits, c.false_alarms, c.missed, num(ap.get(name, {}).get("precision"), 3),
             num(ap.get(name, {}).get("recall"), 3), num(ap.get(name, {}).get("f1"), 3)]
            for name, c in sorted(counts.items(), key=lambda item: _type_order(item[0], ap))
            if c.labels]  # a type with no labels in the data: the headline names it
    if not rows:
        return ""
    return (f"<h3>Hits, false alarms, misses</h3><p class='muted'>{LEGEND}</p>"
            + table(["type", "labels", "hits", "false alarms", "missed", "P", "R", "F1"], rows, css="outcomes"))


def _levels(report: EvalRecord) -> str:
    headers = ["type", "level", "labels", "dets", "AP50", "AP70/50", "AP", "AR100"]
    rows = [[r.get("name"), level, count_cell(r.get("labels")), count_cell(r.get("detections")),
             *[num(r.get(k), 3) for k in ("ap50", "ap_waymo", "ap", "ar100")]]
            for level in report.levels for r in report.rows(level)
            if r.get("labels") != 0]  # a type the data has no label of has no AP (the headline names it)
    return ("<h3>Average precision</h3><p class='muted'>AP50: COCO, IoU 0.5; AP70/50: Waymo's 2D protocol, IoU 0.7 "
            "for VEHICLE and 0.5 for the others; AP: IoU 0.5:0.95; AR100: recall at 100 detections per image.</p>"
            + table(headers, rows))


def _by_size_and_camera(level_2: Sequence[Mapping[str, object]], cameras: Mapping[str, object]) -> str:
    size_rows = [[r.get("name"), *[num(safe.mapping(r.get("ap50_by_size")).get(s), 3) for s in SIZES]]
                 for r in level_2 if safe.count(r.get("labels"))]
    out = ""
    if size_rows:
        out += ("<h3>AP50 by object size</h3><p class='muted'>COCO's sizes: small under 32x32 px, medium under "
                "96x96, large above (LEVEL_2).</p>" + table(["type", *SIZES], size_rows))
    camera_rows = [[name, count_cell(c.get("labels")), num(c.get("ap50"), 3), num(c.get("ap_waymo"), 3),
                    num(c.get("precision"), 3), num(c.get("recall"), 3)]
                   for name, c in cameras.items() if isinstance(c, dict)]
    if camera_rows:
        out += ("<h3>By camera</h3><p class='muted'>Every type together (mean AP over types), LEVEL_2.</p>"
                + table(["camera", "labels", "AP50", "AP70/50", "P", "R"], camera_rows))
    return out


def _slices(slices: Mapping[str, object], directory: Path) -> str:
    """Where and when: AP50 and recall per type in each slice (LEVEL_2), the labels beside them; the
    range bands' picture; the dimensions that are not available named."""
    rows, absent = [], []
    for dimension in SLICE_DIMENSIONS:
        pieces = slices.get(dimension)
        if not isinstance(pieces, list):
            if pieces is not None:
                absent.append(dimension.replace("_", " "))
            continue
        for piece in safe.items(pieces):
            piece = safe.mapping(piece)
            levels = safe.items(safe.mapping(piece.get("levels")).get("LEVEL_2"))
            for row in (safe.mapping(r) for r in levels):
                labels = safe.count(row.get("labels"))
                if labels:
                    rows.append([dimension.replace("_", " "), piece.get("slice"), row.get("name"), labels,
                                 num(row.get("ap50"), 3), _interval(row.get("ap50_interval"), piece.get("blocks")),
                                 num(row.get("recall"), 3)])
    if not rows and not absent:
        return ""
    out = ("<h3>Where and when</h3><p class='muted'>LEVEL_2, by range from the car (the tied 3D label's, else the "
           "ground-plane estimate) and by the images' conditions; in a slice, labels outside it are ignored and a "
           "false alarm counts where its own range puts it. R: recall at the drawing threshold. 95%: the AP50's "
           f"interval from a bootstrap over blocks of {BLOCK_SECONDS:g} s of consecutive frames, given where the "
           f"slice holds at least {MIN_BLOCKS} such blocks (else the blocks it has).</p>")
    if rows:
        out += table(["by", "slice", "type", "labels", "AP50", "95%", "R"], rows, css="slices")
    if (directory / RANGE_BANDS_FILE).is_file():
        out += linked(RANGE_BANDS_FILE, "AP50 and recall per type by range band")
    if absent:
        out += f"<p class='muted'>Not available (no such context in the input): {safe.text(', '.join(absent))}.</p>"
    return out


def _interval(interval: object, blocks: object) -> str:
    """An AP50 interval as "0.61-0.83"; without one, the slice's blocks ("3 blocks"), or "-"."""
    values = safe.items(interval)
    if len(values) == 2 and all(safe.number(v, 3) != "-" for v in values):
        return f"{safe.number(values[0], 2)}-{safe.number(values[1], 2)}"
    count = safe.count(blocks)
    return f"{count} block{'s' if count != 1 else ''}" if isinstance(blocks, int) and count else "-"


def _thresholds(report: EvalRecord, directory: Path) -> str:
    sweeps = report.sweeps
    level_2 = {str(r.get("name")): r for r in report.rows("LEVEL_2")}
    rows = []
    for name, found in sweeps.items():
        best = safe.mapping(safe.mapping(found).get("best"))
        now = level_2.get(str(name), {})
        if best and now.get("labels") != 0:
            rows.append([name, safe.text(best.get("suggested")), num(best.get("f1"), 3), num(best.get("precision"), 3),
                         num(best.get("recall"), 3), num(now.get("f1"), 3)])
    if not rows and not (directory / THRESHOLDS_FILE).is_file():
        return ""
    out = (f"<h3>Which threshold</h3><p class='muted'>The F1-best threshold per type, against F1 at the drawing "
           f"threshold {safe.number(report.data.get('threshold'), 2)} (try it with <code>--threshold</code>).</p>")
    if rows:
        out += table(["type", "F1-best threshold", "F1", "P", "R", "F1 now"], rows)
    if (directory / THRESHOLDS_FILE).is_file():
        out += linked(THRESHOLDS_FILE, "precision, recall and F1 against the threshold; scores of hits and false alarms")
    return out


def _galleries(chosen: dict[str, dict[str, list[gallery.Example]]], directory: Path, assets: Path,
               sources: SourceImages, notes: list[str] | None = None) -> str:
    out = []
    items: list[filters.Item] = []
    drawn = 0  # close-ups cut from the drawn frames
    for name, kinds in chosen.items():
        for kind, examples in kinds.items():
            if not examples:
                continue
            prefix = f"{gallery.PREFIX}{name.lower()}_{'fa' if kind == gallery.FALSE_ALARM else 'miss'}"
            figures = []
            for example, crop, frame in gallery.crops(examples, directory, assets, prefix, sources, notes):
                drawn += bool(crop) and example.key not in sources.images
                caption = safe.text(example.caption())
                picture = (Markup("<p class='muted'>(no picture)</p>") if not crop
                           else Markup(f"<a href='{safe.href(frame)}'>{img(crop, caption)}</a>") if frame
                           else img(crop, caption))
                item = filter_item(example)
                items.append(item)
                figures.append(f"<figure{item.attributes()}>{picture}<figcaption>{caption}</figcaption></figure>")
            heading = "highest-scoring false alarms" if kind == gallery.FALSE_ALARM else "largest missed labels"
            out.append(f"<section class='gallery-group'><h3>{safe.text(name)}: {heading}</h3>"
                       f"<div class='grid crops'>{''.join(figures)}</div></section>")
    if not out:
        return ""
    fallback = (f"{sources.problem}: {drawn} close-up(s) cut from the drawn frames instead" if sources.problem and drawn
                else None)
    if fallback and notes is not None and fallback not in notes:
        notes.append(fallback)
    return (f"<p class='muted'>{CROPS}</p>" + (f"<p><strong>{safe.text(fallback)}.</strong></p>" if fallback else "")
            + filters.form(items) + "".join(out))


def filter_item(example: gallery.Example) -> filters.Item:
    """What a gallery example shows, for the page's filters."""
    state = "false-alarm" if example.kind == gallery.FALSE_ALARM else "missed"
    return filters.Item(state, example.type_name, example.camera, example.object_key, example.score, example.range_m)


def linked(path: str, alt: str) -> str:
    """A plot that opens itself full size when clicked."""
    return f"<a href='{safe.href(path)}'>{img(path, alt)}</a>"


def _type_order(name: str, rows: Mapping[str, object]) -> int:
    """Types in the order eval.json lists them (VEHICLE, PEDESTRIAN, ...)."""
    names = list(rows)
    return names.index(name) if name in names else len(names)


def _tracking(scores: Mapping[str, object]) -> str:
    """Track ids against the labels' object ids, per Waymo type ("" when the run was not tracked)."""
    rows = []
    for name, value in scores.items():
        s = safe.mapping(value)
        rows.append([name, safe.number(s.get("hota"), 3), safe.number(s.get("deta"), 3), safe.number(s.get("assa"), 3),
                     safe.number(s.get("mota"), 3), safe.number(s.get("idf1"), 3), safe.count_text(s.get("id_switches")),
                     safe.count_text(s.get("fragmentations")),
                     f"{safe.count_text(s.get('mostly_tracked'))} / {safe.count_text(s.get('objects'))}"])
    if not rows:
        return ""
    return ("<h3>Tracking</h3><p class='muted'>Each camera's track ids against the labels' object ids (TrackEval): "
            "HOTA averages detection (DetA) and association (AssA) over IoU 0.05-0.95; MOTA and IDF1 at the "
            "protocol's IoU; an ID switch is a labeled object taking another track's id.</p>"
            + table(["type", "HOTA", "DetA", "AssA", "MOTA", "IDF1", "ID switches", "fragmentations",
                     "mostly tracked / objects"], rows))
