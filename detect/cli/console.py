"""What the command prints goes through `Printable`: control characters are shown, never obeyed.

Segment names, model descriptions and notes come from files; an escape sequence in one must not
recolour, move or clear the user's terminal. Newlines and tabs pass; every other C0/C1 control
character (ESC, carriage return, backspace, bell...) is written as a visible `\\x..` escape.
tqdm's progress bar, which needs carriage returns, writes to the raw stream (`Printable.raw`).

What a command shows goes through `say`: paths under the working directory written relative to
it, lines wrapped under 100 characters (`wrap`). Errors, notes, warnings and records a script may
read (`detect info`, `detect model`, `detect run`'s table) go through `event`: wrapped on a
terminal, one line each in a log or a pipe, where one grep should find all of one.
`status` says what a step that takes seconds is doing, one plain line before it starts (no
spinner: logs stay clean).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import TextIO

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` with every control character but newline and tab written as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class Printable(io.TextIOBase):
    """A text stream that writes `visible(text)` to `raw`."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(visible(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        try:
            return self.raw.isatty()
        except (AttributeError, ValueError):
            return False

    def writable(self) -> bool:
        return True


# Every line `detect` prints stays under 100 characters (terminals, logs, a review diff): prose is
# wrapped, its continuation lines indented two spaces; a word longer than that (a path outside the
# working directory) keeps its line whole.
WIDTH = 99
INDENT = "  "
# Where a long line breaks, in order of preference: between the items of a list (outside
# parentheses), then between words.
_BREAKS = ("; ", ", ", " ")


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """`text` (one line or several) as lines of at most `width` characters: each line's own
    indentation kept, two more on its continuation lines, broken after "; " where it can, else
    after ", " (neither inside parentheses), else between words; spacing inside a line is kept."""
    lines: list[str] = []
    for line in text.split("\n"):  # not splitlines(): a carriage return or \x1c in a name is shown, not obeyed
        if len(line) <= width:
            lines.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip(" "))]
        units = _units(line.strip(), width - len(lead) - len(INDENT), 0)
        current = lead + units[0]
        for unit in units[1:]:
            # a word too long for any line (a path outside the working directory) stays where it is
            if len((current + unit).rstrip()) <= width or len(lead + INDENT + unit.rstrip()) > width:
                current += unit
            else:
                lines.append(current.rstrip())
                current = lead + INDENT + unit
        lines.append(current.rstrip())
    return lines


def _units(text: str, room: int, level: int) -> list[str]:
    """`text` cut after the separators of `_BREAKS[level]` (each piece keeps its separator and the
    spaces after it); a piece longer than `room` is cut finer."""
    if len(text.rstrip()) <= room or level == len(_BREAKS):
        return [text]
    return [unit for piece in _split(text, _BREAKS[level], nested=level == len(_BREAKS) - 1)
            for unit in _units(piece, room, level + 1)]


def _split(text: str, separator: str, nested: bool) -> list[str]:
    """`text` cut after each `separator` (and the spaces after it); inside parentheses or brackets
    only when `nested`."""
    pieces: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(text):
        depth += 1 if text[i] in "([" else -1 if text[i] in ")]" and depth else 0
        if (depth == 0 or nested) and text.startswith(separator, i):
            end = i + len(separator)
            while end < len(text) and text[end] == " ":
                end += 1
            pieces.append(text[start:end])
            start = i = end
            continue
        i += 1
    return pieces + ([text[start:]] if start < len(text) else [])


def relative(text: str, cwd: Path | None = None) -> str:
    """`text` with every path under the working directory written relative to it (`results/seg`
    for `/home/me/work/results/seg`): shorter, and as unambiguous where the command was typed."""
    base = str(cwd or Path.cwd()).rstrip(os.sep)
    return re.sub(r"(?<![\w./~-])" + re.escape(base + os.sep), "", text) if base else text


def say(text: str, stream: TextIO) -> None:
    """Print what a command has to show (summaries, tables, status lines): paths relative to the
    working directory, lines wrapped under 100 characters (`wrap`)."""
    for line in wrap(relative(text)):
        print(line, file=stream)


def event(text: str, stream: TextIO) -> None:
    """Print an error, a note, a warning or a record: paths relative to the working directory;
    wrapped on a terminal, one line in a log or a pipe (one grep finds all of it)."""
    text = relative(text)
    for line in wrap(text) if _is_terminal(stream) else text.split("\n"):
        print(line, file=stream)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def status(text: str, stream: TextIO, quiet: bool = False) -> None:
    """`detect: <text>` before a step that takes more than a second (nothing with --quiet)."""
    if not quiet:
        say(f"detect: {text}", stream)


def note(text: str, stream: TextIO) -> None:
    event(f"detect: note: {text}", stream)


def error_line(message: str, stream: TextIO) -> None:
    event(f"detect: error: {message}", stream)
