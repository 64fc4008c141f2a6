"""How the engines talk to whoever runs them: one-line messages and progress bars, never `print`.

The CLI passes a reporter that writes to stderr; Python callers and tests pass `SILENT`, or their
own (a list that collects the lines, a notebook widget).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    def update(self, n: int = 1) -> object: ...

    def close(self) -> object: ...


ProgressFactory = Callable[[int, int], Progress]  # (total, already done) -> a bar


class Reporter(Protocol):
    def message(self, text: str) -> None:
        """A one-line notice or warning for the person running the job."""

    def status(self, text: str) -> None:
        """What a step that takes seconds is doing, said as it starts ("loading ..."): one line."""

    def progress(self, label: str) -> ProgressFactory | None:
        """A progress bar factory for one segment (`label` names it), or None for no bar."""


class Silent:
    """A reporter that says nothing."""

    def message(self, text: str) -> None:
        return None

    def status(self, text: str) -> None:
        return None

    def progress(self, label: str) -> ProgressFactory | None:
        return None


SILENT = Silent()


class Collect:
    """A reporter that keeps the messages (for tests and notebooks)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.statuses: list[str] = []

    def message(self, text: str) -> None:
        self.messages.append(text)

    def status(self, text: str) -> None:
        self.statuses.append(text)

    def progress(self, label: str) -> ProgressFactory | None:
        return None
