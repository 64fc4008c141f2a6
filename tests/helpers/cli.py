"""The `detect` command run in the test's process, and its stderr as a reader sees it (the status
lines left out)."""

from __future__ import annotations

import io
import re

from detect.cli import main

# `detect.cli.console.status` lines: what a slow step is doing, said before it starts.
STATUS = re.compile(r"detect: (disk|loading|evaluating|writing|making|tracking|comparing|exporting)\b")


def without_status(err: str) -> str:
    """`err` without the status lines (and their continuation lines, on a terminal)."""
    kept, status = [], False
    for line in err.splitlines(keepends=True):
        status = bool(STATUS.match(line)) or (status and line.startswith("  "))
        if not status:
            kept.append(line)
    return "".join(kept)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """The exit code, stdout and stderr (status lines left out) of `detect ARGV`."""
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], stdout=out, stderr=err)
    return code, out.getvalue(), without_status(err.getvalue())


def run(*argv: str) -> tuple[int, str]:
    """The exit code and stderr of `detect ARGV`: status lines left out, wrapped lines joined."""
    code, _, err = run_cli(list(argv))
    return code, re.sub(r"\n  +", " ", err)
