"""`detect compare A B --out DIR`: two detectors (or two settings) on the same frames."""

from __future__ import annotations

import argparse
from typing import TextIO

from detect.cli.console import note, say, status
from detect.cli.exit_codes import EXIT_OK
from detect.compare.command import run_compare
from detect.core.matching import PROTOCOLS


def cmd_compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    status(f"comparing {args.a} with {args.b} (A | B animations, bootstrap)", err, args.quiet)
    result = run_compare(args.a, args.b, args.out, class_map_path=args.class_map, protocol=PROTOCOLS[args.protocol],
                         replicates=args.bootstrap, seed=args.seed, gt=args.gt)
    for line in result.notes:
        note(line, err)
    if not args.quiet:
        for line in result.lines:
            say(line, out)
    return EXIT_OK
