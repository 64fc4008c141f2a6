"""What a report shows, read from a segment's output directory and summarized with pandas."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from detect.core.cameras import CameraName
from detect.core.errors import InputError
from detect.core.records import FrameKey
from detect.results.detections_table import DetectionTable, read_detections
from detect.results.eval_record import EvalRecord, read_eval_record
from detect.results.frames import list_frames
from detect.results.results_folder import Manifest
from detect.results.results_tables import (
    RowBudget,
    segment_budget,
)
from detect.results.segment_view import SegmentView, read_segment_view
from detect.results.source_images import NamedSources
from detect.results.table import DETECTIONS_FILE

MOSAIC = "mosaic"
MIN_GAP_FRAMES = 10  # thumbnails of one camera at least 1 s apart at Waymo's 10 Hz: frames closer look alike


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentData:
    """One segment's outputs as the report needs them: the folder's one view (manifest, boxes, the
    images processed; `detect eval` reads the same) with the boxes as a table, the evaluation and
    the pictures' sources."""

    view: SegmentView
    detections: pd.DataFrame  # one row per box: camera, timestamp, label, score (at or above the drawing threshold: drawn)
    threshold: float
    evaluation: EvalRecord | None
    # what building its page left out, one line each (a frame that cannot be read: no thumbnail, no crop)
    notes: list[str] = dataclasses.field(default_factory=list)
    sources: NamedSources = NamedSources()  # segment files the user named: its camera images are read from there

    @property
    def directory(self) -> Path:
        return self.view.directory

    @property
    def manifest(self) -> Manifest:
        return self.view.manifest

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def images(self) -> frozenset[FrameKey]:
        """Every image the run processed, boxes or not."""
        return self.view.images

    def animation(self, name: str) -> str | None:
        """`<name>.mp4` when it exists (a browser plays it), else `<name>.gif`, else None."""
        for suffix in ("mp4", "gif"):
            if (self.directory / f"{name}.{suffix}").is_file():
                return f"{name}.{suffix}"
        return None

    @property
    def cameras(self) -> list[str]:
        return [c.name for c in CameraName if c.name in set(self.detections["camera"]) or self.animation(c.name)]

    @property
    def drawn(self) -> pd.DataFrame:
        """The boxes the frames show: at or above the threshold, at most the run's `--max-boxes` an
        image (the best scores), in the table's order."""
        shown = self.detections[self.detections["score"] >= self.threshold]
        cap = self.manifest.max_boxes
        if cap is None:
            return shown
        best = shown.sort_values("score", ascending=False, kind="stable").groupby(["camera", "timestamp"]).head(cap)
        return best.sort_index()

    @property
    def capped(self) -> bool:
        """Whether `--max-boxes` left out boxes at or above the threshold on some image."""
        return len(self.drawn) < int((self.detections["score"] >= self.threshold).sum())

    @property
    def drawn_count(self) -> int:
        """How many boxes the frames show: the run's own count (`counts.drawn`, the renderer's rule: a
        paired rider is one box when errors are drawn), else the boxes of `drawn`."""
        recorded = self.manifest.counts.drawn
        return len(self.drawn) if recorded is None else recorded

    def counts(self) -> pd.DataFrame:
        """Drawn boxes per camera (rows) and class (columns), with totals."""
        drawn = self.drawn
        if drawn.empty:
            return pd.DataFrame()
        table = pd.crosstab(drawn["camera"], drawn["label"], margins=True, margins_name="all")
        order = [c.name for c in CameraName if c.name in table.index] + ["all"]
        return table.reindex(order)

    @property
    def timestamps(self) -> list[int]:
        """The segment's frames: every timestamp with a processed image, in order."""
        return sorted({k.frame_timestamp_micros for k in self.images})

    def frame_count(self, camera: str | None = None) -> int:
        """How many frames an animation of `camera` holds (None: the mosaic, every timestamp)."""
        return len({k.frame_timestamp_micros for k in self.images if camera is None or k.camera_name.name == camera})

    def boxes_per_image(self) -> pd.DataFrame:
        """Drawn boxes per processed image (rows: camera, timestamp, in camera order) and class
        (columns, most boxes first); 0 where an image has none."""
        index = pd.MultiIndex.from_tuples(sorted(((k.camera_name.name, k.frame_timestamp_micros) for k in self.images),
                                                 key=lambda k: (CameraName[k[0]], k[1])), names=["camera", "timestamp"])
        drawn = self.drawn
        counts = drawn.groupby(["camera", "timestamp", "label"]).size().unstack("label", fill_value=0)
        labels = list(drawn["label"].value_counts().index)
        return counts.reindex(index=index, columns=labels, fill_value=0).astype("int64")

    def busiest_frames(self, count: int) -> list[tuple[str, int, int, Path]]:
        """(camera, timestamp, drawn boxes, frame path) of frames with many drawn boxes, spread over
        the segment (see `spread_busiest`)."""
        frames = {(f.camera_name.name, f.frame_timestamp_micros): f.path for f in list_frames(self.directory)}
        if not frames:
            return []
        per_frame = self.drawn.groupby(["camera", "timestamp"]).size()
        boxes = {(str(camera), int(ts)): int(n) for (camera, ts), n in per_frame.items() if (camera, int(ts)) in frames}
        return [(camera, ts, boxes[(camera, ts)], frames[(camera, ts)])
                for camera, ts in spread_busiest(boxes, self.timestamps, count)]


def spread_busiest(boxes: Mapping[tuple[str, int], int], timestamps: Sequence[int], count: int) -> list[tuple[str, int]]:
    """Up to `count` (camera, timestamp) images with boxes, most boxes first, spread over the segment.

    Consecutive frames (10 Hz) look alike, so the busiest ones would all come from one moment. With
    `gap` = frames / count (at least `MIN_GAP_FRAMES`): first no two picks within `gap` frames of
    each other; then other cameras' views fill in, never within `gap` frames of a pick of the same
    camera. Fewer than `count` is fine: better than near-duplicates.
    """
    position = {ts: i for i, ts in enumerate(sorted(timestamps))}
    gap = max(MIN_GAP_FRAMES, len(position) // max(1, count))
    order = {c.name: int(c) for c in CameraName}

    def busiest_first(key: tuple[str, int]) -> tuple[int, int, int]:
        return -boxes[key], key[1], order.get(key[0], 0)

    candidates = sorted((key for key, n in boxes.items() if n > 0 and key[1] in position), key=busiest_first)
    chosen: list[tuple[str, int]] = []
    for other_cameras_fill_in in (False, True):
        for camera, ts in candidates:
            near = [t for c, t in chosen if c == camera or not other_cameras_fill_in]
            if len(chosen) < count and (camera, ts) not in chosen and all(abs(position[ts] - position[t]) >= gap for t in near):
                chosen.append((camera, ts))
    return sorted(chosen, key=busiest_first)


def drawn_count(directory: Path, manifest: Manifest) -> int | None:
    """How many boxes the segment's frames show: the manifest's count (runs since it is recorded),
    else the table's boxes at or above the drawing threshold; None when neither is known."""
    recorded = manifest.counts.drawn
    if recorded is not None:
        return recorded
    if not manifest.threshold_recorded:
        return None
    try:
        scores = _detections(directory / DETECTIONS_FILE, segment_budget(directory, manifest.segment_context_name))["score"]
    except InputError:
        return None
    return int((scores >= manifest.threshold).sum())


def load(directory: Path, sources: NamedSources = NamedSources()) -> SegmentData:
    """A segment's outputs; a directory without a manifest is refused with one line. `sources`: the
    segment files the user named (the close-ups are cut from their images)."""
    view = read_segment_view(directory, labels=True, table_required=False)
    notes = [note for note in view.notes if note != view.detections.track_note]  # the tracks section says that one
    return SegmentData(view, _table(view.detections), view.manifest.threshold, read_eval_record(directory), notes,
                       sources=sources)


def _detections(path: Path, budget: RowBudget) -> pd.DataFrame:
    """The table's boxes (`read_detections`, as eval reads them) as camera name, timestamp, label, score."""
    if not path.is_file() and not path.is_symlink():
        return _table(DetectionTable.empty(path, labels=True))
    return _table(read_detections(path, budget, labels=True))


def _table(table: DetectionTable) -> pd.DataFrame:
    """Boxes as camera name, timestamp, label, score."""
    known = {int(c): c.name for c in CameraName}
    return pd.DataFrame({
        "camera": [known[c] for c in table.cameras.tolist()],
        "timestamp": table.timestamps,
        "label": table.labels if table.labels is not None else np.zeros(len(table), str),
        "score": table.scores.astype(float),
    })[["camera", "timestamp", "label", "score"]]
