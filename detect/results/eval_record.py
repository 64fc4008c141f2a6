"""An `eval.json`, written and read back: `detect eval` makes it from its typed `Evaluation` (in a
segment's folder, and at the top of a run for the run as a whole) and writes it here
(`write_eval_record`); the report reads it (`read_eval_record`).

It may have been edited like the rest of a results folder: the drawing threshold the matches were
judged at is checked here (a number from 0 to 1, else not recorded: the page then shows no
outcome counts or galleries); the sections a page shows stay JSON, checked and escaped where they
are shown. One that cannot be used reads as none (`read_results_json`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from detect.core.atomic import atomic_write_bytes
from detect.results.layout import EVAL_FILE
from detect.results.layout_version import EVAL, stamped
from detect.results.results_folder import fraction, json_object, read_results_json


@dataclasses.dataclass(frozen=True, eq=False)
class EvalRecord:
    """One eval.json: its checked drawing threshold, its sections by name, and the whole JSON object."""

    threshold: float | None  # what the matches were judged at; None: not a number from 0 to 1
    data: Mapping[str, object]  # the whole JSON object as written

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> EvalRecord:
        return cls(fraction(data.get("threshold")), data)

    def to_json(self) -> dict[str, object]:
        """eval.json as written: `layout_version` first, then its sections in their order."""
        return stamped(self.data)

    # The sections a page shows as they are (each checked and escaped where it is shown): {} when
    # the file holds no JSON object there.
    @property
    def protocol(self) -> Mapping[str, object]:
        """What decided a hit: name, title, IoU per type."""
        return json_object(self.data.get("protocol"))

    @property
    def protocol_name(self) -> str | None:
        name = self.protocol.get("name")
        return name if isinstance(name, str) else None

    @property
    def library(self) -> Mapping[str, object]:
        """The evaluation library and its version."""
        return json_object(self.data.get("library"))

    @property
    def tracking(self) -> Mapping[str, object]:
        """HOTA, MOTA and IDF1 per type at LEVEL_2 (`tracking_level_2`; {}: tracks not scored)."""
        return json_object(self.data.get("tracking_level_2"))

    @property
    def cameras(self) -> Mapping[str, object]:
        """AP50 per camera at LEVEL_2 (`cameras_level_2`)."""
        return json_object(self.data.get("cameras_level_2"))

    @property
    def sweeps(self) -> Mapping[str, object]:
        """P, R and F1 over thresholds per type at LEVEL_2 (`thresholds_level_2`)."""
        return json_object(self.data.get("thresholds_level_2"))

    @property
    def slices(self) -> Mapping[str, object]:
        """Per dimension (range, time_of_day, location, weather) its slices (`slices`; {}: none)."""
        return json_object(self.data.get("slices"))

    @property
    def error_kinds(self) -> Mapping[str, object]:
        """TIDE's error kinds per level, type and their mean (`error_kinds`; {}: not computed)."""
        return json_object(self.data.get("error_kinds"))

    @property
    def confusion(self) -> Mapping[str, object]:
        """The confusion matrix at the drawing threshold (`confusion`; {}: not computed)."""
        return json_object(self.data.get("confusion"))

    @property
    def levels(self) -> list[str]:
        """The difficulty levels recorded (LEVEL_1, LEVEL_2), in the file's order."""
        return [str(level) for level in json_object(self.data.get("levels"))]

    def rows(self, level: str) -> list[Mapping[str, object]]:
        """The rows of `level` (LEVEL_1, LEVEL_2) that are JSON objects: one per type, then ALL."""
        rows = json_object(self.data.get("levels")).get(level)
        return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []

    def overall(self, level: str) -> Mapping[str, object] | None:
        """The level's last row (ALL: every type together), None when it is not a JSON object."""
        rows = json_object(self.data.get("levels")).get(level)
        last = rows[-1] if isinstance(rows, list) and rows else None
        return last if isinstance(last, Mapping) else None


def write_eval_record(directory: Path, record: EvalRecord) -> Path:
    """eval.json in `directory`, atomically (`EvalRecord.to_json`; no NaN: strict JSON)."""
    return atomic_write_bytes(directory / EVAL_FILE,
                              (json.dumps(record.to_json(), indent=2, allow_nan=False) + "\n").encode())


def read_eval_record(directory: Path) -> EvalRecord | None:
    """The eval.json in `directory`, or None when there is none that can be used (or it is empty)."""
    data = read_results_json(directory / EVAL_FILE, EVAL)
    return EvalRecord.from_json(data) if data else None
