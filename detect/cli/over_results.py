"""`detect eval`, `detect export`, `detect report` and `detect gif`: commands over results already written."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from detect.cli.console import note, say, status
from detect.cli.exit_codes import EXIT_FRAMES_FAILED, EXIT_OK
from detect.core.matching import PROTOCOLS
from detect.evaluate.commands import export_coco, run_eval
from detect.evaluate.outputs import table_lines
from detect.model.classmap import load_class_map
from detect.report.build import build_reports
from detect.sinks.rebuild import rebuild_all
from detect.sinks.source_images import NamedSources
from detect.sinks.tracks import retrack_all


def cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"evaluating {args.results} against Waymo's labels", err, args.quiet)
    result = run_eval(args.results, gt=args.gt, class_map_path=args.class_map, protocol=PROTOCOLS[args.protocol],
                      allow_mixed=args.allow_mixed)
    for line in result.notes:
        note(line, err)
    if not args.quiet:
        say(result.headline(), out)
        for line in table_lines(result.evaluation):
            say(line, out)
        say(wrote(result.written), out)
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
    _print(exported.notes, exported.written, out, err)
    return EXIT_OK


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
    _print(tracked.notes, tracked.lines, out, err)
    return EXIT_FRAMES_FAILED if tracked.failed else EXIT_OK


def _print(notes: Sequence[str], lines: Sequence[object], out: TextIO, err: TextIO) -> None:
    """What a command over results left out (stderr, one note each), then what it wrote (stdout)."""
    for text in notes:
        note(text, err)
    for line in lines:
        say(str(line), out)
