"""`detect run --engine ray`: the same segments, outputs and manifests as the local engine, on Ray Data.

Data flow (one streaming Ray Data job for all segments; see `detect.engine.ray_stages`):

    from_items(one work item per segment)
      -> map_batches(read_frames)      tasks: our streaming v1/v2 readers, small batches of JPEGs
      -> map_batches(decode_images)    tasks: decode + resize for the model, as the local pipeline
      -> map_batches(DetectorActor)    actors: one `Detector` each, num_gpus=1 where there are GPUs
      -> map_batches(render_frames)    tasks: decode the full frame again, draw, write the PNG
      -> the driver                    small rows: journal, detections table, manifest; a Ray task
                                       rebuilds the animations from the frames on disk

Reading with our readers rather than `ray.data.read_parquet` keeps v1 TFRecords and v2 Parquet on
one path, keeps projection and row-group streaming, and lets one big file become many blocks
(Ray Data turns a Parquet file into one block, so only one actor would work on it).

The driver owns each segment's directory exactly as `process_segment` does: it appends every
finished frame to the segment's journal, so a killed run resumes with either engine. Full-size
frames exist only inside render tasks (a few each; see `ray_stages`), so memory stays bounded
however many segments stream through. On a cluster, `--out` and `--model` must be paths every
node sees (a shared filesystem); inputs may be anything pyarrow / TensorFlow open (gs://, s3://).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from detect.core.errors import DetectError, UsageError, error_text
from detect.core.records import WaymoType
from detect.core.signals import raise_if_interrupted
from detect.engine.events import Reporter
from detect.engine.lifecycle import SegmentLifecycle
from detect.engine.loading import MODEL_ENV, load_model
from detect.engine.outcomes import SegmentOutcome, SegmentReport, failed_outcome, outcome_of
from detect.engine.protocol import Record
from detect.engine.ray_cluster import (
    DECODE_CPUS,
    DETECTOR_CPUS,
    READ_CPUS,
    RENDER_CPUS,
    actor_restarts,
    engine_facts,
    import_ray,
    start_ray,
)
from detect.engine.ray_stages import (
    TIMESTAMP,
    TIMING_COLUMNS,
    DetectorActor,
    RayRow,
    WorkItem,
    decode_images,
    failure_of,
    plan_segment,
    read_frames,
    render_frames,
    tensorflow_on_cpu,
)
from detect.engine.spec import ModelSpec, RunSpec, SegmentJob
from detect.engine.summary import invalid_boxes_warning
from detect.model.detector import DEFAULT_BATCH_SIZE
from detect.model.facts import ModelFacts
from detect.results import journal
from detect.results.animations import rebuild_animations
from detect.results.ground_truth import RENDER_LABELS_FILE, write_ground_truth
from detect.waymo.readers import SegmentKeys
from detect.waymo.sources import SegmentSource

# Blocks of ~80 camera images: several per segment, so several actors share one segment's work.
# Measured here (300 images, 256 MB store): 16 MB blocks ran 1.4x slower than 32 MB ones, 4 MB ones
# 2x slower still (every block pays task and tf.data set-up).
TARGET_BLOCK_BYTES = 32 * 1024**2
# Decode and render take whole blocks (batch_size=None): each call sets up a tf.data pipeline
# (~90 ms) to decode exactly as the local pipeline does, and a fixed batch size makes Ray hold a
# partial block back until more rows arrive, which stalls the job when the object store is full.
READS_PER_ACTOR = 2
FINISHERS = 4  # segments whose table, animations and manifest are being written at once


def check_spec(spec: RunSpec) -> None:
    """What the Ray engine cannot do, refused before anything starts."""
    if spec.settings.animations and not spec.settings.write_frames:
        raise UsageError("--engine ray builds animations from the annotated frames: drop --no-png, or add --no-gif")
    if spec.model.strategy != "none":
        raise UsageError("--strategy mirrored is for one machine; with --engine ray every GPU gets its own detector actor")


class RayEngine:
    """Every segment that needs work as one streaming Ray Data job (see the module docstring)."""

    name = "ray"

    def __init__(self, progress_bars: bool = False) -> None:
        self.progress_bars = progress_bars

    def run(self, todo: list[SegmentSource], spec: RunSpec, claims: dict[str, str], record: Record,
            reporter: Reporter) -> ModelFacts:
        ray = import_ray()
        check_spec(spec)
        spec = dataclasses.replace(spec, out=Path(spec.out).resolve())  # workers may start in another directory
        started_here = start_ray(ray, spec)
        try:
            return _Job(ray, spec, claims, record, reporter, self.progress_bars).run(todo)
        finally:
            if started_here:
                ray.shutdown()


@dataclasses.dataclass
class _InFlight:
    """The driver's count of one segment's rows (the lifecycle holds everything else)."""

    lifecycle: SegmentLifecycle
    expected: int
    received: int = 0
    read_error: str | None = None
    job_started: float | None = None
    last_row: float | None = None
    submitted: bool = False  # handed to a finisher


def actor_runtime(model: ModelSpec, gpus: bool) -> str:
    """What the detector actors run: TensorFlow on GPU actors when `auto` is asked (OpenVINO is
    the CPU's runtime), except for an ONNX model, which only OpenVINO runs."""
    path = os.environ.get(MODEL_ENV, "") if model.path is None else str(model.path)
    onnx = Path(path).suffix == ".onnx"
    return "tensorflow" if gpus and model.runtime == "auto" and not onnx else model.runtime


class _Job:
    """One Ray Data job over the segments of a run; the driver's side."""

    def __init__(self, ray: Any, spec: RunSpec, claims: dict[str, str], record: Record, reporter: Reporter,
                 progress_bars: bool) -> None:
        self.ray, self.spec, self.claims, self.reporter = ray, spec, claims, reporter
        self._record = record
        self.progress_bars = progress_bars
        self._lock = threading.Lock()  # finishers record from their threads
        self.engine = engine_facts(ray, spec)
        self.actor_runtime = actor_runtime(spec.model, bool(self.engine["gpus_per_actor"]))
        # Animations are rebuilt from the frames by a task on the cluster (~50 ms an image): the
        # driver only waits, so it keeps up with many segments finishing at once.
        self._rebuild = ray.remote(num_cpus=RENDER_CPUS)(rebuild_animations)

    def run(self, todo: list[SegmentSource]) -> ModelFacts:
        plan = self.ray.remote(num_cpus=READ_CPUS)(plan_segment)
        pending_plans = [plan.remote(s.uri, s.path, s.format, s.is_local, self.spec.settings.ground_truth) for s in todo]
        tensorflow_on_cpu()  # the driver's copy only validates the model: the GPUs are the actors'
        # What the actors will run, converted (and cached beside the model) here; a bad model fails before any work.
        model = load_model(dataclasses.replace(self.spec.model, runtime=self.actor_runtime))
        self.facts = model.facts
        for line in model.notices:
            self.reporter.message(line)
        del model
        segments: dict[str, _InFlight] = {}
        try:
            for source, planned in zip(todo, self.ray.get(pending_plans), strict=True):
                opened = self._open(source, planned)
                if isinstance(opened, _InFlight):
                    segments[source.uri] = opened
            self._stream_all(segments)
        finally:
            for segment in segments.values():  # interrupted: the journals keep what was done
                if not segment.submitted:
                    segment.lifecycle.close()
        return self.facts

    def _open(self, source: SegmentSource, planned: Any) -> _InFlight | None:
        try:
            if isinstance(planned, str):
                raise _PlanError(planned)
            names, index, note, labels, context = planned
            keys = SegmentKeys(source, names, index, note)
            job = SegmentJob.judged(self.spec.settings, None if labels is None else labels.types, self.facts.knows_classes)
            opened = SegmentLifecycle.open(keys, self.spec.out, job, self.facts, claims=self.claims,
                                           labels=labels, context=context)
            if isinstance(opened, SegmentLifecycle) and job.rules is not None and labels is not None:
                # The render tasks draw errors: they read the labels beside the journal.
                write_ground_truth(opened.segment_dir / journal.STATE_DIR / RENDER_LABELS_FILE, labels.by_key,
                                   opened.pending)
        except Exception as error:  # this segment cannot start; the others go on
            self._failed(source, error_text(error))
            return None
        if isinstance(opened, SegmentReport):
            self.record(outcome_of(source.uri, opened))
            return None
        return _InFlight(opened, expected=len(opened.pending))

    def _stream_all(self, segments: dict[str, _InFlight]) -> None:
        busy = [s for s in segments.values() if s.expected]
        with concurrent.futures.ThreadPoolExecutor(FINISHERS, thread_name_prefix="detect-finish") as finisher:
            for segment in segments.values():
                if not segment.expected:  # every frame was done by an earlier run; only the files are missing
                    segment.submitted = True
                    finisher.submit(self._finish, segment)
            try:
                if busy:
                    job_started = time.perf_counter()
                    for segment in busy:
                        segment.job_started = job_started
                    with _quiet_data_context(self.spec.debug, self.progress_bars):
                        for row in _stream(self.ray, busy, self.spec, self.facts, self.engine):
                            raise_if_interrupted()  # a stop Ray's or TensorFlow's code swallowed in this thread
                            segment = segments[row["source"]]
                            if _take(segment, row):
                                segment.submitted = True
                                finisher.submit(self._finish, segment)
            except Exception as error:  # the job itself broke (a node died, the model is not on a worker...)
                message = f"ray: {error_text(error)}"
                for segment in busy:
                    if not segment.submitted:
                        segment.read_error = segment.read_error or message
            for segment in busy:
                if segment.submitted:
                    continue
                segment.submitted = True
                if segment.read_error:  # like a local InputError: no manifest; the journal keeps what was done
                    segment.lifecycle.close()
                    self._failed(segment.lifecycle.keys.source, segment.read_error,
                                 time.perf_counter() - segment.lifecycle.started)
                else:  # the reader yielded fewer images than planned: finish with what came
                    finisher.submit(self._finish, segment)

    def _finish(self, segment: _InFlight) -> None:
        lifecycle = segment.lifecycle
        loop_seconds = (segment.last_row - segment.job_started) if segment.job_started and segment.last_row else 0.0
        rebuild = self._rebuild_remotely if self.spec.settings.animations and lifecycle.results else None
        try:
            report = lifecycle.finish(loop_seconds=loop_seconds, engine=self.engine, rebuild=rebuild)
        except Exception as error:  # this segment's files could not be finished; the others go on
            self._failed(lifecycle.keys.source, error_text(error), time.perf_counter() - lifecycle.started)
            return
        # The labels written for the render tasks: ground_truth.parquet holds them now.
        (lifecycle.segment_dir / journal.STATE_DIR / RENDER_LABELS_FILE).unlink(missing_ok=True)
        for note in (invalid_boxes_warning(report), *report.notes):
            if note:
                self.reporter.message(note)
        self.record(outcome_of(lifecycle.keys.source.uri, report))

    def _rebuild_remotely(self, *args: Any, **kwargs: Any) -> Any:
        return self.ray.get(self._rebuild.remote(*args, **kwargs))

    def record(self, outcome: SegmentOutcome) -> None:
        with self._lock:
            self._record(outcome)

    def _failed(self, source: SegmentSource, message: str, seconds: float = 0.0) -> None:
        self.record(failed_outcome(source.uri, message, seconds))
        self.reporter.message(f"detect: segment failed: {message}")


class _PlanError(DetectError):
    """A segment whose keys could not be read (the worker's one-line message)."""


def _stream(ray: Any, segments: list[_InFlight], spec: RunSpec, facts: ModelFacts,
            engine: dict[str, object]) -> Iterator[RayRow]:
    """One Ray Data job over every segment's pending images; yields the small result rows."""
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    settings = spec.settings
    items = [{"item": WorkItem.for_source(s.lifecycle.keys.source, s.lifecycle.name, settings.frame_filter,
                                          {k.order for k in s.lifecycle.done}).to_json()} for s in segments]
    batch_size = spec.model.batch_size or DEFAULT_BATCH_SIZE
    actors, gpus = _count(engine, "detector_actors"), _count(engine, "gpus_per_actor")
    # Animations come from the frames; errors are drawn where a segment's labels were written for it,
    # judged on the types those labels have (`SegmentJob.for_label_types`, in the render task).
    render_job = SegmentJob.judged(dataclasses.replace(settings, gif=False, mp4=False), frozenset(WaymoType),
                                   facts.knows_classes)
    # Ray 2.5x takes actor options such as max_restarts only as extra map_batches arguments, and
    # warns that this goes away in Ray 2.64 (our pin stops before it): the warning is not the user's.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        ds = (
            ray.data.from_items(items, override_num_blocks=len(items))
            .map_batches(read_frames, batch_size=1, batch_format="numpy", num_cpus=READ_CPUS,
                         compute=TaskPoolStrategy(size=min(len(items), READS_PER_ACTOR * actors)))
            .map_batches(decode_images, batch_size=None, batch_format="numpy", num_cpus=DECODE_CPUS,
                         fn_kwargs={"input_size": settings.decode_size, "max_pixels": settings.max_pixels})
            .map_batches(DetectorActor, batch_size=batch_size, batch_format="numpy",
                         compute=ActorPoolStrategy(size=actors), num_cpus=DETECTOR_CPUS, num_gpus=gpus,
                         fn_constructor_kwargs={"model": facts.path, "threshold": facts.score_floor,
                                                "classes": spec.model.classes, "batch_size": batch_size,
                                                "nms_iou": spec.model.nms_iou, "tile": settings.tile,
                                                "runtime": facts.runtime_name,  # what the driver settled on
                                                "input_size": settings.input_size},
                         **actor_restarts(spec))
            .map_batches(render_frames, batch_size=None, batch_format="numpy", num_cpus=RENDER_CPUS,
                         fn_kwargs={"root": str(spec.out), "job": render_job})
        )
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        columns = list(batch)
        for i in range(len(batch[TIMESTAMP])):
            yield {c: batch[c][i] for c in columns}
    if spec.debug:
        logging.getLogger(__name__).warning("Ray Data stats:\n%s", ds.stats())


@contextlib.contextmanager
def _quiet_data_context(debug: bool, progress_bars: bool) -> Iterator[None]:
    """Our block size and verbosity for this job only (Ray's context is process-wide)."""
    from ray.data import DataContext

    context, logger = DataContext.get_current(), logging.getLogger("ray.data")
    values = {"target_max_block_size": TARGET_BLOCK_BYTES, "enable_progress_bars": progress_bars,
              "print_on_execution_start": debug}
    saved, level = {k: getattr(context, k) for k in values}, logger.level
    for key, value in values.items():
        setattr(context, key, value)
    if not debug:  # Ray Data logs its plan and a progress line every few seconds
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(context, key, value)
        logger.setLevel(level)


def _take(segment: _InFlight, row: RayRow) -> bool:
    """Record one row (journal first, as the local pipeline); True when the segment is all in."""
    segment.last_row = time.perf_counter()
    if row["stage"] == "read":
        segment.read_error = str(row["error"])
        return False
    segment.received += 1
    lifecycle = segment.lifecycle
    if row["stage"]:
        lifecycle.record(failure_of(row))
    else:
        lifecycle.record(journal.decode(str(row["result"]), lifecycle.name))
    for column, stage in TIMING_COLUMNS.items():
        lifecycle.timings.add(stage, float(row[column]))
    return segment.received == segment.expected and segment.read_error is None


def _count(engine: dict[str, object], key: str) -> int:
    """A count `engine_facts` placed in the engine's facts (the manifest's `engine`)."""
    value = engine[key]
    if not isinstance(value, int):
        raise TypeError(f"engine facts: {key} is {value!r}, not a count")
    return value
