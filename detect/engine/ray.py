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

import argparse
import concurrent.futures
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from detect.sinks import journal
from detect.core.errors import DetectError, UsageError
from detect.sinks.manifest import COMPLETE, COMPLETE_WITH_FAILURES, MANIFEST_FILE, now_iso, read_manifest, write_manifest
from detect.engine.local import (
    PreparedDir,
    SegmentReport,
    SegmentSettings,
    StageTimings,
    build_manifest,
    claim_directory,
    count_invalid,
    manifest_complete,
    plan_frames,
    prepare_segment_dir,
    sorted_failures,
)
from detect.engine.ray_stages import TIMING_COLUMNS, WorkItem, error_text, failure_of
from detect.waymo.readers import SegmentKeys
from detect.core.records import FrameFailure, FrameResult
from detect.engine.runner import DONE, FAILED, PARTIAL, SKIPPED, SegmentOutcome, carry_over
from detect.waymo.sources import SegmentSource
from detect.sinks.table import DETECTIONS_FILE, write_table

INSTALL_HINT = "--engine ray needs Ray: pip install 'waymo-detect[ray]'"
# A Ray we start ourselves gets a small object store: full frames never enter it (see
# ray_stages), and Ray's default (30% of RAM, 7.5 GB on a 24 GB machine) would be wasted.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2
# Blocks of ~80 camera images: several per segment, so several actors share one segment's work.
# Measured here (300 images, 256 MB store): 16 MB blocks ran 1.4x slower than 32 MB ones, 4 MB ones
# 2x slower still (every block pays task and tf.data set-up).
TARGET_BLOCK_BYTES = 32 * 1024**2
# CPU reservations are bookkeeping (TensorFlow uses ~1.5 cores per actor whatever we reserve).
# Actors must leave CPUs to the tasks: on a 2-CPU node, actors holding every CPU leave none for the
# read tasks and the job hangs forever. The fractions differ on purpose: Ray Data fuses adjacent
# stages with equal resources into one process, which would move decoding into the detector actor
# (on a GPU node, decoding must spread over the CPUs instead).
DETECTOR_CPUS = 0.75
READ_CPUS = 0.25
DECODE_CPUS = 0.5
RENDER_CPUS = 0.5
# Decode and render take whole blocks (batch_size=None): each call sets up a tf.data pipeline
# (~90 ms) to decode exactly as the local pipeline does, and a fixed batch size makes Ray hold a
# partial block back until more rows arrive, which stalls the job when the object store is full.
READS_PER_ACTOR = 2
FINISHERS = 4  # segments whose table, animations and manifest are being written at once


def run_on_ray(sources: list[SegmentSource], root: Path, settings: SegmentSettings, args: argparse.Namespace,
               previous: dict[str, dict[str, Any]], err: TextIO, claims: dict[str, str] | None = None) -> list[SegmentOutcome]:
    """Run every segment that needs work as one Ray Data job; outcomes in the order of `sources`."""
    ray = import_ray()
    _check_settings(settings, args)
    root = root.resolve()  # workers may start in another directory
    outcomes: dict[str, SegmentOutcome] = {}
    claims = {} if claims is None else claims
    todo = []
    for source in sources:
        before = None if settings.mode == "overwrite" else carry_over(root, source, previous.get(source.uri), args.retry_failed, claims)
        if before is not None:
            outcomes[source.uri] = before
        else:
            todo.append(source)
    if todo:
        started_here = _start_ray(ray, args)
        try:
            _run(ray, todo, root, settings, args, err, outcomes, claims)
        finally:
            if started_here:
                ray.shutdown()
    return [outcomes[s.uri] for s in sources]


def import_ray():
    try:
        import ray
        import ray.data  # noqa: F401  (ray without the [data] extra)
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def _check_settings(settings: SegmentSettings, args: argparse.Namespace) -> None:
    if settings.animations and not settings.write_frames:
        raise UsageError("--engine ray builds animations from the annotated frames: drop --no-png, or add --no-gif")
    if args.strategy != "none":
        raise UsageError("--strategy mirrored is for one machine; with --engine ray every GPU gets its own detector actor")


def _start_ray(ray: Any, args: argparse.Namespace) -> bool:
    """Attach to `--ray-address` or start Ray here; True if this call connected (so we disconnect)."""
    if ray.is_initialized():  # a caller (a notebook, the tests) already set Ray up
        return False
    quiet = {"logging_level": logging.DEBUG if args.debug else logging.WARNING, "log_to_driver": bool(args.debug)}
    if args.ray_address:
        try:
            ray.init(address=args.ray_address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise UsageError(f"--ray-address {args.ray_address}: cannot attach to a Ray cluster ({error_text(error)})") from None
    else:
        ray.init(object_store_memory=LOCAL_OBJECT_STORE_BYTES, include_dashboard=False, **quiet)
    return True


@dataclasses.dataclass
class _Segment:
    """The driver's state for one segment in flight (owned by the driver thread until finished)."""

    source: SegmentSource
    keys: SegmentKeys
    prepared: PreparedDir
    planned: list[tuple[int, int]]
    done: dict[tuple[int, int], FrameResult]
    started: float
    started_at: str
    expected: int = 0
    received: int = 0
    results: dict[tuple[int, int], FrameResult] = dataclasses.field(default_factory=dict)
    failures: list[FrameFailure] = dataclasses.field(default_factory=list)
    timings: StageTimings = dataclasses.field(default_factory=StageTimings)
    log: journal.Journal | None = None
    read_error: str | None = None
    job_started: float | None = None
    last_row: float | None = None
    submitted: bool = False  # handed to the finisher

    @property
    def name(self) -> str:
        return self.keys.segment_context_name

    @property
    def segment_dir(self) -> Path:
        return self.prepared.path


def _run(ray: Any, todo: list[SegmentSource], root: Path, settings: SegmentSettings, args: argparse.Namespace,
         err: TextIO, outcomes: dict[str, SegmentOutcome], claims: dict[str, str]) -> None:
    from detect.sinks.animations import rebuild_animations
    from detect.engine.loading import load_detector, model_facts, model_notice
    from detect.engine.ray_stages import plan_segment, tensorflow_on_cpu

    engine = _engine_facts(ray, args)
    plan = ray.remote(num_cpus=READ_CPUS)(plan_segment)
    pending_plans = [plan.remote(s.uri, s.path, s.format, s.is_local) for s in todo]
    t = time.perf_counter()  # the model loads here while the cluster reads the segments' keys
    tensorflow_on_cpu()  # the driver's copy only validates the model: the GPUs are the actors'
    detector = load_detector(args)  # validated on the driver: a bad --model fails before any work
    facts = model_facts(detector, time.perf_counter() - t)
    notice = model_notice(detector)
    del detector
    if notice and not args.quiet:
        print(notice, file=err)

    def failed(source: SegmentSource, message: str, seconds: float = 0.0) -> None:
        outcomes[source.uri] = SegmentOutcome(source.uri, None, FAILED, seconds=seconds, error=message)
        if not args.quiet:
            print(f"detect: segment failed: {message}", file=err)

    segments: dict[str, _Segment] = {}
    for source, planned in zip(todo, ray.get(pending_plans), strict=True):
        try:
            if isinstance(planned, str):
                raise _PlanError(planned)
            keys = SegmentKeys(source, *planned)
            claim_directory(claims, keys.segment_context_name, source.uri)
            opened = _open_segment(source, keys, root, settings, facts)
        except Exception as error:  # this segment cannot start; the others go on
            failed(source, error_text(error))
            continue
        if isinstance(opened, SegmentOutcome):
            outcomes[source.uri] = opened
        else:
            segments[source.uri] = opened

    # Animations are rebuilt from the frames by a task on the cluster (~50 ms an image): the driver
    # only waits, so it keeps up with many segments finishing at once.
    rebuild = ray.remote(num_cpus=RENDER_CPUS)(rebuild_animations)

    def finish(segment: _Segment) -> None:
        segment.submitted = True
        try:
            outcomes[segment.source.uri] = _finish(segment, settings, facts, engine,
                                                   lambda *a, **k: ray.get(rebuild.remote(*a, **k)))
        except Exception as error:  # this segment's files could not be finished; the others go on
            failed(segment.source, error_text(error), time.perf_counter() - segment.started)
        finally:
            segment.prepared.lock.release()

    busy = [s for s in segments.values() if s.expected]
    with concurrent.futures.ThreadPoolExecutor(FINISHERS, thread_name_prefix="detect-finish") as finisher:
        for segment in segments.values():
            if not segment.expected:  # every frame was done by an earlier run; only the files are missing
                finisher.submit(finish, segment)
        try:
            if busy:
                job_started = time.perf_counter()
                for segment in busy:
                    segment.job_started = job_started
                with _quiet_data_context(args, err):
                    for row in _stream(ray, busy, root, settings, args, facts, engine):
                        segment = segments[row["source"]]
                        if _take(segment, row):
                            segment.submitted = True
                            finisher.submit(finish, segment)
        except Exception as error:  # the job itself broke (a node died, the model is not on a worker...)
            message = f"ray: {error_text(error)}"
            for segment in busy:
                if not segment.submitted:
                    segment.read_error = segment.read_error or message
        for segment in busy:
            if segment.submitted:
                continue
            if segment.read_error:  # like a local InputError: no manifest; the journal keeps what was done
                if segment.log is not None:
                    segment.log.close()
                segment.prepared.lock.release()
                failed(segment.source, segment.read_error, time.perf_counter() - segment.started)
            else:  # the reader yielded fewer images than planned: finish with what came
                finisher.submit(finish, segment)


class _PlanError(DetectError):
    """A segment whose keys could not be read (the worker's one-line message)."""


def _open_segment(source: SegmentSource, keys: SegmentKeys, root: Path, settings: SegmentSettings,
                  facts: dict[str, Any]) -> _Segment | SegmentOutcome:
    """Plan and prepare one segment's directory as `process_segment` does (an outcome if complete)."""
    started = time.perf_counter()
    name = keys.segment_context_name
    planned, duplicates = plan_frames(keys, settings.frame_filter)
    prepared = prepare_segment_dir(root, name, settings, settings.resume_key(facts, name))
    try:
        segment_dir = prepared.path
        done = {k: v for k, v in prepared.done.items() if k in set(planned)}
        if settings.mode == "resume" and len(done) == len(planned) and manifest_complete(segment_dir):
            manifest = read_manifest(segment_dir / MANIFEST_FILE) or {}
            prepared.lock.release()
            return SegmentOutcome(source.uri, name, SKIPPED, detections=int(manifest.get("counts", {}).get("detections", 0)))
        segment = _Segment(source, keys, prepared, planned, done, started, now_iso(),
                           expected=len(planned) - len(done), results=dict(done), failures=list(duplicates))
        if segment.expected:
            segment.log = journal.Journal(segment_dir, prepared.intact)
    except BaseException:
        prepared.lock.release()
        raise
    return segment


def _stream(ray: Any, segments: list[_Segment], root: Path, settings: SegmentSettings, args: argparse.Namespace,
            facts: dict[str, Any], engine: dict[str, Any]):
    """One Ray Data job over every segment's pending images; yields the small result rows."""
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    from detect.model.detector import DEFAULT_BATCH_SIZE
    from detect.engine.ray_stages import DetectorActor, decode_images, read_frames, render_frames

    items = [{"item": WorkItem.for_source(s.source, s.name, settings.frame_filter, set(s.done)).to_json()} for s in segments]
    batch_size = args.batch_size or DEFAULT_BATCH_SIZE
    actors = engine["detector_actors"]
    render_settings = dataclasses.replace(settings, gif=False, mp4=False)  # animations come from the frames
    ds = (
        ray.data.from_items(items, override_num_blocks=len(items))
        .map_batches(read_frames, batch_size=1, batch_format="numpy", num_cpus=READ_CPUS,
                     compute=TaskPoolStrategy(size=min(len(items), READS_PER_ACTOR * actors)))
        .map_batches(decode_images, batch_size=None, batch_format="numpy", num_cpus=DECODE_CPUS,
                     fn_kwargs={"input_size": settings.input_size, "max_pixels": settings.max_pixels})
        .map_batches(DetectorActor, batch_size=batch_size, batch_format="numpy",
                     compute=ActorPoolStrategy(size=actors), num_cpus=DETECTOR_CPUS, num_gpus=engine["gpus_per_actor"],
                     fn_constructor_kwargs={"model": facts["path"], "threshold": args.threshold,
                                            "classes": args.classes, "batch_size": batch_size})
        .map_batches(render_frames, batch_size=None, batch_format="numpy", num_cpus=RENDER_CPUS,
                     fn_kwargs={"root": str(root), "settings": render_settings})
    )
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        columns = list(batch)
        for i in range(len(batch["ts"])):
            yield {c: batch[c][i] for c in columns}
    if args.debug:
        logging.getLogger(__name__).warning("Ray Data stats:\n%s", ds.stats())


@contextlib.contextmanager
def _quiet_data_context(args: argparse.Namespace, err: TextIO) -> Iterator[None]:
    """Our block size and verbosity for this job only (Ray's context is process-wide)."""
    from ray.data import DataContext

    context, logger = DataContext.get_current(), logging.getLogger("ray.data")
    values = {"target_max_block_size": TARGET_BLOCK_BYTES, "enable_progress_bars": not args.quiet and _isatty(err),
              "print_on_execution_start": bool(args.debug)}
    saved, level = {k: getattr(context, k) for k in values}, logger.level
    for key, value in values.items():
        setattr(context, key, value)
    if not args.debug:  # Ray Data logs its plan and a progress line every few seconds
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(context, key, value)
        logger.setLevel(level)


def _take(segment: _Segment, row: dict[str, Any]) -> bool:
    """Record one row (journal first, as the local pipeline); True when the segment is all in."""
    segment.last_row = time.perf_counter()
    if row["stage"] == "read":
        segment.read_error = str(row["error"])
        return False
    segment.received += 1
    if row["stage"]:
        segment.failures.append(failure_of(row))
    else:
        result = journal.decode(str(row["result"]), segment.name)
        assert segment.log is not None
        segment.log.append(result)
        segment.results[(result.key.frame_timestamp_micros, int(result.key.camera_name))] = result
    for column, stage in TIMING_COLUMNS.items():
        segment.timings.add(stage, float(row[column]))
    return segment.received == segment.expected and segment.read_error is None


def _finish(segment: _Segment, settings: SegmentSettings, facts: dict[str, Any], engine: dict[str, Any],
            rebuild_animations: Callable[..., Any]) -> SegmentOutcome:
    """Table, animations and manifest from the journal and the frames on disk (same files as local)."""
    if segment.log is not None:
        segment.log.close()
    timings, segment_dir = segment.timings, segment.segment_dir
    t = time.perf_counter()
    if settings.animations and segment.results:
        rebuild_animations(segment_dir, width=settings.gif_width, mp4=settings.mp4, gif=settings.gif,
                           segment_context_name=segment.name)
    timings.add("animation_rebuild", time.perf_counter() - t)
    t = time.perf_counter()
    rows_written = write_table(segment_dir / DETECTIONS_FILE, segment.results.values())
    timings.add("table", time.perf_counter() - t)
    failures = sorted_failures(segment.failures)
    status = COMPLETE_WITH_FAILURES if failures else COMPLETE
    processed = len(segment.results) - len(segment.done)
    seconds = time.perf_counter() - segment.started
    report = SegmentReport(segment.name, segment_dir, status, len(segment.planned), processed, len(segment.done),
                           failures, rows_written, seconds, invalid_boxes=count_invalid(segment.results.values()))
    loop_seconds = (segment.last_row - segment.job_started) if segment.job_started and segment.last_row else 0.0
    manifest = build_manifest(segment.source, segment.keys, settings, facts, report, segment.results, timings,
                         loop_seconds, segment.started_at, engine=engine)
    write_manifest(segment_dir / MANIFEST_FILE, manifest)
    journal.save_settings(segment_dir, segment.prepared.resume_key)
    return SegmentOutcome(segment.source.uri, segment.name, PARTIAL if failures else DONE, processed,
                          rows_written, len(failures), seconds)


def _engine_facts(ray: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Where the detector actors go: one per GPU if the cluster has GPUs, else one per node."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
    actors = getattr(args, "ray_actors", None) or (gpus if gpus else max(1, nodes))
    cpus, others = resources.get("CPU", 0), READ_CPUS + DECODE_CPUS + RENDER_CPUS
    if actors * DETECTOR_CPUS + others > cpus:
        raise UsageError(f"--ray-actors {actors}: the detector actors reserve {actors * DETECTOR_CPUS:g} CPUs and "
                         f"reading, decoding and drawing need {others:g} more; this cluster has {cpus:g}")
    return {
        "name": "ray",
        "ray_version": ray.__version__,
        "address": args.ray_address or "local",
        "nodes": nodes,
        "cluster_cpus": cpus,
        "cluster_gpus": gpus,
        "detector_actors": actors,
        "gpus_per_actor": 1 if gpus else 0,
        "cpus_per_actor": DETECTOR_CPUS,
        "note": "segments share one Ray job: pipeline_s runs from the job's start to this segment's last result; "
                "decode and detect are wall time per image in their stage (decode counts both decodes: model "
                "input, then the full frame to draw on); draw and frame_write are task CPU time",
    }




def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
