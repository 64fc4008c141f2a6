"""What the command prints goes through `Printable`: control characters are shown, never obeyed.

Segment names, model descriptions and notes come from files; an escape sequence in one must not
recolour, move or clear the user's terminal. Newlines and tabs pass; every other C0/C1 control
character (ESC, carriage return, backspace, bell...) is written as a visible `\\x..` escape.
tqdm's progress bar, which needs carriage returns, writes to the raw stream (`Printable.raw`).

Prose goes through `say`: paths under the working directory written relative to it, lines
wrapped under 100 characters (`wrap`); an error is wrapped on a terminal only (`error_line`).
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
# Where a long line breaks, in order of preference: between the items of a list, then between words.
_BREAKS = ("; ", ", ", " ")


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """`text` (one line or several) as lines of at most `width` characters: each line's own
    indentation kept, two more on its continuation lines, broken after "; " where it can, else
    after ", ", else between words."""
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            lines.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip(" "))]
        units = _units(line.strip(), width - len(lead) - len(INDENT), 0)
        current = lead + units[0]
        for unit in units[1:]:
            if len(current) + 1 + len(unit) <= width:
                current += " " + unit
            else:
                lines.append(current)
                current = lead + INDENT + unit
        lines.append(current)
    return lines


def _units(text: str, room: int, level: int) -> list[str]:
    """`text` cut after the separators of `_BREAKS[level]`, a piece longer than `room` cut finer."""
    if len(text) <= room or level == len(_BREAKS):
        return [text]
    separator = _BREAKS[level]
    pieces = text.split(separator)
    pieces = [p + separator.rstrip() for p in pieces[:-1]] + pieces[-1:]
    return [unit for piece in pieces if piece for unit in _units(piece, room, level + 1)]


def relative(text: str, cwd: Path | None = None) -> str:
    """`text` with every path under the working directory written relative to it (`results/seg`
    for `/home/me/work/results/seg`): shorter, and as unambiguous where the command was typed."""
    base = str(cwd or Path.cwd()).rstrip(os.sep)
    return re.sub(r"(?<![\w./~-])" + re.escape(base + os.sep), "", text) if base else text


def say(text: str, stream: TextIO) -> None:
    """Print `text` to `stream`: paths relative to the working directory, lines wrapped (see `wrap`)."""
    for line in wrap(relative(text)):
        print(line, file=stream)


def status(text: str, stream: TextIO, quiet: bool = False) -> None:
    """`detect: <text>` before a step that takes more than a second (nothing with --quiet)."""
    if not quiet:
        say(f"detect: {text}", stream)


def note(text: str, stream: TextIO) -> None:
    say(f"detect: note: {text}", stream)


def error_line(message: str, stream: TextIO) -> None:
    """`detect: error: <message>`, paths relative to the working directory: wrapped on a terminal
    like the rest, one line in a log or a pipe (one grep finds the whole error)."""
    line = relative(f"detect: error: {message}")
    if stream.isatty():
        say(line, stream)
    else:
        print(line, file=stream)
