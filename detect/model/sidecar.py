"""`detect_model.json`: what a builder or converter in `models/` says about the model it wrote, as
a typed record written and read in one place.

Its kind (real, stub or benchmark), a description and a short name, the class ids it can output,
the settings measured best for it (`ModelDefaults`), where it came from (`source`, each builder
its own keys), and what else a builder records about it (the benchmark's parameter count).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from detect.core.errors import ModelError
from detect.core.files import UnreadableFileError, read_json_object
from detect.model.defaults import ModelDefaults
from detect.model.inputs import input_size_problem

SIDECAR = "detect_model.json"
KINDS = ("real", "stub", "benchmark")


@dataclasses.dataclass(frozen=True)
class ModelSidecar:
    """One model's `detect_model.json`; None where it says nothing (the reader's default applies)."""

    kind: str  # one of KINDS
    description: str | None = None
    short_name: str | None = None  # a few words for summary lines and page headers
    classes: tuple[int, ...] | None = None  # None: the COCO label map
    defaults: ModelDefaults | None = None
    source: dict[str, object] | None = None  # JSON: package and version, or file, checksums... as its builder has them
    facts: dict[str, object] = dataclasses.field(default_factory=dict)  # JSON: a builder's own, after the rest

    def to_json(self) -> dict[str, object]:
        """The file's object, keys in this order, those left None out."""
        fields: dict[str, object | None] = {
            "kind": self.kind, "description": self.description, "short_name": self.short_name,
            "classes": None if self.classes is None else list(self.classes),
            "defaults": None if self.defaults is None else dataclasses.asdict(self.defaults), "source": self.source}
        return {**{key: value for key, value in fields.items() if value is not None}, **self.facts}

    def write(self, directory: Path) -> Path:
        """`directory/detect_model.json`, indented as every builder writes it."""
        path = directory / SIDECAR
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")
        return path

    @classmethod
    def from_json(cls, data: Mapping[str, object], directory: Path) -> ModelSidecar:
        """Each field checked; a bad one is the sidecar's fault, said in one line naming `directory`."""
        try:
            kind = str(data["kind"])
            classes = _class_ids(data.get("classes"))
            source = data.get("source")
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ModelError(f"model {directory}: unreadable {SIDECAR}: {err}") from None
        if kind not in KINDS:
            raise ModelError(f"model {directory}: {SIDECAR} has kind {kind!r}, expected one of {KINDS}")
        if source is not None and not isinstance(source, dict):
            raise ModelError(f"model {directory}: {SIDECAR} has a source that is not an object")
        description, short_name = data.get("description"), data.get("short_name")
        defaults = _defaults(data.get("defaults"), directory)
        known = {"kind", "description", "short_name", "classes", "defaults", "source"}
        return cls(kind, str(description) if description else None, str(short_name) if short_name else None,
                   classes, defaults, source, {key: value for key, value in data.items() if key not in known})


def read_sidecar(directory: Path) -> ModelSidecar | None:
    """The sidecar beside a model, checked (`ModelError` in one line); None when it has none."""
    path = directory / SIDECAR
    if not path.is_file():
        return None
    try:
        data = read_json_object(path)
    except UnreadableFileError as err:
        raise ModelError(f"model {directory}: unreadable {SIDECAR}: {err}") from None
    return ModelSidecar.from_json(data, directory)


def _class_ids(listed: object) -> tuple[int, ...] | None:
    if listed is None:
        return None
    if not isinstance(listed, Iterable):
        raise TypeError(f"'{type(listed).__name__}' object is not iterable")
    return tuple(int(c) for c in listed)


def _defaults(data: object, directory: Path) -> ModelDefaults | None:
    """The sidecar's `defaults`, each checked: a bad value is the sidecar's fault, said in one line."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ModelError(f"model {directory}: {SIDECAR} has defaults that are not an object")
    size, threshold, nms = data.get("input_size"), data.get("threshold"), data.get("nms_iou")
    if size is not None and not isinstance(size, str):
        raise ModelError(f"model {directory}: {SIDECAR} defaults.input_size must be a string such as 'native' or '512'")
    problem = None if size is None else input_size_problem(size)
    if problem is not None:
        raise ModelError(f"model {directory}: {SIDECAR} defaults.input_size {size!r}: {problem}")
    for name, value, low_open in (("threshold", threshold, False), ("nms_iou", nms, True)):
        if value is None:
            continue
        in_range = isinstance(value, (int, float)) and (0 < value <= 1 if low_open else 0 <= value <= 1)
        if isinstance(value, bool) or not in_range:
            raise ModelError(f"model {directory}: {SIDECAR} defaults.{name} must be a number in "
                             f"{'(0, 1]' if low_open else '[0, 1]'}, got {value!r}")
    return ModelDefaults(input_size=size, threshold=None if threshold is None else float(threshold),
                         nms_iou=None if nms is None else float(nms))
