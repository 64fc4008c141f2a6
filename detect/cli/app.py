"""`main`: parse, run the command's handler, and turn every error into one line and an exit code."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import TextIO

from detect.cli.console import Printable, error_line
from detect.cli.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, EXIT_USAGE
from detect.cli.parser import build_parser
from detect.core.errors import DetectError
from detect.core.signals import Terminated, interrupts_as_exceptions, raise_if_interrupted
from detect.core.tf_env import set_verbose
from detect.engine.tuning import keep_freed_memory


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out: TextIO = Printable(stdout or sys.stdout)  # type: ignore[assignment]  # a TextIOBase is a text stream
    err: TextIO = Printable(stderr or sys.stderr)  # type: ignore[assignment]
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse(argv)
    except SystemExit as exit_:  # argparse already printed usage, help or version
        return EXIT_USAGE if exit_.code else EXIT_OK
    set_verbose(bool(args.debug))  # per call: one --debug run must not make later calls in this process loud
    keep_freed_memory()
    try:
        with interrupts_as_exceptions():
            code = int(args.handler(args, out, err))
            raise_if_interrupted()  # a Ctrl-C some library swallowed still ends the command as interrupted
            return code
    except DetectError as error:
        if args.debug:
            raise
        error_line(one_line(str(error)), err)
        return EXIT_USAGE
    except BrokenPipeError:  # `detect info ... | head`
        return EXIT_OK
    except Terminated:
        resumable = "what finished is kept: rerun with --resume to continue where it stopped"
        print(f"detect: terminated (SIGTERM); {resumable if _resumable(args) else _START_AGAIN}", file=err)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        resumable = "rerun with --resume to continue where it stopped"
        print(f"detect: interrupted; {resumable if _resumable(args) else _START_AGAIN}", file=err)
        return EXIT_INTERRUPTED
    except OSError as error:  # read-only or full disk, no permission, OUT is a file...
        if args.debug:
            raise
        error_line(os_error_line(error), err)
        return EXIT_USAGE
    except Exception as error:  # a bug: still one line, the traceback with --debug
        if args.debug:
            raise
        error_line(f"unexpected {type(error).__name__}: {one_line(str(error))} "
                   f"(rerun with --debug for the traceback, and please report it)", err)
        return EXIT_USAGE


_START_AGAIN = "rerun the command to start again"


def _resumable(args: object) -> bool:
    """Whether the command takes `--resume` (`run`, `segment`); others (`compare`, `model`) start again."""
    return hasattr(args, "resume")


def one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def os_error_line(error: OSError) -> str:
    """`path: reason` for an operating-system error, as one line."""
    reason = error.strerror or one_line(str(error)) or type(error).__name__
    where = error.filename if error.filename is not None else None
    return f"{where}: {reason}" if where else reason
