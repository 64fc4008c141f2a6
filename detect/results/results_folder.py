"""A segment's results folder read back: its manifest as a typed record (written and read here: the
one form, `Manifest.to_json` / `Manifest.from_json`), and which images the run processed. The one
reader eval, export, report, compare and gif share (eval.json and run files are written and read
back by `eval_record` and `run_record`, through `read_results_json`).

A results folder is shared and may be edited: every value is checked here, once. What a reader
cannot use reads as "not recorded" (the drawing threshold falls back to `DEFAULT_THRESHOLD`, the
model facts to `ModelFacts.from_json`'s empties); a manifest that is not a readable JSON object is
one `InputError` naming it; the other JSON files beside it (eval.json, run files) read as None
when they cannot be used (`read_results_json`). The report escapes what it shows as a second wall.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from detect.core.atomic import atomic_write_bytes
from detect.core.errors import InputError, first_line
from detect.core.files import UnreadableFileError, read_json_object
from detect.core.records import FrameKey, FrameResult
from detect.model.facts import ModelFacts
from detect.results import journal
from detect.results.frames import list_frames
from detect.results.layout_version import MANIFEST, stamped, upgraded
from detect.results.manifest import MANIFEST_FILE

# The drawing threshold of a results folder whose manifest does not record one (a hand edit).
DEFAULT_THRESHOLD = 0.5


MAX_COUNT = 2**53  # the largest count JSON numbers hold exactly


def whole(value: object) -> int | None:
    """`value` when it is a JSON whole number from 0 to 2**53, else None (not recorded, or edited)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT else None


def number(value: object) -> float | int | None:
    """`value` when it is a finite JSON number, as written (an int stays an int), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return value if math.isfinite(value) else None
    except OverflowError:  # an int past a float's range
        return None


def json_object(value: object) -> Mapping[str, object]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class Counts:
    """A manifest's `counts`, each a whole number or None (not recorded, or edited past use)."""

    images_planned: int | None = None
    images_processed: int | None = None
    images_resumed: int | None = None
    images_failed: int | None = None
    detections: int | None = None
    drawn: int | None = None  # what the frames show (the renderer's count)

    @classmethod
    def from_json(cls, value: object) -> Counts:
        section = json_object(value)
        return cls(**{f.name: whole(section.get(f.name)) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Timings:
    """What a manifest's `timings` says of speed (None: not recorded)."""

    images_per_second: float | int | None = None
    pipeline_s: float | int | None = None
    total_s: float | int | None = None
    stage_ms_per_image: Mapping[str, float | int] = dataclasses.field(default_factory=dict)  # finite numbers only

    @property
    def detect_ms_per_image(self) -> float | int | None:
        return self.stage_ms_per_image.get("detect")

    @classmethod
    def from_json(cls, value: object) -> Timings:
        section = json_object(value)
        stages = {str(k): n for k, v in json_object(section.get("stage_ms_per_image")).items()
                  if (n := number(v)) is not None}
        return cls(number(section.get("images_per_second")), number(section.get("pipeline_s")),
                   number(section.get("total_s")), stages)


@dataclasses.dataclass(frozen=True)
class InputRecord:
    """A manifest's `input`: the file the run read and its labels (None: not recorded)."""

    path: str | None = None
    format: str | None = None
    ground_truth: str | None = None  # where the labels came from
    labels: int | None = None  # label boxes over the processed images; None: the run had no labels
    labels_dropped: int = 0  # label rows the run could not use
    fingerprint: object = None  # as written: `SourceFingerprint.from_json` checks it

    @classmethod
    def from_json(cls, value: object) -> InputRecord:
        section = json_object(value)

        def text(key: str) -> str | None:
            v = section.get(key)
            return v if isinstance(v, str) and v else None

        return cls(text("path"), text("format"), text("ground_truth"), whole(section.get("labels")),
                   whole(section.get("labels_dropped")) or 0, section.get("fingerprint"))


@dataclasses.dataclass(frozen=True, eq=False)
class Manifest:
    """A segment's manifest.json: every section a reader acts on, typed and checked once here;
    `settings` stays the JSON object the engine's `SettingsRecord` writes and decodes. A run
    builds one with `from_json` from the sections it records, a redraw or `detect track` changes
    sections with `with_sections`, and `write_manifest` writes `to_json`: one form, read and written."""

    directory: Path
    segment_context_name: str  # as recorded, else the folder's name
    status: str
    model: ModelFacts
    threshold: float  # settings.draw.threshold, else DEFAULT_THRESHOLD
    threshold_recorded: bool
    input_path: str | None  # the segment file the run read
    labels_dropped: int  # label rows the run could not use
    data: Mapping[str, object]  # the whole JSON object as written
    max_boxes: int | None = None  # settings.draw.max_boxes: at most this many boxes drawn on an image
    counts: Counts = Counts()
    timings: Timings = Timings()
    input: InputRecord = InputRecord()
    versions: Mapping[str, str] = dataclasses.field(default_factory=dict)  # package -> version
    engine_name: str | None = None
    tracking_params: Mapping[str, object] | None = None  # the tracker's, as recorded (None: not tracked)

    @property
    def recorded_name(self) -> str | None:
        """The segment's name when the manifest records one (a non-empty string), else None."""
        name = self.data.get("segment_context_name")
        return name if isinstance(name, str) and name else None

    @property
    def failures(self) -> list[Mapping[str, object]]:
        """The frames the run recorded as failed (`failures`: camera, timestamp, stage, error), each a
        JSON object; entries that are not one are left out."""
        failures = self.data.get("failures")
        return [f for f in failures if isinstance(f, Mapping)] if isinstance(failures, list) else []

    @property
    def settings(self) -> Mapping[str, object]:
        """The recorded settings, the JSON object `SettingsRecord.from_json` decodes ({}: none)."""
        return json_object(self.data.get("settings"))

    def to_json(self) -> dict[str, object]:
        """The manifest as written: `layout_version` first, then its sections in their order."""
        return stamped(self.data)

    def with_sections(self, **sections: object) -> Manifest:
        """This manifest with these top-level sections in place of its own (one it lacks goes last)."""
        return Manifest.from_json({**self.data, **sections}, self.directory)

    @classmethod
    def from_json(cls, data: Mapping[str, object], directory: Path) -> Manifest:
        name = data.get("segment_context_name")
        threshold = recorded_threshold(data)
        source = data.get("input")
        path = source.get("path") if isinstance(source, Mapping) else None
        dropped = source.get("labels_dropped") if isinstance(source, Mapping) else None
        versions = json_object(data.get("versions"))
        engine = json_object(data.get("engine")).get("name")
        params = json_object(data.get("tracking")).get("params")
        return cls(
            directory=directory,
            segment_context_name=str(name) if name is not None else directory.name,
            status=str(data.get("status", "?")),
            model=ModelFacts.from_json(data.get("model")),
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            threshold_recorded=threshold is not None,
            input_path=path if isinstance(path, str) and path else None,
            labels_dropped=dropped if isinstance(dropped, int) and not isinstance(dropped, bool)
            and 0 <= dropped < 2**53 else 0,
            data=data,
            max_boxes=recorded_max_boxes(data),
            counts=Counts.from_json(data.get("counts")),
            timings=Timings.from_json(data.get("timings")),
            input=InputRecord.from_json(source),
            versions={k: v for k, v in versions.items() if isinstance(v, str)},
            engine_name=engine if isinstance(engine, str) else None,
            tracking_params=params if isinstance(params, Mapping) else None,
        )


def recorded_max_boxes(manifest: Mapping[str, object]) -> int | None:
    """The most boxes drawn on an image a manifest records (`settings.draw.max_boxes`), or None when
    it records no whole number from 0 there (no cap)."""
    value = _recorded_style(manifest).get("max_boxes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def recorded_threshold(manifest: Mapping[str, object]) -> float | None:
    """The drawing threshold a manifest records (`settings.draw.threshold`), or None when it does
    not hold a number from 0 to 1 there."""
    return fraction(_recorded_style(manifest).get("threshold"))


def _recorded_style(manifest: Mapping[str, object]) -> Mapping[str, object]:
    """The drawing style a manifest records (`settings.draw`; the drawing mode is `settings.draw_mode`)."""
    return json_object(json_object(manifest.get("settings")).get("draw"))


def fraction(value: object) -> float | None:
    """`value` when it is a JSON number from 0 to 1 (a threshold), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None
    return float(value)


def read_manifest(directory: Path) -> Manifest:
    """The segment's manifest, or one InputError naming it (missing, not JSON, not an object, a link)."""
    path = directory / MANIFEST_FILE
    try:
        data = read_json_object(path, follow_links=False)
    except UnreadableFileError as err:
        raise InputError(f"{path}: cannot read the manifest ({first_line(err)})") from None
    return Manifest.from_json(upgraded(data, MANIFEST, path), directory)


def write_manifest(path: Path, manifest: Manifest) -> None:
    """manifest.json, atomically, in the current layout (`Manifest.to_json`)."""
    atomic_write_bytes(path, (json.dumps(manifest.to_json(), indent=2, default=_default) + "\n").encode())


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return str(value)


def read_results_json(path: Path, kind: str) -> Mapping[str, object] | None:
    """A JSON object a run or `detect eval` wrote into a results folder (eval.json, a run file), in
    the current layout (`upgraded`: a `kind` record), or None when it is missing or cannot be used
    (unreadable, not an object, an empty one, a link). For readers that go on without it: a page shows what it
    can, a run counts an unreadable run file as none. A layout newer than this code reads is refused
    (`RecordError`), not read as none: a newer `detect` wrote it, and it is not to be overwritten."""
    try:
        data = read_json_object(path, follow_links=False)
    except UnreadableFileError:
        return None
    return upgraded(data, kind, path) if data else None


def finished_frames(directory: Path, segment: str) -> Mapping[FrameKey, FrameResult]:
    """The frames the run's journal records as finished, by key; {} without a journal that can be
    read (none, a link or a FIFO in its place, or one with an entry edited past reading)."""
    try:
        return journal.finished(directory, segment) or {}
    except (OSError, ValueError, ArithmeticError, UnreadableFileError):
        return {}


def processed_images(directory: Path, segment: str, *also: Iterable[FrameKey]) -> frozenset[FrameKey]:
    """Every image the run finished. Its journal knows them all, those without boxes too; without a
    journal (a folder copied without `.detect/`, or one that cannot be read), the frames on disk and
    the images in `also` (the detections table's, the labels') stand in."""
    done = finished_frames(directory, segment)
    if done:
        return frozenset(done)
    images = {FrameKey(segment, f.frame_timestamp_micros, f.camera_name) for f in list_frames(directory)}
    for keys in also:
        images.update(k for k in keys if k.segment_context_name == segment)
    return frozenset(images)
