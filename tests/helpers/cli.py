"""The `detect` command run in the test's process, its stderr as a reader sees it."""

from __future__ import annotations

import io
import re

from cli_text import without_status

from detect.cli import main


def run(*argv: str) -> tuple[int, str]:
    """The exit code and stderr of `detect ARGV`: status lines left out, wrapped lines joined."""
    err = io.StringIO()
    code = main(list(argv), stdout=io.StringIO(), stderr=err)
    return code, re.sub(r"\n  +", " ", without_status(err.getvalue()))
