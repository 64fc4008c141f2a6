"""`detect redraw`: frames, animations and table again at a new threshold or drawing mode, without
the model (`detect.engine.redraw`), then the evaluation and the report, as a run ends."""

from __future__ import annotations

import argparse
from typing import TextIO

from detect.cli.console import note, say, status
from detect.cli.exit_codes import EXIT_FRAMES_FAILED, EXIT_OK
from detect.cli.followup import FollowUp, follow_up, load_report_code
from detect.core.errors import InputError, OutputError
from detect.engine.redraw import RedrawRequest, redraw_segment
from detect.sinks.manifest import MANIFEST_FILE
from detect.sinks.run_folder import find_segment_folders


def cmd_redraw(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    request = RedrawRequest(threshold=args.threshold, draw=args.draw, unscored=args.draw_unscored,
                            class_map=args.class_map, workers=args.workers)
    found = find_segment_folders(args.results)
    folders = found.with_manifest()
    if not folders:
        raise InputError(found.nothing_found(args.results))
    lines: list[str] = []
    failures: list[str] = []
    pooled = not (args.results / MANIFEST_FILE).is_file()

    def follow(evaluate: bool, report: bool) -> FollowUp:
        return follow_up(args.results, evaluate=evaluate, report=report, class_map=args.class_map,
                         protocol=args.protocol, pooled=pooled)

    # one segment: its evaluation (the new table against the labels) runs while its frames are drawn
    evaluated: list[FollowUp] = []

    def evaluate() -> None:
        evaluated.append(follow(True, False))
        if args.report:
            load_report_code()  # its imports (~0.3 s) off the path that follows the drawing

    alongside = None if pooled or not args.evaluate else evaluate
    for directory in folders:
        status(f"redrawing {directory} ...", err, args.quiet)
        try:
            lines.append(redraw_segment(directory, request, alongside).line())
        except (InputError, OutputError) as error:
            failures.append(str(error))
    if failures and not lines:
        raise InputError(failures[0] if len(failures) == 1 else f"{failures[0]} (and {len(failures) - 1} more)")
    after = [*evaluated, follow(args.evaluate and alongside is None, args.report)]
    for text in [*(f"{failure}; left out" for failure in failures), *(n for a in after for n in a.notes)]:
        note(text, err)
    if not args.quiet:
        for line in [*lines, *(line for a in after for line in a.lines)]:
            say(line, out)  # under 100 characters, as every command's summary
    return EXIT_FRAMES_FAILED if failures else EXIT_OK
