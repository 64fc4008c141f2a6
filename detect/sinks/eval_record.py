"""An `eval.json` read back: `detect eval` writes it from its typed `Evaluation` (in a segment's
folder, and at the top of a run for the run as a whole); the report reads it.

It may have been edited like the rest of a results folder: the drawing threshold the matches were
judged at is checked here (a number from 0 to 1, else not recorded: the page then shows no
outcome counts or galleries); the sections a page shows stay JSON, checked and escaped where they
are shown. One that cannot be used reads as none (`read_results_json`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from detect.sinks.layout import EVAL_FILE
from detect.sinks.layout_version import EVAL
from detect.sinks.results_folder import fraction, read_results_json


@dataclasses.dataclass(frozen=True, eq=False)
class EvalRecord:
    """One eval.json: its checked drawing threshold and the whole JSON object (`section`, `rows`)."""

    threshold: float | None  # what the matches were judged at; None: not a number from 0 to 1
    data: Mapping[str, object]  # the whole JSON object as written

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> EvalRecord:
        return cls(fraction(data.get("threshold")), data)

    def section(self, name: str) -> Mapping[str, object]:
        """A top-level JSON object (protocol, library, levels, cameras_level_2, ...); {} when it is not one."""
        value = self.data.get(name)
        return value if isinstance(value, Mapping) else {}

    def rows(self, level: str) -> list[Mapping[str, object]]:
        """The rows of `level` (LEVEL_1, LEVEL_2) that are JSON objects: one per type, then ALL."""
        rows = self.section("levels").get(level)
        return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []

    def overall(self, level: str) -> Mapping[str, object] | None:
        """The level's last row (ALL: every type together), None when it is not a JSON object."""
        rows = self.section("levels").get(level)
        last = rows[-1] if isinstance(rows, list) and rows else None
        return last if isinstance(last, Mapping) else None


def read_eval_record(directory: Path) -> EvalRecord | None:
    """The eval.json in `directory`, or None when there is none that can be used (or it is empty)."""
    data = read_results_json(directory / EVAL_FILE, EVAL)
    return EvalRecord.from_json(data) if data else None
