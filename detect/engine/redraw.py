"""`detect redraw`: a finished segment's frames, animations and table again at a new drawing
threshold or drawing mode, from its journal and its source images, without the model.

The boxes come from the journal (every box down to the score floor, as the run recorded them:
a threshold below that floor is refused), the labels from the ground_truth.parquet the run wrote;
the images are read again from the segment file the user names (`--source`) or the manifest
records (a local one only: `detect.engine.redraw_source`), once it is checked to be the file the
run read; the track ids are computed again for the new threshold (the tracker's scores follow it)
and each image's trail is rebuilt from the table. The frames and the evaluation that follows are
judged with one protocol and one class map: the run's, or those the request names, recorded.
Frames are decoded to the run's own pixels without TensorFlow (`detect.model.full_frames`) and go
through the run's render pool and drawing (`render_pixels`), and the animations through the same
`AnimationSet`, so a redraw at 0.4 writes the bytes a fresh run at 0.4 writes
(`detect.engine.redraw_pixels`). What it reads from the run's records and writes back into them is
`detect.engine.redraw_record`'s.

One segment at a time, in its lock, with no link planted where it writes (`layout.no_links`).
Everything is read, decoded and checked first (`_plan`): a value the manifest holds that cannot be
used, a source that is not the run's, a damaged journal are one line, and nothing is written; then
the temp files a killed run or redraw left are swept. The manifest is the commit point: before the
first frame is drawn it records the new drawing settings with status `redrawing` (and settings.json
a key no `--resume` matches), and only once every frame, animation and the table are written does
it get its status back. A crash in between leaves a folder that says `redrawing` (the report's
status column, `detect run`'s resume refusal) and that `detect redraw` again finishes; every file
in it is whole (each one is written under a temp name and renamed).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from detect.core.errors import InputError, OutputError
from detect.core.files import UnreadableFileError
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.engine.outcomes import boxes_drawn
from detect.engine.redraw_pixels import redraw_pixels
from detect.engine.redraw_record import check_floor, recorded_settings, redrawn_resume_key, updated_manifest
from detect.engine.redraw_source import CheckedSource, checked_source
from detect.engine.render_pool import start_processes
from detect.engine.spec import SegmentJob, SegmentSettings, SettingsRecord, scaled_threads
from detect.model.classmap import DEFAULT_MAP_SOURCE, ClassMap
from detect.results import journal
from detect.results.ground_truth import GROUND_TRUTH_FILE, read_ground_truth
from detect.results.layout import SegmentLock, is_marked, no_links, temp_files
from detect.results.manifest import COMPLETE, COMPLETE_WITH_FAILURES, MANIFEST_FILE, now_iso
from detect.results.results_folder import Manifest, json_object, read_manifest, write_manifest
from detect.results.source_images import NamedSources
from detect.results.table import DETECTIONS_FILE, write_table
from detect.results.track_ids import track_table, tracker_params, tracking_record
from detect.track.params import TrackerParams
from detect.waymo.camera_labels import SegmentLabels
from detect.waymo.context.read import read_context

REDRAWING = "redrawing"  # a manifest's status while a redraw is under way (and after one that crashed)


@dataclasses.dataclass(frozen=True)
class RedrawRequest:
    """What to change (None: as the run drew it), where the images are when the user names them,
    and how many workers draw."""

    threshold: float | None = None
    draw_mode: str | None = None  # one of DRAW_MODES
    unscored: str | None = None  # one of detect.render.draw.UNSCORED
    class_map: Path | None = None  # None: the run's
    protocol: str | None = None  # None: the run's
    workers: int | None = None
    source: NamedSources = NamedSources()  # `--source`: the segment files to read (else the recorded one, if local)


@dataclasses.dataclass(frozen=True)
class Redrawn:
    """One segment redrawn: what it drew, at which threshold, judged how, in how long."""

    segment_dir: Path
    segment_context_name: str
    images: int
    threshold: float
    written: tuple[str, ...]  # frames, GIFs, MP4s, mosaic: what the run wrote and this redrew
    seconds: float
    protocol: str = "coco"  # what its frames were judged with, and its evaluation must be
    class_map: Path | None = None  # None: the default map

    def line(self) -> str:
        images = f"{self.images} image{'' if self.images == 1 else 's'}"
        return (f"{printable(self.segment_context_name)}: {images} redrawn at {self.threshold:g} "
                f"({', '.join(self.written) or 'table only'}) in {self.seconds:.1f} s")


def redraw_segment(directory: Path, request: RedrawRequest,
                   alongside: Callable[[SegmentSettings], object] | None = None) -> Redrawn:
    """Redraw one segment's outputs in its lock (see the module's docstring); one-line InputError or
    OutputError when it cannot (not written by detect, unfinished, source gone or changed, a value
    its manifest holds that cannot be used, a link planted where it writes). `alongside` (the
    evaluation, which reads the table and the labels only) runs in a thread once the new table is
    written, while the frames are drawn in the render processes, with the settings the frames are
    judged with; its exception, if any, is raised once they are."""
    started = time.perf_counter()
    directory = Path(directory)
    if not is_marked(directory):
        raise OutputError(f"{directory}: not written by detect (no .detect/settings.json); nothing to redraw")
    no_links(directory)  # before the lock, whose file a linked .detect/ would put elsewhere
    lock = SegmentLock(directory)
    try:
        return _redraw(directory, request, started, alongside)
    finally:
        lock.release()


@dataclasses.dataclass(frozen=True, eq=False)
class _Plan:
    """Everything a redraw reads and decides, before it writes a byte."""

    manifest: Manifest
    record: SettingsRecord  # the manifest's settings after the redraw
    job: SegmentJob  # how this machine draws them
    source: CheckedSource
    results: Mapping[FrameKey, FrameResult]
    labels: SegmentLabels | None
    params: TrackerParams | None
    resume_key: dict[str, object]


def _redraw(directory: Path, request: RedrawRequest, started: float,
            alongside: Callable[[SegmentSettings], object] | None) -> Redrawn:
    plan = _plan(directory, request)
    manifest, job, params, results = plan.manifest, plan.job, plan.params, plan.results
    settings = job.settings
    context = read_context(plan.source.keys)  # read before the folder changes: a bad component is refused first
    for stale in list(temp_files(directory)):
        stale.unlink()  # half-written files of a run or a redraw that was killed

    # The commit point's first half: from here on the folder says it is being redrawn (and records
    # the tracker a second redraw, after a crash, tracks with).
    redrawing = updated_manifest(manifest, plan.source, plan.record, status=REDRAWING,
                                 tracking=tracking_record(params, None))
    write_manifest(directory / MANIFEST_FILE, redrawing)
    journal.save_settings(directory, plan.resume_key | {"redraw": "unfinished"})

    ids = np.full(0, -1, np.int64)

    def track(table: pa.Table) -> np.ndarray:
        nonlocal ids
        ids = np.full(table.num_rows, -1, np.int64) if params is None else track_table(table, settings.class_map,
                                                                                        params)
        return ids

    write_table(directory / DETECTIONS_FILE, results.values(), track, context)
    tracked = params is not None and len({k.frame_timestamp_micros for k in results}) >= 2
    # the render processes draw while this process's main thread mostly waits on them: room for `alongside`
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="redraw-alongside") as side:
        beside = side.submit(alongside, settings) if alongside is not None else None
        written = redraw_pixels(directory, plan.source, job, results, plan.labels, ids if tracked else None)
    if beside is not None:
        beside.result()

    labels = plan.labels.get if plan.labels is not None and job.rules is not None else None
    drawn = boxes_drawn(results.values(), settings.style, job.rules, labels)
    finished = updated_manifest(
        manifest, plan.source, plan.record, status=COMPLETE_WITH_FAILURES if manifest.failures else COMPLETE,
        counts=dict(json_object(manifest.data.get("counts"))) | {"drawn": drawn},
        tracking=tracking_record(params, ids),
        redraw={"at": now_iso(), "images": len(results), "seconds": round(time.perf_counter() - started, 3),
                "threshold": settings.style.threshold})
    write_manifest(directory / MANIFEST_FILE, finished)  # the commit point's second half
    journal.save_settings(directory, redrawn_resume_key(plan.resume_key, job))
    return Redrawn(directory, manifest.segment_context_name, len(results), settings.style.threshold, written,
                   time.perf_counter() - started, settings.protocol, map_path(settings.class_map))


def _plan(directory: Path, request: RedrawRequest) -> _Plan:
    """Read and check everything the redraw needs; one-line errors, and nothing written."""
    manifest = read_manifest(directory)
    status = manifest.status
    if status not in (COMPLETE, COMPLETE_WITH_FAILURES, REDRAWING):
        raise InputError(f"{directory}: the run did not finish (status {printable(status)}); finish it with "
                         f"--resume before redrawing")
    if manifest.input_path is None and not request.source:
        raise InputError(f"{directory / MANIFEST_FILE}: names no source file; cannot redraw")
    recorded = recorded_settings(manifest, request.class_map)
    check_floor(directory, manifest, recorded, request.threshold)
    results = _journal(directory, manifest.segment_context_name)
    source = checked_source(directory, manifest, request.source, recorded.settings.frame_filter, results)
    run = recorded.settings
    style = run.style
    if request.threshold is not None:
        style = dataclasses.replace(style, threshold=request.threshold)
    if request.unscored is not None:
        style = dataclasses.replace(style, unscored=request.unscored)
    asked = dataclasses.replace(run, style=style, draw_mode=request.draw_mode or run.draw_mode,
                                protocol=request.protocol or run.protocol)
    settings = dataclasses.replace(asked, mode="resume", render="auto", workers=request.workers or scaled_threads(2),
                                   decode_threads=scaled_threads(1))
    start_processes(settings)  # they start up while the labels and the tracker are prepared
    labels = _labels(directory, manifest) if settings.draw_mode != "detections" else None
    if settings.needs_labels and labels is None:
        raise InputError(f"{directory}: --draw errors asks for labels, but the run had none; cannot redraw")
    label_types = None if labels is None else labels.types | set(recorded.judged_types)
    job = SegmentJob.judged(settings, label_types, manifest.model.knows_classes)
    params = _tracker(settings, manifest, request.threshold is not None)
    resume_key = journal.load_settings(directory) or {}
    record = SettingsRecord(asked, recorded.batch_size, recorded.score_floor,
                            () if job.rules is None else tuple(job.rules.types))
    return _Plan(manifest, record, job, source, results, labels, params, resume_key)


def _journal(directory: Path, segment: str) -> Mapping[FrameKey, FrameResult]:
    """Every image the run finished, from its journal, which must read back whole: an edited or
    damaged line would leave images out (or name images the source does not hold)."""
    path = journal.journal_path(directory)
    try:
        results, intact = journal.load(directory, segment)
        size = path.stat().st_size if results else 0
    except (OSError, ValueError, ArithmeticError, UnreadableFileError):
        results, intact, size = {}, 0, 0
    if not results:
        raise InputError(f"{directory}: no journal of the frames the run finished (.detect/journal.jsonl); cannot redraw")
    if intact != size:
        raise InputError(f"{path}: cannot be read back past byte {intact:,} of {size:,} (edited or damaged: "
                         f"the images after it are unknown); cannot redraw")
    return results


def _labels(directory: Path, manifest: Manifest) -> SegmentLabels | None:
    """The labels the run drew, as it wrote them beside its detections (ground_truth.parquet): never
    read again from where the run took them (a file or a URI the folder names); None without any."""
    if manifest.input.labels is None:
        return None
    path = directory / GROUND_TRUTH_FILE
    if not path.is_file() or path.is_symlink():
        raise InputError(f"{path}: the run's labels are gone (or not a file); cannot redraw its errors")
    labels, dropped = read_ground_truth(path)
    return SegmentLabels(str(path), labels, dropped)


def map_path(class_map: ClassMap) -> Path | None:
    """The file a class map came from (None: the default)."""
    return None if class_map.source == DEFAULT_MAP_SOURCE else Path(class_map.source)


def _tracker(settings: SegmentSettings, manifest: Manifest, new_threshold: bool) -> TrackerParams | None:
    """The tracker as the manifest records it (a run's, or what `detect track` set); with a new
    threshold, its scores follow that threshold (as a fresh run's do), its lost buffer kept."""
    if not settings.track:
        return None
    params: Mapping[str, Any] = manifest.tracking_params or {}  # checked by TrackerParams
    if not new_threshold:
        try:
            return TrackerParams(**params)
        except (TypeError, ValueError):
            pass  # an edited record: the tracker as a run at this threshold sets it
    lost = params.get("lost_seconds")
    overrides = {"lost_seconds": float(lost)} if isinstance(lost, (int, float)) and not isinstance(lost, bool) else {}
    return tracker_params(settings.style.threshold, **overrides)


