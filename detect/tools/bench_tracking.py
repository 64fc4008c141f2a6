"""`make bench`'s tracking row: what tracking adds to `detect segment` with default outputs, and the
tracker's memory over a 1,000-image segment.

    python -m detect.tools.bench --tracking-only [--images 200] [--big-images 1000] [--repeats 3]

Share: per repeat, a `detect segment` run with default outputs (tracking on, as by default) is timed
whole, and inside it every call of the tracker: live (`LiveTracks.update`, image by image as the
frames are drawn) and at the end (`track_table` on the finished table); the share is the median of
the per-repeat ratios. Memory: the tracker fed a 1,000-image segment's
boxes image by image, tracemalloc's count of what it holds (inputs allocated before) at every 200
images, and the tracks it holds; the same on drifting synthetic objects that are born and die.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.engine import lifecycle
from detect.engine.loading import choose_settings, model_facts
from detect.engine.spec import DEFAULT_SCORE_FLOOR
from detect.model.classmap import default_class_map
from detect.model.detector import Detector
from detect.model.inputs import parse_input_size
from detect.render.draw import DrawStyle
from detect.results.table import DETECTIONS_FILE
from detect.results.track_ids import tracker_params
from detect.tools.bench_runs import pipeline
from detect.tools.bench_targets import verdict
from detect.tools.bench_track import synthetic_frames
from detect.track import SegmentTracker, TrackerParams, group_keys
from detect.track.live import LiveTracks
from detect.waymo.schema import CAMERA, TIMESTAMP

MAX_SHARE = 0.03  # issue 34: tracking adds at most 3% to `detect segment` with default outputs
CHECKPOINT = 200  # images between memory samples


@dataclasses.dataclass(frozen=True)
class TrackingCost:
    """The tracking row: its share of a segment run, and the tracker's memory as the images go by."""

    images: int
    boxes: int  # rows of the 200-image table (down to the score floor)
    segment_s: list[float]  # per repeat: `detect segment`, default outputs, wall
    live_s: list[float]  # per repeat: the tracker in that run, image by image as frames are drawn
    finish_s: list[float]  # per repeat: the tracker in that run, on the finished table
    share: float  # median of (live_s + finish_s) / segment_s
    memory_images: list[int]  # images fed at each sample
    memory_kb: list[float]  # what the tracker holds then (tracemalloc), the segment's boxes
    tracks_held: list[int]
    drifting_kb: list[float]  # the same on drifting synthetic objects with births and deaths
    drifting_tracks: list[int]

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def tracking_share(detector, facts, segment: Path, out: Path, repeats: int,
                   **overrides: object) -> tuple[list[float], list[float], list[float], int]:
    """Per repeat: the wall time of a default `detect segment` run, and the time its tracker took in
    it: live, image by image as the frames are drawn, and at the end, on the finished table."""
    walls, live, finish = [], [], []
    boxes = 0
    for _ in range(repeats):
        during: list[float] = []
        end: list[float] = []
        with timed(LiveTracks, "update", during), timed(lifecycle, "track_table", end):
            start = time.perf_counter()
            pipeline(detector, facts, segment, out, **overrides)
            walls.append(time.perf_counter() - start)
        live.append(sum(during))
        finish.append(sum(end))
        boxes = pq.read_metadata(next(out.rglob(DETECTIONS_FILE))).num_rows
    return walls, live, finish, boxes


@contextlib.contextmanager
def timed(owner: object, name: str, seconds: list[float]) -> Iterator[None]:
    """`owner.name` (a function or method) timed call by call into `seconds` while the block runs."""
    original = getattr(owner, name)

    def timing(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    setattr(owner, name, timing)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _threshold(segment_dir: Path) -> float:
    """The drawing threshold the run recorded (the tracker's thresholds follow it)."""
    manifest = json.loads((segment_dir / "manifest.json").read_text())
    return float(manifest["settings"]["draw"]["threshold"])


def images_of(table: pa.Table) -> list[tuple[int, int, np.ndarray]]:
    """(timestamp, camera, rows) per image of a detections table, in time then camera order."""
    ts = table.column(TIMESTAMP).to_numpy(zero_copy_only=False).astype(np.int64)
    cam = table.column(CAMERA).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((cam, ts))
    keys = np.stack([ts[order], cam[order]], 1)
    starts = np.flatnonzero(np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)])
    return [(int(ts[order[b]]), int(cam[order[b]]), order[b:e]) for b, e in zip(starts, np.r_[starts[1:], len(order)],
                                                                             strict=True)]


def repeated(table: pa.Table, images: int) -> list[tuple[int, int, np.ndarray]]:
    """`images` images of `table`'s boxes, its timestamps repeated at 10 Hz past its end: a longer
    run of the benchmark's segment (one frame, repeated) has these boxes."""
    per_image = images_of(table)
    cameras = len({c for _, c, _ in per_image})
    out = []
    for n in range(images):
        _, camera, rows = per_image[n % len(per_image)]
        out.append((n // cameras * 100_000, camera, rows))
    return out


def tracker_memory(stream: list[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]],
                   params: TrackerParams, every: int = CHECKPOINT) -> tuple[list[int], list[float], list[int]]:
    """Feed (timestamp, camera, xyxy, scores, groups) images to one SegmentTracker; every `every`
    images, the KB it holds (allocated since the start; the inputs existed before) and its tracks."""
    tracemalloc.start()
    try:
        tracker = SegmentTracker(params)
        base = tracemalloc.get_traced_memory()[0]
        at, kb, held = [], [], []
        for n, (ts, camera, xyxy, scores, groups) in enumerate(stream, 1):
            tracker.update(camera, ts, xyxy, scores, groups)
            if n % every == 0:
                at.append(n)
                kb.append((tracemalloc.get_traced_memory()[0] - base) / 1024)
                held.append(tracker.tracks_held())
    finally:
        tracemalloc.stop()
    return at, kb, held


def memory_rows(table: pa.Table, images: int, params: TrackerParams) -> tuple[list[int], list[float], list[int]]:
    """`tracker_memory` over `images` images of the segment's boxes."""
    xyxy = np.stack([table.column(c).to_numpy(zero_copy_only=False) for c in ("xmin", "ymin", "xmax", "ymax")], 1)
    scores = table.column("score").to_numpy(zero_copy_only=False).astype(np.float64)
    groups = group_keys(table.column("class_id").to_numpy(zero_copy_only=False), default_class_map())
    stream = [(ts, cam, xyxy[rows], scores[rows], groups[rows]) for ts, cam, rows in repeated(table, images)]
    return tracker_memory(stream, params)


def drifting_rows(images: int, params: TrackerParams, boxes: int = 30,
                  every: int = CHECKPOINT) -> tuple[list[int], list[float], list[int]]:
    """`tracker_memory` on bench_track's drifting objects (one in forty reborn a frame), one camera."""
    frames = synthetic_frames(boxes, images)
    stream = [(k * 100_000, 1, xyxy, scores, np.ones(len(scores), np.int64)) for k, (xyxy, scores) in enumerate(frames)]
    return tracker_memory(stream, params, every)


def tracking_cost(model: Path, segment: Path, out: Path, images: int, big_images: int, repeats: int) -> TrackingCost:
    """The row for `model` (its own input size and NMS, as `detect segment` uses them) on `segment`."""
    chosen = choose_settings(model)
    start = time.perf_counter()
    # as `detect segment` loads it: every box down to the score floor kept, the model's own threshold drawn
    detector = Detector(model, threshold=min(DEFAULT_SCORE_FLOOR, chosen.threshold), nms_iou=chosen.nms_iou)
    facts = model_facts(detector, time.perf_counter() - start)
    walls, live, finish, boxes = tracking_share(detector, facts, segment, out, repeats,
                                            input_size=parse_input_size(chosen.input_size),
                                            style=DrawStyle(threshold=chosen.threshold))
    table = pq.read_table(next(out.rglob(DETECTIONS_FILE)))
    params = tracker_params(_threshold(next(out.rglob(DETECTIONS_FILE)).parent))
    at, kb, held = memory_rows(table, big_images, params)
    _, drift_kb, drift_held = drifting_rows(big_images, params)
    share = statistics.median((a + b) / w for a, b, w in zip(live, finish, walls, strict=True))
    return TrackingCost(images, boxes, walls, live, finish, share, at, kb, held, drift_kb, drift_held)


def tracking_lines(cost: TrackingCost) -> list[str]:
    seconds = "; ".join(f"{a:.2f}+{b:.2f}/{w:.1f}" for a, b, w in zip(cost.live_s, cost.finish_s, cost.segment_s,
                                                                       strict=True))
    every = cost.memory_images[0] if cost.memory_images else CHECKPOINT
    memory = " ".join(f"{k:.0f}/{h}" for k, h in zip(cost.memory_kb, cost.tracks_held, strict=True))
    drifting = " ".join(f"{k:.0f}/{h}" for k, h in zip(cost.drifting_kb, cost.drifting_tracks, strict=True))
    return ["", f"tracking in `detect segment`, default outputs, {cost.images} images ({cost.boxes} boxes in the table):",
            f"  share of the run {100 * cost.share:.2f}% " + verdict(100 * cost.share, 100 * MAX_SHARE, above=False),
            f"  per repeat, s (live + at the end / run): {seconds}",
            f"  tracker KB/tracks every {every} of {max(cost.memory_images, default=0)} images: {memory}",
            f"  the same on drifting objects born and dying: {drifting}"]
