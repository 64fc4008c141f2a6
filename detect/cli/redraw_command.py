"""`detect redraw`: frames, animations and table again at a new threshold or drawing mode, without
the model (`detect.engine.redraw`), then the evaluation and the report, as a run ends."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from detect.cli.console import note, say, status
from detect.cli.exit_codes import EXIT_FRAMES_FAILED, EXIT_OK
from detect.cli.followup import FollowUp, follow_up, load_report_code
from detect.core.errors import InputError, OutputError
from detect.engine.redraw import RedrawRequest, map_path, redraw_segment
from detect.engine.spec import SegmentSettings
from detect.results.manifest import MANIFEST_FILE
from detect.results.run_folder import find_segment_folders
from detect.results.source_images import NamedSources


def cmd_redraw(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    sources = NamedSources(tuple(args.source or ()))
    request = RedrawRequest(threshold=args.threshold, draw_mode=args.draw, unscored=args.draw_unscored,
                            class_map=args.class_map, protocol=args.protocol, workers=args.workers, source=sources)
    found = find_segment_folders(args.results)
    folders = found.with_manifest()
    if not folders:
        raise InputError(found.nothing_found(args.results))
    lines: list[str] = []
    failures: list[str] = []
    pooled = not (args.results / MANIFEST_FILE).is_file()

    def follow(evaluate: bool, report: bool, judged: tuple[str, Path | None] = ("coco", None)) -> FollowUp:
        protocol, class_map = judged
        return follow_up(args.results, evaluate=evaluate, report=report, class_map=class_map, protocol=protocol,
                         pooled=pooled, sources=sources)

    # one segment: its evaluation (the new table against the labels) runs while its frames are drawn,
    # with the protocol and class map its frames are judged with (the run's, or the flags')
    evaluated: list[FollowUp] = []

    def evaluate(settings: SegmentSettings) -> None:
        evaluated.append(follow(True, False, (settings.protocol, map_path(settings.class_map))))
        if args.report:
            load_report_code()  # its imports (~0.3 s) off the path that follows the drawing

    alongside = None if pooled or not args.evaluate else evaluate
    judged: set[tuple[str, Path | None]] = set()
    for directory in folders:
        status(f"redrawing {directory} ...", err, args.quiet)
        try:
            redrawn = redraw_segment(directory, request, alongside)
        except (InputError, OutputError) as error:
            failures.append(str(error))
            continue
        lines.append(redrawn.line())
        judged.add((redrawn.protocol, redrawn.class_map))
    if failures and not lines:
        raise InputError(failures[0] if len(failures) == 1 else f"{failures[0]} (and {len(failures) - 1} more)")
    pooled_eval = args.evaluate and alongside is None
    mixed = pooled_eval and len(judged) > 1
    after = [*evaluated, follow(pooled_eval and not mixed, args.report, next(iter(judged)))]
    notes = [f"{failure}; left out" for failure in failures]
    if mixed:
        notes.append(f"not evaluated: its segments are judged with different protocols or class maps "
                     f"({'; '.join(sorted(_judging(j) for j in judged))}); evaluate each with `detect eval`")
    for text in [*notes, *(n for a in after for n in a.notes)]:
        note(text, err)
    if not args.quiet:
        for line in [*lines, *(line for a in after for line in a.lines)]:
            say(line, out)  # under 100 characters, as every command's summary
    return EXIT_FRAMES_FAILED if failures else EXIT_OK


def _judging(judged: tuple[str, Path | None]) -> str:
    protocol, class_map = judged
    return f"{protocol} with {class_map or 'the default class map'}"
