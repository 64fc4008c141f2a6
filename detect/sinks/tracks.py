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
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.errors import InputError, OutputError, UsageError, first_line
from detect.core.files import UnreadableFileError, read_regular
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.model.classmap import ClassMap
from detect.sinks.layout import SegmentLock, has_pictures, is_marked
from detect.sinks.manifest import MANIFEST_FILE, write_manifest
from detect.sinks.results_folder import read_manifest
from detect.sinks.run_folder import find_segment_folders
from detect.sinks.table import DETECTIONS_FILE, SCHEMA, write_table
from detect.track import TrackerParams
from detect.track.live import LiveTracks
from detect.track.table_tracks import track_ids
from detect.waymo.schema import CAMERA, TIMESTAMP

TABLE_LIMIT = 1 << 32  # bytes: a 1,000-image segment's table is a few MB; 4 GiB is an edit, not a run
TRACKER = "ByteTrack (detect.track: Kalman on cx, cy, w/h, h; two association passes; lost buffer in seconds)"


def track_table(table: pa.Table, class_map: ClassMap, params: TrackerParams) -> np.ndarray:
    """One track id per row of a detections table (-1: none); all -1 when it holds one timestamp."""
    timestamps = table.column(TIMESTAMP).to_numpy(zero_copy_only=False).astype(np.int64)
    if len(np.unique(timestamps)) < 2:
        return np.full(table.num_rows, -1, np.int64)
    xyxy = np.stack([table.column(c).to_numpy(zero_copy_only=False) for c in ("xmin", "ymin", "xmax", "ymax")], 1)
    return track_ids(timestamps, table.column(CAMERA).to_numpy(zero_copy_only=False),
                     table.column("class_id").to_numpy(zero_copy_only=False),
                     table.column("score").to_numpy(zero_copy_only=False), xyxy, class_map, params)


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
            lines.append(_retrack(directory, class_map, threshold, lost_seconds, written))
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
             written: list[Path]) -> str:
    manifest = read_manifest(directory)
    params = tracker_params(manifest.threshold if threshold is None else threshold,
                            **({} if lost_seconds is None else {"lost_seconds": lost_seconds}))
    path = directory / DETECTIONS_FILE
    table = _read_table(path)
    try:
        ids = track_table(table, class_map, params)
    except ValueError as err:  # an edited table: a camera Waymo does not have, a negative class id
        raise InputError(f"{path}: {err}") from None
    write_table(path, table, lambda _: ids)
    data = dict(manifest.data)
    data["tracking"] = tracking_record(params, ids)
    write_manifest(directory / MANIFEST_FILE, data)
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


def _read_table(path: Path) -> pa.Table:
    """detections.parquet with a null track_id column added when it was written before tracking."""
    try:
        table = pq.read_table(pa.BufferReader(read_regular(path, limit=TABLE_LIMIT, follow_links=False)))
    except (UnreadableFileError, OSError, pa.ArrowException) as err:
        raise InputError(f"{path}: not a readable detections table ({first_line(err)})") from None
    missing = [c for c in SCHEMA.names if c not in table.column_names and c != "track_id"]
    if missing:
        raise InputError(f"{path}: not a detections table (no {', '.join(missing)} column)")
    if "track_id" not in table.column_names:
        table = table.append_column("track_id", pa.nulls(table.num_rows, pa.int64()))
    return table.select(SCHEMA.names).cast(SCHEMA)
