"""The local engine: reader -> tf.data decode -> batched detector -> render pool -> ordered sinks.

Stages overlap and every queue is bounded: tf.data decodes ahead of the model (prefetch), the
model works on batches while render workers draw and encode the previous ones, and one ordered
consumer feeds the animations and the segment's journal. Memory stays flat however long the
segment is. A frame that fails anywhere is recorded and skipped; the run goes on. Frames are drawn and encoded
in render processes or threads (`detect.engine.render_pool`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from detect.core.errors import error_text
from detect.core.records import CameraFrame, Detections, FrameFailure, FrameKey, Labels
from detect.engine.events import ProgressFactory
from detect.engine.lifecycle import Clock, SegmentLifecycle
from detect.engine.ordered import OrderedConsumer
from detect.engine.outcomes import SegmentReport
from detect.engine.render_pool import Renderer, open_renderer
from detect.engine.spec import SegmentJob, SegmentSettings
from detect.engine.stages import DECODE, RENDER, BatchDetector, Rendered, StageTimings, detect_images
from detect.engine.tuning import lower_thread_priority
from detect.model.facts import ModelFacts
from detect.model.inputs import DecodedImage, decode_error, decode_stream, resize_images
from detect.model.tiles import TiledDetector
from detect.results.animations import AnimationSet, rebuild_animations
from detect.track.live import LiveTracks
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.sources import SegmentSource

LOCAL_ENGINE = {"name": "local"}


def process_segment(
    source: SegmentSource,
    out_root: Path,
    detector: BatchDetector,
    settings: SegmentSettings,
    *,
    model_facts: ModelFacts,
    progress: ProgressFactory | None = None,
    clock: Clock = time.perf_counter,
    claims: dict[str, str] | None = None,
    keys: SegmentKeys | None = None,
) -> SegmentReport:
    """Run one segment end to end and write everything under `out_root/<segment dir>/`.

    `claims` (directory name -> input) lets a caller running many inputs refuse a second file
    whose segment would land in a directory this run already gave to another file. `keys`: the
    source's, when the caller has read them.
    """
    keys = keys or read_keys(source)
    labels = read_labels(keys, settings.ground_truth)
    job = SegmentJob.judged(settings, None if labels is None else labels.types, model_facts.knows_classes)
    if settings.tile is not None:  # full frames in, each also cut into tiles for the model
        detector = TiledDetector(detector, settings.tile, settings.input_size, resize_images)
    opened = SegmentLifecycle.open(keys, out_root, job, model_facts, claims=claims, clock=clock, labels=labels)
    if isinstance(opened, SegmentReport):
        return opened
    with opened as segment:
        loop_seconds = _run_segment(segment, source, detector, progress, clock)
        rebuild = rebuild_animations if settings.animations and segment.done and settings.write_frames else None
        engine = LOCAL_ENGINE | {"render": settings.render_mode, "workers": settings.workers}
        return segment.finish(loop_seconds=loop_seconds, engine=engine, rebuild=rebuild)


def _run_segment(segment: SegmentLifecycle, source: SegmentSource, detector: BatchDetector,
                 progress: ProgressFactory | None, clock: Clock) -> float:
    """Every pending image through the overlapped stages; the loop's wall seconds."""
    settings, timings = segment.settings, segment.timings
    bar = progress(len(segment.planned), len(segment.done)) if progress else None
    renderer = open_renderer(segment.segment_dir, segment.job, timings)
    # A resumed segment rebuilds its animations from the frames at the end instead.
    animations = None
    if settings.animations and not segment.done:
        cameras = {k.camera_name for k in segment.planned}
        animations = AnimationSet(segment.segment_dir, mp4=settings.mp4, gif=settings.gif, mosaic=len(cameras) >= 2,
                                  executor=renderer.executor)

    def consume(item: Rendered | FrameFailure) -> None:
        if isinstance(item, FrameFailure):
            segment.record(item)
        else:
            segment.record(item.result)
            if animations is not None and item.animation is not None:
                t = clock()
                animations.add(item.animation)
                timings.add("animation_append", clock() - t)
        if bar is not None:
            bar.update(1)

    done = set(segment.done)
    pending = (f for f in iter_frames(source, settings.frame_filter, segment.keys) if f.key not in done)
    loop_start = clock()
    try:
        labels = segment.labels.get if segment.labels is not None and segment.job.rules is not None else _no_labels
        live = segment.track_live() if settings.needs_full_frames else None
        _OverlappedStages(detector, renderer, settings, timings, consume, clock, labels, live).run(pending)
        if animations is not None:
            t = clock()
            animations.close()
            timings.add("animation_close", clock() - t)
    except BaseException:
        if animations is not None:
            animations.abort()
        raise
    finally:
        renderer.close()
        if bar is not None:
            bar.close()
    return clock() - loop_start


def _no_labels(key: FrameKey) -> Labels | None:
    return None


class _OverlappedStages:
    """The overlapped core. The calling thread only feeds the model; tf.data decodes ahead of it,
    a pool draws and writes, and an ordered consumer thread hands results to `consume` in order.

    Images are numbered as they are read; tf.data drops what it cannot decode, and the gap in the
    numbers tells which (`_fail_undecodable` asks why, without decoding a refused image).
    """

    def __init__(self, detector: BatchDetector, renderer: Renderer, settings: SegmentSettings,
                 timings: StageTimings, consume: Callable[[Rendered | FrameFailure], None], clock: Clock,
                 labels: Callable[[FrameKey], Labels | None], live: LiveTracks | None = None) -> None:
        self.renderer = renderer
        self.labels = labels
        self.live = live  # track ids and trails for the drawing, given on this thread in read order
        self.detector = detector
        self.settings = settings
        self.timings = timings
        self.consume = consume
        self.clock = clock
        self._frames: dict[int, CameraFrame] = {}  # read, not yet detected (the reader runs in tf.data's thread)
        self._keys: dict[int, FrameKey] = {}  # handed to the render pool (its errors need the key)
        self._lock = threading.Lock()
        self._next = 0  # every index below this one has been handed to the consumer or a batch

    def run(self, frames: Iterator[CameraFrame]) -> None:
        settings = self.settings
        groups: dict[tuple[int, ...], list[DecodedImage]] = {}
        consumer = OrderedConsumer(self.consume, self._render_failed,
                                   max_pending=2 * self.detector.batch_size + 2 * settings.workers,
                                   initializer=lower_thread_priority)
        try:
            stream = decode_stream(self._numbered(frames), input_size=settings.decode_size,
                                   max_pixels=settings.max_pixels, keep_full=settings.needs_full_frames,
                                   parallel=settings.decode_threads)
            wait_start = self.clock()
            for decoded in stream:
                self.timings.add("decode_wait", self.clock() - wait_start)
                self._fail_undecodable(consumer, decoded.index)
                self._next = decoded.index + 1
                shape = decoded.model_input.shape
                group = groups.setdefault(shape, [])
                group.append(decoded)
                if len(group) >= self.detector.batch_size:
                    self._run_batch(groups.pop(shape), consumer)
                if consumer.pending > consumer.max_pending:
                    for other in list(groups):  # every index below `_next` must be handed over first
                        self._run_batch(groups.pop(other), consumer)
                    consumer.wait_for_room()
                wait_start = self.clock()
            with self._lock:
                last = max(self._frames, default=self._next - 1) + 1
            self._fail_undecodable(consumer, last)
            for shape in list(groups):
                self._run_batch(groups.pop(shape), consumer)
        finally:
            consumer.close()

    def _numbered(self, frames: Iterator[CameraFrame]) -> Iterator[tuple[int, bytes]]:
        for index, frame in enumerate(frames):
            with self._lock:
                self._frames[index] = frame
            yield index, frame.jpeg

    def _take(self, index: int) -> CameraFrame:
        with self._lock:
            return self._frames.pop(index)

    def _render_failed(self, index: int, err: BaseException) -> FrameFailure:
        with self._lock:
            key = self._keys.pop(index)
        return FrameFailure(key, RENDER, error_text(err))

    def _run_batch(self, batch: list[DecodedImage], consumer: OrderedConsumer) -> None:
        frames = [self._take(d.index) for d in batch]
        t = self.clock()
        outcomes = detect_images(self.detector, batch, [f.key for f in frames])
        self.timings.add("detect", self.clock() - t)
        for decoded, frame, outcome in zip(batch, frames, outcomes, strict=True):
            if isinstance(outcome, Detections):
                with self._lock:
                    self._keys[decoded.index] = frame.key
                trails = None
                if self.live is not None:
                    t = self.clock()
                    outcome, trails = self.live.update(frame.key, outcome)
                    self.timings.add("track", self.clock() - t)
                consumer.put(decoded.index, self.renderer.submit(decoded, frame.key, outcome, self.labels(frame.key),
                                                                 trails))
            else:
                consumer.put(decoded.index, outcome)

    def _fail_undecodable(self, consumer: OrderedConsumer, stop: int) -> None:
        for missing in range(self._next, stop):  # tf.data dropped what it could not decode
            frame = self._take(missing)
            consumer.put(missing, FrameFailure(frame.key, DECODE, decode_error(frame.jpeg, self.settings.max_pixels)))
