"""`detect eval`, `detect export`, `detect report` and `detect gif`: commands over results already written."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from detect.cli.console import note, say, status
from detect.cli.exit_codes import EXIT_FRAMES_FAILED, EXIT_OK
from detect.cli.followup import follow_up, refresh_pages, tracking_line
from detect.core.matching import COCO_PROTOCOL, PROTOCOLS
from detect.core.names import counted
from detect.evaluate.commands import EvalResult, export_coco, run_eval
from detect.evaluate.export import Exported
from detect.evaluate.outputs import slice_lines, table_lines
from detect.model.classmap import load_class_map
from detect.report.build import build_reports
from detect.results.eval_record import read_eval_record
from detect.results.manifest import MANIFEST_FILE
from detect.results.rebuild import rebuild_all
from detect.results.source_images import NamedSources
from detect.results.track_ids import retrack_all


def cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"evaluating {args.results} against Waymo's labels", err, args.quiet)
    result = run_eval(args.results, gt=args.gt, class_map_path=args.class_map, protocol=PROTOCOLS[args.protocol],
                      allow_mixed=args.allow_mixed)
    pages = refresh_pages(args.results, lambda text: status(text, err, args.quiet))
    for line in [*result.notes, *pages.notes]:
        note(line, err)
    if not args.quiet:
        say(result.headline(), out)
        for line in [*table_lines(result.evaluation), *slice_lines(result.evaluation, args.by)]:
            say(line, out)
        say(wrote(result.written), out)
        for line in pages.lines:
            say(line, out)
    return EXIT_OK


def wrote(paths: Sequence[Path]) -> str:
    """"wrote a, b, c in FOLDER": the folder once, when the files share it."""
    folders = {p.parent for p in paths}
    if len(folders) == 1:
        return f"wrote {', '.join(p.name for p in paths)} in {folders.pop()}"
    return "wrote " + ", ".join(str(p) for p in paths)


def cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"exporting {args.results} as COCO JSON", err, args.quiet)
    exported = export_coco(args.results, args.out, gt=args.gt, class_map_path=args.class_map, images=args.images,
                           allow_mixed=args.allow_mixed, sources=NamedSources(tuple(args.source or ())))
    _print(exported.notes, [] if args.quiet else [export_line(exported)], out, err)
    return EXIT_OK


def export_line(exported: Exported) -> str:
    """"wrote instances.json (5 images, 66 labels), detections.json (1,216 detections) in DIR"."""
    instances, detections, *images = exported.written
    parts = [f"{instances.name} ({counted(exported.images, 'image')}, {counted(exported.labels, 'label')})",
             f"{detections.name} ({counted(exported.detections, 'detection')})"]
    if images and exported.copied is not None:
        parts.append(f"{images[0].name}/ ({counted(exported.copied, 'JPEG')} copied)")
    return f"wrote {', '.join(parts)} in {instances.parent}"


def cmd_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"writing the report pages of {args.results}", err)
    reports = build_reports(args.results, NamedSources(tuple(args.source or ())))
    _print(reports.notes, reports.written, out, err)
    return EXIT_OK


def cmd_gif(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"making the {'GIF and MP4' if args.mp4 else 'GIF'} animations of {args.results}", err)
    rebuilt = rebuild_all(args.results, width=args.width, fps=args.fps, mp4=args.mp4)
    _print(rebuilt.notes, rebuilt.written, out, err)
    return EXIT_FRAMES_FAILED if rebuilt.notes else EXIT_OK


def cmd_track(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"tracking the detections of {args.results}", err)
    tracked = retrack_all(args.results, load_class_map(args.class_map), threshold=args.threshold,
                          lost_seconds=args.lost_seconds)
    # The table changed: its evaluation again (seconds; the tracks scored against the labels' object
    # ids, as the last evaluation judged them), then the pages that show it.
    scored = follow_up(args.results, evaluate=True, report=False, class_map=args.class_map,
                       protocol=_last_protocol(args.results), pooled=not (args.results / MANIFEST_FILE).is_file(),
                       status=lambda text: status(text, err), summary=_tracking_summary)
    pages = refresh_pages(args.results, lambda text: status(text, err))
    _print([*tracked.notes, *scored.notes, *pages.notes], [*tracked.lines, *scored.lines, *pages.lines], out, err)
    return EXIT_FRAMES_FAILED if tracked.failed else EXIT_OK


def _tracking_summary(result: EvalResult) -> list[str]:
    """What `detect track` prints of the evaluation: the tracks' scores, or why there are none."""
    return tracking_line(result.evaluation) or ["tracks not scored: the labels carry no object ids"]


def _last_protocol(results: Path) -> str:
    """The protocol the results were last evaluated with (COCO's when they never were)."""
    record = read_eval_record(results)
    name = None if record is None else record.protocol_name
    return name if isinstance(name, str) and name in PROTOCOLS else COCO_PROTOCOL.name


def _print(notes: Sequence[str], lines: Sequence[object], out: TextIO, err: TextIO) -> None:
    """What a command over results left out (stderr, one note each), then what it wrote (stdout)."""
    for text in notes:
        note(text, err)
    for line in lines:
        say(str(line), out)
