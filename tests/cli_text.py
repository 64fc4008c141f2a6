"""What tests of the command's output share: its stderr without the status lines."""

from __future__ import annotations

import re

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
