"""Track ids for a detections table: the tracker (`detect.track`) over the table's own columns.

Run when a segment finishes (every box down to the score floor is in the table then) and again by
`detect track` on a results folder; a segment of one timestamp has nothing to track across.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.errors import InputError, OutputError, UsageError, first_line
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.model.classmap import ClassMap
from detect.results import box_context
from detect.results.layout import SegmentLock, has_pictures, is_marked
from detect.results.manifest import MANIFEST_FILE
from detect.results.results_folder import read_manifest, write_manifest
from detect.results.results_tables import (
    COORDINATES,
    RowBudget,
    detection_rows,
    missing,
    not_boxes,
    numbers,
    read_table,
    segment_budget,
)
from detect.results.run_folder import find_segment_folders
from detect.results.table import DETECTIONS_FILE, SCHEMA, write_table
from detect.track import TrackerParams
from detect.track.live import LiveTracks
from detect.track.table_tracks import track_ids
from detect.waymo.schema import CAMERA, TIMESTAMP

TRACKER = "ByteTrack (detect.track: Kalman on cx, cy, w/h, h; two association passes; lost buffer in seconds)"


def track_table(table: pa.Table, class_map: ClassMap, params: TrackerParams) -> np.ndarray:
    """One track id per row of a detections table (-1: none); all -1 when it holds one timestamp.
    Only its boxes are tracked (`detection_rows`, the rule eval reads the table with): an edited row
    that is not one (NaN, infinite or inverted, a null key) gets none."""
    out = np.full(table.num_rows, -1, np.int64)
    rows = np.flatnonzero(detection_rows(table))
    timestamps = numbers(table, TIMESTAMP)[rows].astype(np.int64)
    if len(np.unique(timestamps)) < 2:
        return out
    xyxy = np.stack([numbers(table, c)[rows] for c in COORDINATES], 1)
    out[rows] = track_ids(timestamps, numbers(table, CAMERA)[rows], numbers(table, "class_id")[rows],
                          numbers(table, "score")[rows], xyxy, class_map, params)
    return out


def tracking_record(params: TrackerParams | None, ids: np.ndarray | None) -> dict[str, object] | None:
    """The manifest's `tracking`: the tracker, its parameters and how many tracks (None: not run)."""
    if params is None:
        return None
    tracks = 0 if ids is None else len(np.unique(ids[ids >= 0]))
    return {"tracker": TRACKER, "params": params.to_json(), "tracks": tracks}


@dataclasses.dataclass(frozen=True)
class Retracked:
    """What `detect track` did: one line per segment, the files it rewrote, what it left out."""

    lines: list[str]
    written: list[Path]
    notes: list[str]
    failed: int  # segments left out (busy, unreadable)


def retrack_all(results: Path, class_map: ClassMap, *, threshold: float | None = None,
                lost_seconds: float | None = None) -> Retracked:
    """Track ids again for every segment under `results`, from its detections.parquet alone (no model):
    the column and the manifest's `tracking` are rewritten atomically, in the segment's lock. The
    tracker's score thresholds follow `threshold` (default: the drawing threshold the run recorded)."""
    found = find_segment_folders(results)
    folders = found.with_manifest()
    if not folders:
        raise InputError(found.nothing_found(results))
    lines: list[str] = []
    written: list[Path] = []
    notes = list(found.skipped)
    failures: list[str] = []
    pictures = False  # a retracked segment has frames or animations, which show the ids they were drawn with
    for directory in folders:
        try:
            lock = SegmentLock(directory) if is_marked(directory) else None
        except OutputError as err:
            failures.append(str(err))
            continue
        try:
            lines.append(_retrack(directory, class_map, threshold, lost_seconds, written, notes))
            pictures = pictures or has_pictures(directory)
        except (InputError, OutputError) as err:
            failures.append(str(err))
        finally:
            if lock is not None:
                lock.release()
    if failures and not lines:
        raise InputError(failures[0] if len(failures) == 1 else f"{failures[0]} (and {len(failures) - 1} more)")
    notes += [f"{failure}; left out" for failure in failures]
    if pictures:
        notes.append(f"frames and animations drawn before show the old track ids; `detect redraw {results}` draws the "
                     f"new ones; tables and eval read them now")
    return Retracked(lines, written, notes, len(failures))


def _retrack(directory: Path, class_map: ClassMap, threshold: float | None, lost_seconds: float | None,
             written: list[Path], notes: list[str]) -> str:
    manifest = read_manifest(directory)
    params = tracker_params(manifest.threshold if threshold is None else threshold,
                            **({} if lost_seconds is None else {"lost_seconds": lost_seconds}))
    path = directory / DETECTIONS_FILE
    table = _read_table(path, segment_budget(directory, manifest.segment_context_name))
    try:
        ids = track_table(table, class_map, params)
    except ValueError as err:  # a column that holds what is not a number
        raise InputError(f"{path}: {err}") from None
    note = not_boxes(path, detection_rows(table), "they get no track id")
    if note is not None:
        notes.append(note)
    write_table(path, table, lambda _: ids)
    write_manifest(directory / MANIFEST_FILE, manifest.with_sections(tracking=tracking_record(params, ids)))
    written += [path, directory / MANIFEST_FILE]
    tracks = len(np.unique(ids[ids >= 0]))
    return f"{printable(manifest.segment_context_name)}: {tracks} track(s) over {int((ids >= 0).sum())} of {len(ids)} boxes"


def live_tracking_notes(name: str, live: LiveTracks | None, results: Mapping[FrameKey, FrameResult],
                        ids: np.ndarray) -> list[str]:
    """What the frames drawn while a segment ran show of its table's track ids (`ids`, in the
    table's row order): nothing to say when they show exactly those."""
    name = printable(name)
    if live is None:
        return [f"{name}: frames drawn without track ids; `detect redraw` draws them"]
    notes = []
    if live.held_back:
        cameras = ", ".join(CameraName(c).name for c in sorted(live.held_back))
        notes.append(f"{name}: {cameras} images came out of time order and were drawn without track ids from "
                     "there on; `detect redraw` draws them")
    offset, other = 0, 0
    for result in sorted(results.values(), key=lambda r: (r.key.frame_timestamp_micros, int(r.key.camera_name))):
        drawn, n = live.drawn_ids(result.key), len(result.detections)
        other += drawn is not None and not np.array_equal(drawn, ids[offset:offset + n])
        offset += n
    if other:
        notes.append(f"{name}: {other} image(s) drawn with track ids other than the table's; "
                     "`detect redraw` draws the table's")
    return notes


def tracker_params(threshold: float, **overrides: float) -> TrackerParams:
    """The tracker's parameters around a drawing threshold (kept inside 0.05-0.95: a threshold of 0
    or 1 draws everything or nothing, the tracker still needs a high score between its low and 1)."""
    try:
        return TrackerParams.for_threshold(min(max(float(threshold), 0.05), 0.95), **overrides)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _read_table(path: Path, budget: RowBudget) -> pa.Table:
    """detections.parquet in its schema, its track_id column null (the ids it held are replaced), its
    context columns kept (null where it has none)."""
    columns = [c for c in SCHEMA.names if c != "track_id" and c not in box_context.NAMES]
    table = read_table(path, [*columns, *box_context.NAMES], budget, "detections table")
    absent = missing(table, columns)
    if absent:
        raise InputError(f"{path}: not a detections table (no {', '.join(absent)} column)")
    table = box_context.with_absent(table.append_column("track_id", pa.nulls(table.num_rows, pa.int64())))
    try:
        return table.select(SCHEMA.names).cast(SCHEMA)
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a detections table ({first_line(err)})") from None
