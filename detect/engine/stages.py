"""The per-image steps both engines run, so pixels, boxes and error texts are the same everywhere.

plan (which images, which are duplicates) -> detect (a batch, isolating a failing image) ->
render (draw, write the frame, prepare the animation frame).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from detect.core.cameras import CameraName
from detect.core.errors import error_text
from detect.core.records import Detections, FrameFailure, FrameKey, FrameResult, Labels
from detect.engine.spec import SegmentJob
from detect.model.inputs import DecodedImage
from detect.render.draw import draw_detections, paint_watermark
from detect.render.mosaic_tile import detection_boxes, draw_mosaic_tile, error_boxes, shrink
from detect.render.trails import numbered
from detect.render.verdicts import draw_errors, judge, judged_legend
from detect.results.animations import AnimationFrame, mosaic_tile_width, prepare_animation_frame
from detect.results.frames import write_frame
from detect.results.mosaic_tiles import write_tile
from detect.waymo.readers import SegmentKeys
from detect.waymo.selection import FrameFilter, duplicate_rows, select

READ, DECODE, DETECT, RENDER = "read", "decode", "detect", "render"


class BatchDetector(Protocol):
    """What the engines need of a detector: `detect.model.Detector`, or a fake in tests."""

    batch_size: int

    def __call__(self, images: np.ndarray, sizes: Sequence[tuple[int, int]] | None = None) -> list[Detections]: ...


@dataclasses.dataclass
class StageTimings:
    """Seconds per stage, summed from any thread; worker stages are thread CPU time."""

    values: dict[str, float] = dataclasses.field(default_factory=dict)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def add(self, stage: str, seconds: float) -> None:
        with self.lock:
            self.values[stage] = self.values.get(stage, 0.0) + seconds


@dataclasses.dataclass(frozen=True)
class Rendered:
    """A frame drawn and written: its result, and its animation frame when animations are on."""

    result: FrameResult
    animation: AnimationFrame | None


def plan_frames(keys: SegmentKeys, frame_filter: FrameFilter) -> tuple[list[FrameKey], list[FrameFailure]]:
    """The images to process, in (timestamp, camera) order, and one failure per duplicate image."""
    index = keys.index
    segment = keys.segment_context_name

    def key(row: int) -> FrameKey:
        return FrameKey(segment, int(index.timestamps[row]), CameraName(int(index.cameras[row])))

    planned = [key(r) for r in select(index, frame_filter)]
    duplicates = [
        FrameFailure(key(r), READ, f"duplicate image: this (timestamp, camera) key appears again at position "
                                   f"{int(index.positions[r])} of the file; the first one is used")
        for r in duplicate_rows(index, frame_filter)
    ]
    return planned, duplicates


def detect_images(detector: BatchDetector, batch: list[DecodedImage], keys: list[FrameKey]) -> list[Detections | FrameFailure]:
    """Detections per image; if a batch fails, retry image by image to isolate the bad one."""
    images = np.stack([d.model_input for d in batch])
    sizes = [(d.width, d.height) for d in batch]
    try:
        return list(detector(images, sizes))
    except Exception as err:
        if len(batch) == 1:
            return [FrameFailure(keys[0], DETECT, error_text(err))]
    outcomes: list[Detections | FrameFailure] = []
    for decoded, key in zip(batch, keys, strict=True):
        outcomes.extend(detect_images(detector, [decoded], [key]))
    return outcomes


def render_frame(decoded: DecodedImage, key: FrameKey, detections: Detections, segment_dir: Path,
                 job: SegmentJob, timings: StageTimings, labels: Labels | None = None,
                 trails: Mapping[int, np.ndarray] | None = None) -> Rendered:
    """Thread worker: `render_pixels` on the decoded frame, its step times added to `timings`."""
    result = FrameResult(key, decoded.width, decoded.height, detections)
    if not job.settings.needs_full_frames:
        return Rendered(result, None)
    if decoded.full is None:
        raise ValueError(f"{key}: the full frame was not kept, so it cannot be drawn")
    frame = decoded.full if decoded.full.flags.writeable else decoded.full.copy()  # drawn on in place
    animation, seconds = render_pixels(frame, key, detections, segment_dir, job, labels, trails)
    for stage, value in seconds.items():
        timings.add(stage, value)
    return Rendered(result, animation)


def render_pixels(frame: np.ndarray, key: FrameKey, detections: Detections, segment_dir: Path,
                  job: SegmentJob, labels: Labels | None = None,
                  trails: Mapping[int, np.ndarray] | None = None) -> tuple[AnimationFrame | None, dict[str, float]]:
    """Draw on `frame` in place (the labels first, when asked; a tracked image, `detections.track_ids`
    set, with its ids as its camera numbers them and the tracks' `trails`, keyed by the segment's ids),
    write it, prepare its animation frame; the mosaic's tile is the raw frame shrunk, then drawn
    for the size the mosaic is shown at (kept beside the frames when frames are written, for the
    animations rebuilt from them). The same code runs in a render thread or a render process;
    returns the animation frame and the thread CPU seconds of each step."""
    settings = job.settings
    seconds: dict[str, float] = {}
    t0 = time.thread_time()
    raw_tile, scale = shrink(frame, mosaic_tile_width(settings.gif_width))  # before the frame is drawn on
    drawn_trails = None
    if detections.track_ids is not None:
        detections, drawn_trails = numbered(detections, trails or {}, int(key.camera_name))
    if job.rules is not None and labels is not None:
        judged = judge(detections, labels, job.rules, settings.style, drawn_trails)
        draw_errors(frame, judged, line_width=settings.style.line_width)
        annotated = paint_watermark(frame, settings.style)
        boxes = error_boxes(judged, judged_legend(judged))
    else:
        drawn = draw_detections(frame, detections, settings.style, in_place=True, trails=drawn_trails)  # ours
        assert isinstance(drawn, np.ndarray)
        annotated = drawn
        boxes = detection_boxes(detections, settings.style, drawn_trails)
    tile = draw_mosaic_tile(raw_tile, boxes, scale, settings.style.watermark)
    t1 = time.thread_time()
    seconds["draw"] = t1 - t0
    if settings.write_frames:
        write_frame(segment_dir, key, annotated, settings.frame_format)
        # the mosaic is built from the tile as kept (as `detect gif` builds it); without animations
        # the tile is only kept for it
        tile = write_tile(segment_dir, key, tile, read_back=settings.animations) or tile
        t2 = time.thread_time()
        seconds["frame_write"] = t2 - t1
        t1 = t2
    animation = None
    if settings.animations:
        animation = prepare_animation_frame(annotated, key, settings.gif_width, gif=settings.gif, tile=tile)
        seconds["animation_prepare"] = time.thread_time() - t1
    return animation, seconds


def sorted_failures(failures: Iterable[FrameFailure]) -> tuple[FrameFailure, ...]:
    """In (timestamp, camera) order, whichever engine or thread found them first."""
    return tuple(sorted(failures, key=lambda f: f.key.order))


def count_invalid(results: Iterable[FrameResult]) -> int:
    return sum(r.detections.invalid for r in results)
