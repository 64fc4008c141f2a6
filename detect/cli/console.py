"""What the command prints goes through `Printable`: control characters are shown, never obeyed.

Segment names, model descriptions and notes come from files; an escape sequence in one must not
recolour, move or clear the user's terminal. Newlines and tabs pass; every other C0/C1 control
character (ESC, carriage return, backspace, bell...) is written as a visible `\\x..` escape.
tqdm's progress bar, which needs carriage returns, writes to the raw stream (`Printable.raw`).
"""

from __future__ import annotations

import io
import re
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
