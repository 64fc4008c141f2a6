"""What `detect eval` and `detect export` read: the segments of a results directory, each with its
detections table, its labels and the facts of the run that made it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from detect.core.errors import InputError
from detect.core.names import printable
from detect.core.records import FrameKey, Labels
from detect.results.detections_table import DetectionTable
from detect.results.fingerprint import Sources, segment_sources
from detect.results.ground_truth import GROUND_TRUTH_FILE, GroundTruthTable, read_ground_truth_table
from detect.results.results_folder import Manifest, finished_frames
from detect.results.run_folder import SegmentFolders, find_segment_folders
from detect.results.segment_view import SegmentView, read_segment_view
from detect.waymo.camera_labels import SegmentLabels, camera_box_segments, labels_from_camera_box
from detect.waymo.images import MAX_SIDE, check_size


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentResults:
    """One segment's outputs as `detect eval` reads them: the folder's one view (manifest, boxes,
    what reading left out; the report reads the same) with its labels and the images they cover."""

    view: SegmentView
    labels: Mapping[FrameKey, Labels]
    images: frozenset[FrameKey]  # every image the run processed, labeled or not
    labels_dropped: int = 0  # unusable label rows (NaN, negative, unknown type or camera), when run and here
    # (width, height) of each image as the run decoded it (its journal); empty for results without one
    sizes: Mapping[FrameKey, tuple[int, int]] = dataclasses.field(default_factory=dict)
    # fingerprints of detections.parquet and ground_truth.parquet, taken before reading them
    sources: Sources = dataclasses.field(default_factory=dict)
    # why the labels `--gt` named were not used: they name no image of this segment the run processed
    labels_mismatch: str | None = None
    # each label's range from the car (float32 metres, NaN where not known), in its image's label order
    label_ranges: Mapping[FrameKey, np.ndarray] = dataclasses.field(default_factory=dict)
    # each image's time of day, location and weather (None where not recorded), from either table
    conditions: Mapping[FrameKey, tuple[str | None, ...]] = dataclasses.field(default_factory=dict)

    @property
    def directory(self) -> Path:
        return self.view.directory

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def manifest(self) -> Manifest:
        return self.view.manifest

    @property
    def detections(self) -> DetectionTable:
        """Its boxes (one record, the track ids an optional column)."""
        return self.view.detections

    @property
    def notes(self) -> tuple[str, ...]:
        """What reading left out, one line each (rows of detections.parquet that name another segment)."""
        return self.view.notes

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
    view = read_segment_view(directory)
    manifest, name, detections = view.manifest, view.name, view.detections
    truth = (read_ground_truth_table(directory / GROUND_TRUTH_FILE, view.budget)
             if (directory / GROUND_TRUTH_FILE).is_file() else GroundTruthTable({}, 0, {}, {}))
    written, dropped, label_ranges = truth.labels, truth.dropped, truth.ranges
    processed = view.processed(written)
    detection_conditions = detections.image_conditions()
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
    # an image's conditions from either table: the detections' where they recorded any
    conditions = {**truth.conditions, **{k: v for k, v in detection_conditions.items() if any(v)}}
    return SegmentResults(view, labels, processed, dropped, sizes, sources, mismatch, label_ranges, conditions)


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
