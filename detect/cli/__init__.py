"""The `detect` command: parse arguments, build a `RunSpec`, call the library, print, exit.

The only package that knows argparse, prints or exits; one module per group of commands
(`segment_and_run`; `over_results`: eval, export, report, gif; `compare`; `info_and_model`), the
parser in `parser`, flag values in `flag_values`, exit codes in `exit_codes`, the error mapping in `app`.
Exit codes: 0 all good; 1 some frames (or segments) failed and are listed in the manifest / run
file; 2 usage, input, model or output errors and unexpected ones (one line on stderr; the
traceback only with --debug); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TextIO

from detect.cli.exit_codes import EXIT_INTERRUPTED, EXIT_TERMINATED
from detect.core.cache_dirs import user_cache_dir
from detect.core.signals import Terminated, interrupts_as_exceptions


def keep_dependency_state_in_our_cache() -> None:
    """matplotlib (its font list) and Keras (keras.json) write into the home folder when first
    imported: `~/.cache/matplotlib`, `~/.config/matplotlib`, `~/.keras`. `detect` writes nothing
    outside OUT and its own cache, so unless the user chose their folders, they go under
    `$XDG_CACHE_HOME/detect` (or `~/.cache/detect`), where the converted models go. Before either
    is imported (they load lazily, with the first report or model)."""
    base = user_cache_dir()
    os.environ.setdefault("MPLCONFIGDIR", str(base / "matplotlib"))
    os.environ.setdefault("KERAS_HOME", str(base / "keras"))


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """The `detect` command. Its modules load here, inside the guard: a Ctrl-C or SIGTERM while
    Python is still importing them ends with one line, not a traceback."""
    keep_dependency_state_in_our_cache()
    with interrupts_as_exceptions():
        try:
            from detect.cli.app import main as run
        except KeyboardInterrupt as stop:
            print("detect: interrupted while starting; nothing was written", file=stderr or sys.stderr)
            return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED
        return run(argv, stdout=stdout, stderr=stderr)


__all__ = ["main"]
