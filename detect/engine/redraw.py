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
`AnimationSet`, so a redraw at 0.4 writes the bytes a fresh run at 0.4 writes.

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

import collections
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from detect.core.errors import InputError, OutputError, RecordError
from detect.core.files import UnreadableFileError
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.engine.outcomes import boxes_drawn
from detect.engine.redraw_source import CheckedSource, checked_source
from detect.engine.render_pool import open_renderer, start_processes
from detect.engine.spec import SegmentJob, SegmentSettings, SettingsRecord, recorded_class_map, scaled_threads
from detect.engine.stages import Rendered, StageTimings
from detect.model.classmap import DEFAULT_MAP_SOURCE, ClassMap, load_class_map
from detect.model.full_frames import decode_full_frames
from detect.results import journal
from detect.results.animations import AnimationSet
from detect.results.ground_truth import GROUND_TRUTH_FILE, read_ground_truth
from detect.results.layout import SegmentLock, is_marked, no_links, temp_files
from detect.results.manifest import COMPLETE, COMPLETE_WITH_FAILURES, MANIFEST_FILE, now_iso
from detect.results.results_folder import Manifest, json_object, read_manifest, write_manifest
from detect.results.source_images import NamedSources
from detect.results.table import DETECTIONS_FILE, write_table
from detect.results.track_ids import track_table, tracker_params, tracking_record
from detect.track.live import ImageTracks
from detect.track.params import TrackerParams
from detect.track.trail_history import Trails
from detect.waymo.camera_labels import SegmentLabels
from detect.waymo.context.read import read_context
from detect.waymo.readers import iter_frames
from detect.waymo.sources import recorded_path

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

    # The commit point's first half: from here on the folder says it is being redrawn.
    # tracking: what a second redraw (after a crash) tracks with
    write_manifest(directory / MANIFEST_FILE, _updated_manifest(plan, status=REDRAWING,
                                                                tracking=tracking_record(params, None)))
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
        written = _redraw_pixels(directory, plan.source, job, results, plan.labels, ids if tracked else None)
    if beside is not None:
        beside.result()

    labels = plan.labels.get if plan.labels is not None and job.rules is not None else None
    drawn = boxes_drawn(results.values(), settings.style, job.rules, labels)
    finished = _updated_manifest(
        plan, status=COMPLETE_WITH_FAILURES if manifest.failures else COMPLETE,
        counts=dict(json_object(manifest.data.get("counts"))) | {"drawn": drawn},
        tracking=tracking_record(params, ids),
        redraw={"at": now_iso(), "images": len(results), "seconds": round(time.perf_counter() - started, 3),
                "threshold": settings.style.threshold})
    write_manifest(directory / MANIFEST_FILE, finished)  # the commit point's second half
    journal.save_settings(directory, _resume_key(plan.resume_key, job))
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
    recorded = _recorded(manifest, request)
    _check_floor(directory, manifest, recorded, request.threshold)
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


def _recorded(manifest: Manifest, request: RedrawRequest) -> SettingsRecord:
    """The run's settings as its manifest records them (the request's class map in place of the
    recorded one, which is then not read)."""
    settings = manifest.data.get("settings")
    if not isinstance(settings, Mapping) or not isinstance(settings.get("draw"), Mapping):
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: records no drawing settings; cannot redraw")
    override = None if request.class_map is None else load_class_map(request.class_map)  # a ClassMap is never falsy
    try:
        return SettingsRecord.from_json(settings, track=manifest.data.get("tracking") is not None,
                                        class_map=lambda source: override or recorded_class_map(source))
    except RecordError as err:
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: its settings cannot be read back ({err}); "
                         f"cannot redraw") from None


def _check_floor(directory: Path, manifest: Manifest, recorded: SettingsRecord, threshold: float | None) -> None:
    """A threshold below the run's score floor would draw boxes the run never kept: refused."""
    if threshold is None:
        return
    floor = recorded.score_floor if recorded.score_floor is not None else manifest.model.score_floor
    if floor is not None and threshold < floor:
        raise InputError(f"{directory}: cannot redraw at {threshold:g}: the run kept only boxes scoring {floor:g} or "
                         f"more (its score floor); redraw at {floor:g} or above, or run the model again with "
                         f"--score-floor {threshold:g}")
    if floor is None and threshold < recorded.settings.style.threshold:
        raise InputError(f"{directory}: cannot redraw at {threshold:g}: the run records no score floor, so which "
                         f"boxes below its threshold {recorded.settings.style.threshold:g} it kept is unknown")


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


def _redraw_pixels(directory: Path, source: CheckedSource, job: SegmentJob, results: Mapping[FrameKey, FrameResult],
                   labels: SegmentLabels | None, ids: np.ndarray | None) -> tuple[str, ...]:
    """Every finished image decoded, drawn and written as the run did; the animations rebuilt."""
    settings, keys = job.settings, source.keys
    if not settings.needs_full_frames:
        return ()
    tracks = _image_tracks(results, ids) if ids is not None else {}
    timings = StageTimings()
    renderer = open_renderer(directory, job, timings)
    cameras = {k.camera_name for k in results}
    animations = (AnimationSet(directory, mp4=settings.mp4, gif=settings.gif, mosaic=len(cameras) >= 2,
                               executor=renderer.executor) if settings.animations else None)
    by_index: dict[int, FrameKey] = {}
    window: collections.deque[concurrent.futures.Future[Rendered]] = collections.deque()

    def numbered() -> Iterator[tuple[int, bytes]]:
        for index, frame in enumerate(f for f in iter_frames(keys.source, settings.frame_filter, keys)
                                      if f.key in results):
            by_index[index] = frame.key
            yield index, frame.jpeg

    def consume(future: concurrent.futures.Future[Rendered]) -> None:
        rendered = future.result()
        if animations is not None and rendered.animation is not None:
            animations.add(rendered.animation)

    drawn = 0
    try:
        for decoded in decode_full_frames(numbered(), threads=settings.decode_threads, max_pixels=settings.max_pixels):
            key = by_index.pop(decoded.index)
            frame_labels = labels.get(key) if labels is not None and job.rules is not None else None
            window.append(renderer.submit(decoded, key, results[key].detections, frame_labels, tracks.get(key)))
            drawn += 1
            while len(window) > 2 * settings.workers + 2:
                consume(window.popleft())
        while window:
            consume(window.popleft())
        if drawn != len(results):
            raise InputError(f"{directory}: cannot redraw: its source file {printable(source.uri, 200)} has changed "
                             f"since the run ({len(results) - drawn} of the run's {len(results)} images are no longer readable)")
        if animations is not None:
            animations.close()
    except BaseException:
        if animations is not None:
            animations.abort()
        raise
    finally:
        renderer.close()
    written = ["frames"] if settings.write_frames else []
    written += (["GIFs"] if settings.gif else []) + (["MP4s"] if settings.mp4 else [])
    return tuple(written + (["mosaic"] if animations is not None and len(cameras) >= 2 else []))


def _image_tracks(results: Mapping[FrameKey, FrameResult], ids: np.ndarray) -> dict[FrameKey, ImageTracks]:
    """Each image's track ids (the table's rows are in (timestamp, camera) order, an image's boxes
    as the journal holds them) and trails, each camera's images in time order, as the run gives them."""
    trails = Trails()
    out: dict[FrameKey, ImageTracks] = {}
    offset = 0
    for key in sorted(results, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name))):
        detections = results[key].detections
        own = ids[offset:offset + len(detections)]
        offset += len(detections)
        out[key] = ImageTracks(own, trails.update(int(key.camera_name), key.frame_timestamp_micros, own,
                                                  detections.xyxy))
    return out


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


def _updated_manifest(plan: _Plan, **sections: object) -> Manifest:
    """The manifest with the redraw's settings, the file it read (its fingerprint, taken now when
    the run recorded none) and these `sections`."""
    manifest = plan.manifest
    source = dict(json_object(manifest.data.get("input"))) | {
        "path": recorded_path(plan.source.keys.source),
        "fingerprint": None if plan.source.fingerprint is None else plan.source.fingerprint.to_json()}
    return manifest.with_sections(input=source, settings=plan.record.to_json(), **sections)


def _resume_key(previous: Mapping[str, object], job: SegmentJob) -> dict[str, object]:
    """settings.json as a fresh run with the new drawing settings writes it (so `--resume` with them
    goes on, and with the old ones is refused): the run's, with the redraw's drawing and judging."""
    return {k: v for k, v in previous.items() if k != "redraw"} | job.redrawable_key()
