"""`detect segment`: reader -> tf.data decode -> batched detector -> render pool -> ordered sinks.

Stages overlap and every queue is bounded: tf.data decodes ahead of the model (prefetch), the
model works on batches while a thread pool draws and encodes the previous ones, and one ordered
consumer feeds the animations and the journal. Memory stays flat however long the segment is.
A frame that fails anywhere is recorded and skipped; the run goes on.

The per-stage building blocks (`detect_images`, `render_frame`, `prepare_segment_dir`,
`build_manifest`, `StageTimings`, ...) are public because the Ray engine runs the same steps in
its own tasks, so both engines write the same files.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from detect.sinks import journal

from detect.sinks import layout as outdir
from detect.sinks.animations import AnimationFrame, AnimationSet, prepare_animation_frame, rebuild_animations
from detect.model.inputs import DEFAULT_MAX_PIXELS, DecodedImage, InputSize, decode_error, decode_stream
from detect.render.draw import DrawStyle, draw_detections
from detect.core.cameras import CameraName
from detect.core.errors import InputError, OutputError, UsageError
from detect.sinks.frames import frame_path, write_frame
from detect.core.names import printable, segment_dir_name
from detect.sinks.layout import SegmentLock
from detect.engine.ordered import OrderedConsumer
from detect.engine.priority import lower_thread_priority
from detect.sinks.manifest import (
    COMPLETE,
    COMPLETE_WITH_FAILURES,
    MANIFEST_FILE,
    failure_json,
    invalid_boxes,
    now_iso,
    read_manifest,
    versions,
    write_manifest,
)
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.core.records import CameraFrame, Detections, FrameFailure, FrameKey, FrameResult
from detect.waymo.selection import FrameFilter, duplicate_rows, select
from detect.waymo.sources import SegmentSource
from detect.sinks.table import DETECTIONS_FILE, label_counts, write_table

Mode = Literal["new", "resume", "overwrite"]


class BatchDetector(Protocol):
    batch_size: int

    def __call__(self, images: np.ndarray, sizes: list[tuple[int, int]] | None = None) -> list[Detections]: ...


def _scaled_threads(small_machine: int) -> int:
    """`small_machine` threads on up to 4 cores, else all cores but two (the model's feeder and
    the ordered consumer)."""
    cores = os.cpu_count() or 1
    return small_machine if cores <= 4 else cores - 2


@dataclasses.dataclass(frozen=True)
class SegmentSettings:
    """Everything that decides what `detect segment` writes (the CLI builds this from flags)."""

    frame_filter: FrameFilter = FrameFilter()
    input_size: InputSize = (320, 320)
    write_frames: bool = True
    frame_format: str = "png"
    gif: bool = True
    mp4: bool = False
    gif_width: int = 640
    style: DrawStyle = DrawStyle()
    mode: Mode = "new"
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images (by their header) are skipped, never decoded
    # Threads that draw and encode frames. Two keep up with a CPU-bound model on a small machine;
    # on a GPU box the outputs are the work, so they scale with the cores.
    workers: int = dataclasses.field(default_factory=lambda: _scaled_threads(2))
    # One decode thread is plenty beside a CPU-bound model on a small machine (and steals the
    # least from it); on a GPU box decode must scale with the cores.
    decode_threads: int = dataclasses.field(default_factory=lambda: _scaled_threads(1))

    def __post_init__(self) -> None:
        for name in ("workers", "decode_threads"):
            if int(getattr(self, name)) < 1:
                raise UsageError(f"{name.replace('_', ' ')} must be at least 1, got {getattr(self, name)}")

    @property
    def animations(self) -> bool:
        return self.gif or self.mp4

    @property
    def needs_full_frames(self) -> bool:
        return self.write_frames or self.animations

    def resume_key(self, model: dict[str, Any], segment: str) -> dict[str, Any]:
        """What must match for frames of an earlier run to be reused as they are."""
        f = self.frame_filter
        return {
            "segment_context_name": segment,
            "model": model.get("path"),
            "threshold": model.get("threshold"),
            "classes": model.get("classes"),
            "input_size": list(self.input_size) if self.input_size else "native",
            "write_frames": self.write_frames,
            "frame_format": self.frame_format,
            **{f"draw_{k}": v for k, v in dataclasses.asdict(self.style).items() if k not in ("threshold", "classes", "palette")},
            "cameras": [c.name for c in f.cameras] if f.cameras else None,
        }


@dataclasses.dataclass(frozen=True)
class SegmentReport:
    segment_context_name: str
    segment_dir: Path
    status: str
    images_planned: int
    images_processed: int
    images_resumed: int
    failures: tuple[FrameFailure, ...]
    detections: int
    seconds: float
    already_complete: bool = False
    invalid_boxes: int = 0  # model rows dropped as invalid (NaN, zero area, ...), over every image


    @property
    def images_per_second(self) -> float:
        return self.images_processed / self.seconds if self.seconds > 0 else 0.0


@dataclasses.dataclass
class StageTimings:
    """Seconds per stage, summed; worker stages are thread CPU time."""

    values: dict[str, float] = dataclasses.field(default_factory=dict)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def add(self, stage: str, seconds: float) -> None:
        with self.lock:
            self.values[stage] = self.values.get(stage, 0.0) + seconds


@dataclasses.dataclass(frozen=True)
class _Rendered:
    result: FrameResult
    animation: AnimationFrame | None


ProgressFactory = Callable[[int, int], Any]  # (total, initial) -> object with update(n) and close()


def process_segment(
    source: SegmentSource,
    out_root: Path,
    detector: BatchDetector,
    settings: SegmentSettings,
    *,
    model_facts: dict[str, Any],
    progress: ProgressFactory | None = None,
    clock: Callable[[], float] = time.perf_counter,
    claims: dict[str, str] | None = None,
) -> SegmentReport:
    """Run one segment end to end and write everything under `out_root/<segment dir>/`.

    `claims` (directory name -> input) lets a caller running many inputs refuse a second file
    whose segment would land in a directory this run already gave to another file.
    """
    started, started_at = clock(), now_iso()
    keys = read_keys(source)
    segment = keys.segment_context_name
    planned, duplicates = plan_frames(keys, settings.frame_filter)
    claim_directory(claims, segment, source.uri)
    resume_key = settings.resume_key(model_facts, segment)
    prepared = prepare_segment_dir(out_root, segment, settings, resume_key)
    try:
        return _process_prepared(source, keys, prepared, planned, duplicates, detector, settings, model_facts,
                                 progress, clock, started, started_at)
    finally:
        prepared.lock.release()


def _process_prepared(source: SegmentSource, keys: SegmentKeys, prepared: PreparedDir, planned: list[tuple[int, int]],
                      duplicates: list[FrameFailure], detector: BatchDetector, settings: SegmentSettings,
                      model_facts: dict[str, Any], progress: ProgressFactory | None, clock: Callable[[], float],
                      started: float, started_at: str) -> SegmentReport:
    segment, segment_dir = keys.segment_context_name, prepared.path
    wanted = set(planned)
    done = {k: v for k, v in prepared.done.items() if k in wanted}
    if settings.mode == "resume" and len(done) == len(planned) and manifest_complete(segment_dir):
        manifest = read_manifest(segment_dir / MANIFEST_FILE) or {}
        return SegmentReport(segment, segment_dir, COMPLETE, len(planned), 0, len(done), (), int(manifest.get("counts", {}).get("detections", 0)), clock() - started, already_complete=True)

    timings = StageTimings()
    failures: list[FrameFailure] = list(duplicates)
    results: dict[tuple[int, int], FrameResult] = dict(done)
    bar = progress(len(planned), len(done)) if progress else None
    cameras = {c for _, c in planned}
    incremental_animations = settings.animations and not done
    animations = AnimationSet(segment_dir, mp4=settings.mp4, gif=settings.gif, mosaic=len(cameras) >= 2) if incremental_animations else None
    processed = 0
    loop_start = clock()
    try:
        with journal.Journal(segment_dir, prepared.intact) as log:
            def consume(item: _Rendered | FrameFailure) -> None:
                nonlocal processed
                if isinstance(item, FrameFailure):
                    failures.append(item)
                else:
                    processed += 1
                    log.append(item.result)
                    key = item.result.key
                    results[(key.frame_timestamp_micros, int(key.camera_name))] = item.result
                    if animations is not None and item.animation is not None:
                        t = clock()
                        animations.add(item.animation)
                        timings.add("animation_append", clock() - t)
                if bar is not None:
                    bar.update(1)

            pending = (f for f in iter_frames(source, settings.frame_filter, keys)
                       if (f.frame_timestamp_micros, int(f.camera_name)) not in done)
            _run_stages(pending, segment_dir, detector, settings, timings, consume, clock)
        if animations is not None:
            t = clock()
            animations.close()
            timings.add("animation_close", clock() - t)
    except BaseException:
        if animations is not None:
            animations.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    loop_seconds = clock() - loop_start

    t = clock()
    if settings.animations and done and settings.write_frames:
        rebuild_animations(segment_dir, width=settings.gif_width, mp4=settings.mp4, gif=settings.gif, segment_context_name=segment)
    timings.add("animation_rebuild", clock() - t)
    t = clock()
    rows_written = write_table(segment_dir / DETECTIONS_FILE, results.values())
    timings.add("table", clock() - t)
    status = COMPLETE_WITH_FAILURES if failures else COMPLETE
    seconds = clock() - started
    report = SegmentReport(segment, segment_dir, status, len(planned), processed, len(done), sorted_failures(failures),
                           rows_written, seconds, invalid_boxes=count_invalid(results.values()))
    manifest = build_manifest(source, keys, settings, model_facts, report, results, timings, loop_seconds, started_at)
    write_manifest(segment_dir / MANIFEST_FILE, manifest)
    journal.save_settings(segment_dir, prepared.resume_key)
    return report


def _run_stages(
    frames: Iterator[CameraFrame],
    segment_dir: Path,
    detector: BatchDetector,
    settings: SegmentSettings,
    timings: StageTimings,
    consume: Callable[[_Rendered | FrameFailure], None],
    clock: Callable[[], float],
) -> None:
    """The overlapped core. This thread only feeds the model; tf.data decodes ahead of it, a pool
    draws and writes, and an ordered consumer thread feeds the animations and the journal.
    """
    meta: dict[int, CameraFrame] = {}
    meta_lock = threading.Lock()

    def numbered() -> Iterator[tuple[int, bytes]]:
        for index, frame in enumerate(frames):
            with meta_lock:
                meta[index] = frame
            yield index, frame.jpeg

    def take(index: int) -> CameraFrame:
        with meta_lock:
            return meta.pop(index)

    keys: dict[int, FrameKey] = {}
    keys_lock = threading.Lock()

    def render_failed(index: int, err: BaseException) -> FrameFailure:
        with keys_lock:
            key = keys[index]
        return FrameFailure(key, "render", error_line(err))

    groups: dict[tuple[int, ...], list[DecodedImage]] = {}
    seen = 0
    # Drawing, encoding and the animations yield the CPU to the model (see detect.engine.priority).
    with concurrent.futures.ThreadPoolExecutor(settings.workers, thread_name_prefix="detect-render",
                                               initializer=lower_thread_priority) as pool:
        consumer = OrderedConsumer(consume, render_failed, max_pending=2 * detector.batch_size + 2 * settings.workers,
                                   initializer=lower_thread_priority)

        def run_batch(batch: list[DecodedImage]) -> None:
            frames_ = [take(d.index) for d in batch]
            t = clock()
            outcomes = detect_images(detector, batch, frames_)
            timings.add("detect", clock() - t)
            for decoded, frame, outcome in zip(batch, frames_, outcomes, strict=True):
                if isinstance(outcome, FrameFailure):
                    consumer.put(decoded.index, outcome)
                    continue
                with keys_lock:
                    keys[decoded.index] = frame.key
                future = pool.submit(render_frame, decoded, frame.key, outcome, segment_dir, settings, timings)
                consumer.put(decoded.index, future)

        def fail_undecodable(stop: int) -> None:
            for missing in range(seen, stop):  # tf.data dropped what it could not decode
                frame = take(missing)
                consumer.put(missing, FrameFailure(frame.key, "decode", decode_error(frame.jpeg, settings.max_pixels)))

        try:
            stream = decode_stream(numbered(), input_size=settings.input_size, max_pixels=settings.max_pixels,
                                   keep_full=settings.needs_full_frames, parallel=settings.decode_threads)
            wait_start = clock()
            for decoded in stream:
                timings.add("decode_wait", clock() - wait_start)
                fail_undecodable(decoded.index)
                seen = decoded.index + 1
                shape = decoded.model_input.shape
                group = groups.setdefault(shape, [])
                group.append(decoded)
                if len(group) >= detector.batch_size:
                    run_batch(groups.pop(shape))
                if consumer.pending > consumer.max_pending:
                    for other in list(groups):  # every index below `seen` must be handed over first
                        run_batch(groups.pop(other))
                    consumer.wait_for_room()
                wait_start = clock()
            with meta_lock:
                last = max(meta, default=seen - 1) + 1
            fail_undecodable(last)
            for shape in list(groups):
                run_batch(groups.pop(shape))
        finally:
            consumer.close()


def detect_images(detector: BatchDetector, batch: list[DecodedImage], frames: list[CameraFrame]) -> list[Detections | FrameFailure]:
    """Detections per image; if a batch fails, retry image by image to isolate the bad one."""
    images = np.stack([d.model_input for d in batch])
    sizes = [(d.width, d.height) for d in batch]
    try:
        return list(detector(images, sizes))
    except Exception as err:
        if len(batch) == 1:
            return [FrameFailure(frames[0].key, "detect", error_line(err))]
    outcomes: list[Detections | FrameFailure] = []
    for decoded, frame in zip(batch, frames, strict=True):
        outcomes.extend(detect_images(detector, [decoded], [frame]))
    return outcomes


def render_frame(decoded: DecodedImage, key: FrameKey, detections: Detections, segment_dir: Path,
            settings: SegmentSettings, timings: StageTimings) -> _Rendered:
    """Worker: draw, write the frame, prepare the animation frame. Thread CPU time per step."""
    result = FrameResult(key, decoded.width, decoded.height, detections)
    if not settings.needs_full_frames:
        return _Rendered(result, None)
    assert decoded.full is not None
    t0 = time.thread_time()
    annotated = draw_detections(decoded.full, detections, settings.style, in_place=True)  # the frame is ours
    t1 = time.thread_time()
    timings.add("draw", t1 - t0)
    if settings.write_frames:
        write_frame(segment_dir, key, annotated, settings.frame_format)
        t2 = time.thread_time()
        timings.add("frame_write", t2 - t1)
        t1 = t2
    animation = None
    if settings.animations:
        animation = prepare_animation_frame(annotated, key, settings.gif_width, gif=settings.gif)
        timings.add("animation_prepare", time.thread_time() - t1)
    return _Rendered(result, animation)


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedDir:
    """A segment directory made ready for writing, locked by this process until `lock.release()`."""

    path: Path
    lock: SegmentLock
    resume_key: dict[str, Any]
    done: dict[tuple[int, int], FrameResult]  # frames finished by an earlier run (resume)
    intact: int  # bytes of the journal that hold whole lines


def plan_frames(keys: SegmentKeys, frame_filter: FrameFilter) -> tuple[list[tuple[int, int]], list[FrameFailure]]:
    """The (timestamp, camera) keys to process, in order, and one failure per duplicate image."""
    index = keys.index
    planned = [(int(index.timestamps[r]), int(index.cameras[r])) for r in select(index, frame_filter)]
    segment = keys.segment_context_name
    duplicates = [
        FrameFailure(FrameKey(segment, int(index.timestamps[r]), CameraName(int(index.cameras[r]))), "read",
                     f"duplicate image: this (timestamp, camera) key appears again at position {int(index.positions[r])} "
                     f"of the file; the first one is used")
        for r in duplicate_rows(index, frame_filter)
    ]
    return planned, duplicates


def count_invalid(results: Iterable[FrameResult]) -> int:
    return sum(r.detections.invalid for r in results)


def sorted_failures(failures: list[FrameFailure]) -> tuple[FrameFailure, ...]:
    """In (timestamp, camera) order, whichever engine or thread found them first."""
    return tuple(sorted(failures, key=lambda f: (f.key.frame_timestamp_micros, int(f.key.camera_name))))


def claim_directory(claims: dict[str, str] | None, segment: str, uri: str) -> None:
    """Refuse a second input whose segment would write the directory another input has in this run."""
    if claims is None:
        return
    name = segment_dir_name(segment)
    owner = claims.setdefault(name, uri)
    if owner != uri:
        raise InputError(f"{uri}: segment {printable(segment)} also comes from {owner} in this run; "
                         f"both would write {name}/: run them one at a time")


def prepare_segment_dir(out_root: Path, segment: str, settings: SegmentSettings, resume_key: dict[str, Any]) -> PreparedDir:
    """Lock, then refuse, clear or reopen the segment's output directory; frames already done on resume."""
    try:
        Path(out_root).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{out_root}: cannot create the output directory ({err.strerror or err})") from None
    segment_dir = outdir.segment_dir(out_root, segment)
    lock = SegmentLock(segment_dir)
    try:
        done, intact = _reopen(segment_dir, settings, resume_key, segment)
    except BaseException:
        lock.release()
        raise
    return PreparedDir(segment_dir, lock, resume_key, done, intact)


def _reopen(segment_dir: Path, settings: SegmentSettings, resume_key: dict[str, Any], segment: str) -> tuple[dict[tuple[int, int], FrameResult], int]:
    if outdir.has_content(segment_dir):
        if settings.mode == "new":
            raise OutputError(f"{segment_dir} already exists; pass --resume to continue it or --overwrite to replace it")
        if settings.mode == "overwrite":
            outdir.clear_outputs(segment_dir, segment)
        elif not outdir.is_marked(segment_dir):
            raise OutputError(f"{segment_dir} exists but was not written by detect; refusing to resume into it: "
                              f"move it away or choose another --out")
    if settings.mode != "resume":
        journal.save_settings(segment_dir, resume_key)
        return {}, 0
    previous = journal.load_settings(segment_dir)
    if previous is not None and previous != resume_key:
        changes = "; ".join(journal.differences(previous, resume_key))
        raise UsageError(f"{segment_dir} was written with other settings ({changes}); use --overwrite to start again")
    journal.save_settings(segment_dir, resume_key)
    for stale in list(outdir.temp_files(segment_dir)):
        stale.unlink()  # half-written files of a run that was killed
    if settings.animations and not settings.write_frames:
        return {}, 0  # animations are rebuilt from frames on disk; without frames, start over
    done, intact = journal.load(segment_dir, segment)
    if settings.write_frames:
        done = {k: v for k, v in done.items()
                if frame_path(segment_dir, v.key.camera_name, v.key.frame_timestamp_micros, settings.frame_format).exists()}
    return done, intact


def manifest_complete(segment_dir: Path) -> bool:
    manifest = read_manifest(segment_dir / MANIFEST_FILE)
    return bool(manifest) and manifest.get("status") == COMPLETE


def build_manifest(source: SegmentSource, keys: SegmentKeys, settings: SegmentSettings, model_facts: dict[str, Any],
              report: SegmentReport, results: dict[tuple[int, int], FrameResult], timings: StageTimings,
              loop_seconds: float, started_at: str, engine: dict[str, Any] | None = None) -> dict[str, Any]:
    f = settings.frame_filter
    outputs = sorted(p.name for p in report.segment_dir.iterdir() if p.is_file() and not p.name.startswith("."))
    per_image = {k: round(1000 * v / max(report.images_processed, 1), 2) for k, v in sorted(timings.values.items())}
    invalid = invalid_boxes(results.values())
    return {
        "tool": "detect",
        "status": report.status,
        "segment_context_name": report.segment_context_name,
        "input": {"path": source.uri, "format": source.format, "images_in_file": len(keys.index),
                  "ground_truth": keys.labels},
        "model": model_facts,
        "engine": engine or {"name": "local"},
        "settings": {
            "cameras": [c.name for c in f.cameras] if f.cameras else "all",
            "first_frame": f.first_frame, "max_frames": f.max_frames,
            "input_size": list(settings.input_size) if settings.input_size else "native",
            "batch_size": model_facts.get("batch_size"),
            "write_frames": settings.write_frames, "frame_format": settings.frame_format,
            "gif": settings.gif, "mp4": settings.mp4, "gif_width": settings.gif_width,
            "draw": dataclasses.asdict(settings.style) | {"palette": len(settings.style.palette)},
            "mode": settings.mode,
            "workers": settings.workers, "decode_threads": settings.decode_threads,
            "max_pixels": settings.max_pixels,
        },
        "counts": {
            "images_planned": report.images_planned,
            "images_processed": report.images_processed,
            "images_resumed": report.images_resumed,
            "images_failed": len(report.failures),
            "detections": report.detections,
            "detections_by_label": label_counts(results.values()),
            "invalid_boxes": sum(entry["invalid_boxes"] for entry in invalid),
        },
        "failures": [failure_json(x) for x in report.failures],
        "invalid_boxes": invalid,
        "timings": {
            "total_s": round(report.seconds, 3),
            "pipeline_s": round(loop_seconds, 3),
            "images_per_second": round(report.images_processed / loop_seconds, 3) if loop_seconds > 0 else None,
            "stage_totals_s": {k: round(v, 3) for k, v in sorted(timings.values.items())},
            "stage_ms_per_image": per_image,
            "note": "detect and *_wait/append are main-thread wall time; draw, frame_write, animation_prepare are worker CPU time",
        },
        "outputs": outputs,
        "versions": versions(),
        "started_at": started_at,
        "finished_at": now_iso(),
    }


def error_line(err: BaseException) -> str:
    from detect.core.tf_env import tf_error_text

    return f"{type(err).__name__}: {tf_error_text(err)}"
