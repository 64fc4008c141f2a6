"""What `detect eval` and `detect export` read: the segments of a results directory, each with its
detections table, its labels and the facts of the run that made it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.names import printable
from detect.core.records import FrameKey, Labels
from detect.sinks import box_context
from detect.sinks.fingerprint import Sources, segment_sources
from detect.sinks.ground_truth import GROUND_TRUTH_FILE, GroundTruthTable, read_ground_truth_table
from detect.sinks.results_folder import Manifest, finished_frames, processed_images, read_manifest
from detect.sinks.results_tables import (
    COORDINATES,
    DETECTION_COLUMNS,
    RowBudget,
    detection_rows,
    missing,
    not_boxes,
    read_table,
    read_track_ids,
    segment_budget,
)
from detect.sinks.results_tables import numbers as values
from detect.sinks.run_folder import SegmentFolders, find_segment_folders
from detect.sinks.table import DETECTIONS_FILE
from detect.waymo.camera_labels import SegmentLabels, camera_box_segments, labels_from_camera_box
from detect.waymo.images import MAX_SIDE, check_size
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP


@dataclasses.dataclass(frozen=True, eq=False)
class DetectionRows:
    """A detections table as arrays (one entry per box)."""

    keys: list[FrameKey]
    class_ids: np.ndarray
    scores: np.ndarray
    xyxy: np.ndarray
    track_ids: np.ndarray | None = None  # int64, -1 where none; None: a table written before tracking
    range_m: np.ndarray | None = None  # float32 metres, NaN where not known; None: a table written before ranges

    def __len__(self) -> int:
        return len(self.keys)


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentResults:
    """One segment's outputs: where, what the run recorded, its boxes and its labels."""

    directory: Path
    name: str
    manifest: Manifest
    detections: DetectionRows
    labels: Mapping[FrameKey, Labels]
    images: frozenset[FrameKey]  # every image the run processed, labeled or not
    labels_dropped: int = 0  # unusable label rows (NaN, negative, unknown type or camera), when run and here
    # (width, height) of each image as the run decoded it (its journal); empty for results without one
    sizes: Mapping[FrameKey, tuple[int, int]] = dataclasses.field(default_factory=dict)
    # fingerprints of detections.parquet and ground_truth.parquet, taken before reading them
    sources: Sources = dataclasses.field(default_factory=dict)
    # why the labels `--gt` named were not used: they name no image of this segment the run processed
    labels_mismatch: str | None = None
    # what reading left out, one line each (rows of detections.parquet that name another segment)
    notes: tuple[str, ...] = ()
    # each label's range from the car (float32 metres, NaN where not known), in its image's label order
    label_ranges: Mapping[FrameKey, np.ndarray] = dataclasses.field(default_factory=dict)
    # each image's time of day, location and weather (None where not recorded), from either table
    conditions: Mapping[FrameKey, tuple[str | None, ...]] = dataclasses.field(default_factory=dict)

    @property
    def threshold(self) -> float:
        return self.manifest.threshold

    @property
    def model_classes(self) -> list[int] | None:
        """The class ids the model knows (None: the whole COCO label map)."""
        known = self.manifest.model.knows_classes
        return None if known is None else list(known)

    @property
    def source(self) -> tuple[Path, Sources]:
        """Where the segment's results are and their fingerprints (what an eval.json records)."""
        return self.directory, self.sources

    @property
    def input_path(self) -> str | None:
        """The segment file the run read, as its manifest names it (None when it names none)."""
        return self.manifest.input_path


def find_segments(results: Path) -> SegmentFolders:
    """Segment directories at or under `results` that hold a manifest (the finder every results
    command shares), and what was left out on the way; InputError when there are none."""
    found = find_segment_folders(results)
    if not found.with_manifest():
        raise InputError(found.nothing_found(results))
    return found


def load_segment(directory: Path, gt: str | None = None) -> SegmentResults:
    """A segment's results; its labels from `gt` (camera_box file or folder) or `ground_truth.parquet`."""
    sources = segment_sources(directory)  # first: a rerun while this reads shows as a stale eval.json
    manifest = read_manifest(directory)
    name = manifest.segment_context_name
    budget = segment_budget(directory, name)
    table, read_notes, detection_conditions = _read_detections(directory / DETECTIONS_FILE, budget)
    detections, foreign = _own_rows(table, name)
    notes = (*read_notes, *([f"{directory / DETECTIONS_FILE}: {foreign} row(s) name another segment than "
                             f"{printable(name, 64)}; left out"] if foreign else []))
    truth = (read_ground_truth_table(directory / GROUND_TRUTH_FILE, budget)
             if (directory / GROUND_TRUTH_FILE).is_file() else GroundTruthTable({}, 0, {}, {}))
    written, dropped, label_ranges = truth.labels, truth.dropped, truth.ranges
    processed = processed_images(directory, name, detections.keys, written)
    mismatch = None
    if gt is not None:
        chosen = labels_from_camera_box(gt, name)
        labels: Mapping[FrameKey, Labels] = chosen.by_key
        dropped = chosen.dropped
        mismatch = _labels_mismatch(gt, chosen, name, processed)
        label_ranges = {}  # the labels --gt names have no range
        if mismatch is not None:
            labels = {}
    else:
        labels = written
        dropped += manifest.labels_dropped
    sizes = {k: (r.width, r.height) for k, r in finished_frames(directory, name).items()
             if check_size(r.width, r.height, MAX_SIDE**2) is None}
    conditions = {**truth.conditions, **detection_conditions}
    return SegmentResults(directory, name, manifest, detections, labels, processed, dropped, sizes, sources, mismatch,
                          notes, label_ranges, conditions)


def _own_rows(rows: DetectionRows, segment: str) -> tuple[DetectionRows, int]:
    """The rows of `segment` and how many name another one (an edited or concatenated table):
    those would be boxes on images this segment's results do not hold."""
    own = np.array([k.segment_context_name == segment for k in rows.keys], bool)
    if own.all():
        return rows, 0
    keep = np.flatnonzero(own)
    tracks = None if rows.track_ids is None else rows.track_ids[keep]
    ranges = None if rows.range_m is None else rows.range_m[keep]
    return (DetectionRows([rows.keys[i] for i in keep], rows.class_ids[keep], rows.scores[keep], rows.xyxy[keep],
                          tracks, ranges), len(rows) - len(keep))


def _labels_mismatch(gt: str, chosen: SegmentLabels, segment: str, processed: frozenset[FrameKey]) -> str | None:
    """One line when the labels `--gt` named hold no image of `segment` the run processed: whose
    labels they are instead (another segment's, or this one's at other timestamps or cameras)."""
    if any(key in processed for key in chosen.by_key):
        return None
    expected = printable(segment, 64)
    if chosen.by_key:
        return (f"{chosen.origin} labels {len(chosen.by_key)} image(s) of segment {expected}, none of them one this "
                f"run processed (other timestamps or cameras)")
    others = [printable(s, 64) for s in camera_box_segments(gt, segment) if s != segment]
    if others:
        held = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        return f"{chosen.origin} holds the labels of segment {held}, not of {expected}"
    return f"{chosen.origin} has no usable label of segment {expected}"


def no_labels_message(results: Path, segments: list[tuple[str, Path]]) -> str:
    """Why nothing could be evaluated, for segments given as (name, directory)."""
    names = ", ".join(printable(name, 64) for name, _ in segments[:3]) + ("..." if len(segments) > 3 else "")
    if any((directory / GROUND_TRUTH_FILE).is_file() for _, directory in segments):
        why = (f"their labels have no rows for the images processed: {GROUND_TRUTH_FILE} is empty, as the labels "
               f"the run found were")
    else:
        why = f"no {GROUND_TRUTH_FILE}: the input had no camera_box file or camera_labels"
    return f"{results}: no labels for {names} ({why}); name a camera_box file or folder with --gt PATH"


def _read_detections(path: Path, budget: RowBudget) -> tuple[DetectionRows, list[str], dict[FrameKey, tuple[str | None, ...]]]:
    """The table's boxes (`detection_rows`: an edited table's other rows are left out, never fatal),
    what reading it left out, one line each (rows that are not boxes, track ids it cannot use), and
    its images' conditions."""
    table = read_table(path, [*DETECTION_COLUMNS, "track_id", *box_context.NAMES], budget, "detections table")
    absent = missing(table, DETECTION_COLUMNS)
    if absent:
        raise InputError(f"{path}: not a detections table (no {', '.join(absent)} column)")
    try:
        ok = detection_rows(table)
        numbers = {c: values(table, c) for c in (TIMESTAMP, CAMERA, "class_id", "score", *COORDINATES)}
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a detections table ({first_line(err)})") from None
    rows = np.flatnonzero(ok)
    segments = table.column(SEGMENT).to_pylist()
    timestamps = table.column(TIMESTAMP).to_numpy(zero_copy_only=False)
    keys = _keys(segments, timestamps, numbers[CAMERA], rows)
    xyxy = np.stack([numbers[c][rows].astype(np.float32) for c in COORDINATES], axis=1).reshape(-1, 4)
    tracks = read_track_ids(table, ok, path)
    notes = [note for note in (not_boxes(path, ok), tracks.note) if note is not None]
    ranges, conditions = _context(table, keys, rows)
    return (DetectionRows(keys, numbers["class_id"][rows].astype(np.int32), numbers["score"][rows].astype(np.float32),
                          xyxy, None if tracks.ids is None else tracks.ids[rows], ranges), notes, conditions)


def _context(table: pa.Table, keys: list[FrameKey], rows: np.ndarray) -> tuple[np.ndarray | None,
                                                                                dict[FrameKey, tuple[str | None, ...]]]:
    """The kept rows' ranges (None: no range column) and their images' conditions; a context column
    of another type (an edited table) reads as none."""
    ranges = None
    if box_context.RANGE in table.column_names:
        try:
            ranges = box_context.ranges_of(values(table, box_context.RANGE)[rows])
        except (pa.ArrowException, ValueError):
            ranges = None
    data = {name: table.column(name).to_pylist() for name in box_context.CONDITIONS if name in table.column_names}
    firsts: dict[FrameKey, list[int]] = {}
    for position, key in enumerate(keys):
        firsts.setdefault(key, [int(rows[position])])
    return ranges, box_context.conditions_of(data, firsts)


def _keys(segments: list[object], timestamps: np.ndarray, cameras: np.ndarray, rows: np.ndarray) -> list[FrameKey]:
    """Each kept row's image key; one FrameKey per image, shared by its boxes (a tiled run's table
    has a few hundred images and tens of thousands of boxes)."""
    made: dict[tuple[object, int, int], FrameKey] = {}
    keys = []
    for segment, timestamp, camera in zip([segments[i] for i in rows], timestamps[rows].tolist(),
                                          cameras[rows].astype(np.int64).tolist(), strict=True):
        key = made.get((segment, timestamp, camera))
        if key is None:
            key = made[segment, timestamp, camera] = FrameKey(str(segment), int(timestamp), CameraName(camera))
        keys.append(key)
    return keys
