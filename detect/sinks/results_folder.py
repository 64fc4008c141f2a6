"""Reading a segment's results folder back: its manifest as a typed record, and which images the run
processed. The one reader eval, export, report, compare and gif share (the writers are beside it;
eval.json and run files are read back by `eval_record` and `run_record` through `read_results_json`).

A results folder is shared and may be edited: every value is checked here, once. What a reader
cannot use reads as "not recorded" (the drawing threshold falls back to `DEFAULT_THRESHOLD`, the
model facts to `ModelFacts.from_json`'s empties); a manifest that is not a readable JSON object is
one `InputError` naming it; the other JSON files beside it (eval.json, run files) read as None
when they cannot be used (`read_results_json`). The report escapes what it shows as a second wall.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from detect.core.errors import InputError, first_line
from detect.core.files import UnreadableFileError, read_json_object
from detect.core.records import FrameKey, FrameResult
from detect.model.facts import ModelFacts
from detect.sinks import journal
from detect.sinks.frames import list_frames
from detect.sinks.manifest import MANIFEST_FILE

# The drawing threshold of a results folder whose manifest does not record one (a hand edit).
DEFAULT_THRESHOLD = 0.5


@dataclasses.dataclass(frozen=True, eq=False)
class Manifest:
    """A segment's manifest.json as read back: the values readers act on, typed and checked, and the
    JSON sections a page shows as they are (`section`)."""

    directory: Path
    segment_context_name: str  # as recorded, else the folder's name
    status: str
    model: ModelFacts
    threshold: float  # settings.draw.threshold, else DEFAULT_THRESHOLD
    threshold_recorded: bool
    input_path: str | None  # the segment file the run read
    labels_dropped: int  # label rows the run could not use
    data: Mapping[str, object]  # the whole JSON object as written

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

    def section(self, name: str) -> Mapping[str, object]:
        """A top-level JSON object of the manifest (counts, timings, versions, ...); {} when it is not one."""
        value = self.data.get(name)
        return value if isinstance(value, Mapping) else {}

    @classmethod
    def from_json(cls, data: Mapping[str, object], directory: Path) -> Manifest:
        name = data.get("segment_context_name")
        threshold = recorded_threshold(data)
        source = data.get("input")
        path = source.get("path") if isinstance(source, Mapping) else None
        dropped = source.get("labels_dropped") if isinstance(source, Mapping) else None
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
        )


def recorded_threshold(manifest: Mapping[str, object]) -> float | None:
    """The drawing threshold a manifest records (`settings.draw.threshold`), or None when it does
    not hold a number from 0 to 1 there."""
    settings = manifest.get("settings")
    draw = settings.get("draw") if isinstance(settings, Mapping) else None
    return fraction(draw.get("threshold") if isinstance(draw, Mapping) else None)


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
    return Manifest.from_json(data, directory)


def read_results_json(path: Path) -> Mapping[str, object] | None:
    """A JSON object a run or `detect eval` wrote into a results folder (eval.json, a run file), or
    None when it is missing or cannot be used (unreadable, not an object, a link). For readers that
    go on without it: a page shows what it can, a run counts an unreadable run file as none. A
    reader that cannot go on calls `core.files.read_json_object` and gets its one-line error."""
    try:
        return read_json_object(path, follow_links=False)
    except UnreadableFileError:
        return None


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
