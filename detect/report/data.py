"""What a report shows, read from a segment's output directory and summarized with pandas."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import FrameKey
from detect.sinks.eval_record import EvalRecord, read_eval_record
from detect.sinks.frames import list_frames
from detect.sinks.results_folder import Manifest, processed_images, read_manifest
from detect.sinks.results_tables import (
    DETECTION_COLUMNS,
    RowBudget,
    detection_rows,
    missing,
    not_boxes,
    numbers,
    read_table,
    segment_budget,
)
from detect.sinks.source_images import NamedSources
from detect.sinks.table import DETECTIONS_FILE
from detect.waymo.schema import CAMERA, TIMESTAMP

MOSAIC = "mosaic"
MIN_GAP_FRAMES = 10  # thumbnails of one camera at least 1 s apart at Waymo's 10 Hz: frames closer look alike


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentData:
    """One segment's outputs, as the report needs them."""

    directory: Path
    manifest: Manifest
    detections: pd.DataFrame  # one row per box: camera, timestamp, label, score (at or above the drawing threshold: drawn)
    threshold: float
    evaluation: EvalRecord | None
    images: frozenset[tuple[str, int]] = frozenset()  # (camera, timestamp) of every processed image, boxes or not
    # what building its page left out, one line each (a frame that cannot be read: no thumbnail, no crop)
    notes: list[str] = dataclasses.field(default_factory=list)
    sources: NamedSources = NamedSources()  # segment files the user named: its camera images are read from there

    @property
    def name(self) -> str:
        return self.manifest.segment_context_name

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
        return self.detections[self.detections["score"] >= self.threshold]

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
        return sorted({ts for _, ts in self.images})

    def frame_count(self, camera: str | None = None) -> int:
        """How many frames an animation of `camera` holds (None: the mosaic, every timestamp)."""
        return len({ts for c, ts in self.images if camera is None or c == camera})

    def boxes_per_image(self) -> pd.DataFrame:
        """Drawn boxes per processed image (rows: camera, timestamp, in camera order) and class
        (columns, most boxes first); 0 where an image has none."""
        order = {c.name: int(c) for c in CameraName}
        index = pd.MultiIndex.from_tuples(sorted(self.images, key=lambda k: (order.get(k[0], 0), k[1])),
                                          names=["camera", "timestamp"])
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
    recorded = manifest.section("counts").get("drawn")
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 0:
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
    manifest = read_manifest(directory)
    name = manifest.segment_context_name
    notes: list[str] = []
    detections = _detections(directory / DETECTIONS_FILE, segment_budget(directory, name), notes)
    evaluation = read_eval_record(directory)
    shown = detections[["camera", "timestamp"]].drop_duplicates()  # an image per pair, not a key per box
    table = [FrameKey(name, int(ts), CameraName[str(c)]) for c, ts in
             zip(shown["camera"], shown["timestamp"], strict=True) if str(c) in CameraName.__members__]
    images = processed_images(directory, name, table)
    return SegmentData(directory, manifest, detections, manifest.threshold, evaluation,
                       frozenset((k.camera_name.name, k.frame_timestamp_micros) for k in images), notes, sources=sources)


def _detections(path: Path, budget: RowBudget, notes: list[str] | None = None) -> pd.DataFrame:
    """The table's boxes (`detection_rows`, as eval reads them) as camera name, timestamp, label, score;
    a line in `notes` when some rows are not boxes."""
    columns = ["camera", "timestamp", "label", "score"]
    if not path.is_file() and not path.is_symlink():
        return pd.DataFrame(columns=columns)
    table = read_table(path, [*DETECTION_COLUMNS, "label"], budget, "detections table")
    absent = missing(table, [*DETECTION_COLUMNS, "label"])
    if absent:
        raise InputError(f"{path}: not a detections table (no {', '.join(absent)} column)")
    try:
        ok = detection_rows(table)
        rows = np.flatnonzero(ok)
        cameras, scores = numbers(table, CAMERA)[rows].astype(np.int64), numbers(table, "score")[rows]
        timestamps = table.column(TIMESTAMP).cast(pa.int64()).take(pa.array(rows)).to_numpy(zero_copy_only=False)
        labels = table.column("label").cast(pa.string()).take(pa.array(rows)).to_pandas()
    except (pa.ArrowException, ValueError) as err:
        raise InputError(f"{path}: not a readable detections table ({first_line(err)})") from None
    note = not_boxes(path, ok)
    if note is not None and notes is not None:
        notes.append(note)
    known = {int(c): c.name for c in CameraName}
    return pd.DataFrame({
        "camera": [known[c] for c in cameras.tolist()],
        "timestamp": np.asarray(timestamps, np.int64),
        "label": labels.astype(str).to_numpy(),
        "score": scores.astype(float),
    })[columns]
