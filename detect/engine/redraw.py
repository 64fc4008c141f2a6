"""`detect redraw`: a finished segment's frames, animations and table again at a new drawing
threshold or drawing mode, from its journal and its source images, without the model.

The boxes come from the journal (every box down to the score floor, as the run recorded them);
the images are read again from the segment file the manifest names, after its fingerprint
(`detect.waymo.source_check`) says it is the file the run read; the track ids are computed again
for the new threshold (the tracker's scores follow it) and each image's trail is rebuilt from the
table. Frames are decoded to the run's own pixels without TensorFlow (`detect.model.full_frames`)
and go through the run's render pool and drawing (`render_pixels`), and the animations through the
same `AnimationSet`, so a redraw at 0.4 writes the bytes a fresh run at 0.4 writes.

One segment at a time, in its lock. The manifest is the commit point: before the first frame is
drawn it records the new drawing settings with status `redrawing` (and settings.json a key no
`--resume` matches), and only once every frame, animation and the table are written does it get
its status back. A crash in between leaves a folder that says `redrawing` (the report's status
column, `detect run`'s resume refusal) and that `detect redraw` again finishes; every file in it
is whole (each one is written under a temp name and renamed).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from detect.core.cameras import CameraName
from detect.core.errors import InputError, OutputError
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.engine.outcomes import boxes_drawn
from detect.engine.render_pool import open_renderer, start_processes
from detect.engine.spec import DRAW_MODES, SegmentJob, SegmentSettings
from detect.engine.stages import Rendered, StageTimings
from detect.model.classmap import ClassMap, default_class_map, load_class_map
from detect.model.full_frames import decode_full_frames
from detect.render.draw import DrawStyle
from detect.sinks import journal
from detect.sinks.animations import AnimationSet
from detect.sinks.layout import SegmentLock, is_marked
from detect.sinks.manifest import COMPLETE, COMPLETE_WITH_FAILURES, MANIFEST_FILE, now_iso, write_manifest
from detect.sinks.results_folder import Manifest, finished_frames, read_manifest
from detect.sinks.table import DETECTIONS_FILE, write_table
from detect.sinks.tracks import track_table, tracker_params, tracking_record
from detect.track.live import ImageTracks
from detect.track.params import TrackerParams
from detect.track.trail_history import Trails
from detect.waymo.camera_labels import SegmentLabels, read_labels
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.source_check import SourceFingerprint, source_problem
from detect.waymo.sources import resolve_one

REDRAWING = "redrawing"  # a manifest's status while a redraw is under way (and after one that crashed)


@dataclasses.dataclass(frozen=True)
class RedrawRequest:
    """What to change (None: as the run drew it) and how many workers draw."""

    threshold: float | None = None
    draw: str | None = None  # one of DRAW_MODES
    unscored: str | None = None  # one of detect.render.draw.UNSCORED
    class_map: Path | None = None  # None: the run's
    workers: int | None = None


@dataclasses.dataclass(frozen=True)
class Redrawn:
    """One segment redrawn: what it drew, at which threshold, in how long."""

    segment_dir: Path
    segment_context_name: str
    images: int
    threshold: float
    written: tuple[str, ...]  # frames, GIFs, MP4s, mosaic: what the run wrote and this redrew
    seconds: float

    def line(self) -> str:
        images = f"{self.images} image{'' if self.images == 1 else 's'}"
        return (f"{printable(self.segment_context_name)}: {images} redrawn at {self.threshold:g} "
                f"({', '.join(self.written) or 'table only'}) in {self.seconds:.1f} s")


def redraw_segment(directory: Path, request: RedrawRequest, alongside: Callable[[], object] | None = None) -> Redrawn:
    """Redraw one segment's outputs in its lock (see the module's docstring); one-line InputError or
    OutputError when it cannot (not written by detect, unfinished, source gone or changed).
    `alongside` (the evaluation, which reads the table and the labels only) runs in a thread once
    the new table is written, while the frames are drawn in the render processes; its exception,
    if any, is raised once they are."""
    started = time.perf_counter()
    directory = Path(directory)
    if not is_marked(directory):
        raise OutputError(f"{directory}: not written by detect (no .detect/settings.json); nothing to redraw")
    lock = SegmentLock(directory)
    try:
        return _redraw(directory, request, started, alongside)
    finally:
        lock.release()


def _redraw(directory: Path, request: RedrawRequest, started: float,
            alongside: Callable[[], object] | None) -> Redrawn:
    manifest = read_manifest(directory)
    status = manifest.status
    if status not in (COMPLETE, COMPLETE_WITH_FAILURES, REDRAWING):
        raise InputError(f"{directory}: the run did not finish (status {printable(status)}); finish it with "
                         f"--resume before redrawing")
    uri = manifest.input_path
    if uri is None:
        raise InputError(f"{directory / MANIFEST_FILE}: names no source file; cannot redraw")
    source_info = manifest.section("input")
    problem = source_problem(uri, SourceFingerprint.from_json(source_info.get("fingerprint")))
    if problem is not None:
        raise InputError(f"{directory}: cannot redraw: its source file {uri} {problem}")
    segment = manifest.segment_context_name
    results = finished_frames(directory, segment)
    if not results:
        raise InputError(f"{directory}: no journal of the frames the run finished (.detect/journal.jsonl); cannot redraw")
    keys = read_keys(resolve_one(uri), verified=True)  # its fingerprint was checked just above
    if keys.segment_context_name != segment:
        raise InputError(f"{directory}: cannot redraw: its source file {uri} has changed since the run "
                         f"(it holds segment {printable(keys.segment_context_name)})")
    recorded = _recorded_settings(manifest)
    class_map = _class_map(manifest, request.class_map)
    settings = _settings(recorded, manifest, request, class_map)
    start_processes(settings)  # they start up while the labels, table and tracks are prepared
    labels = _labels(keys, source_info.get("ground_truth")) if source_info.get("labels") is not None else None
    if settings.draw_labels and labels is None:
        raise InputError(f"{directory}: --draw errors asks for labels, but the run had none; cannot redraw")
    job = SegmentJob.judged(settings, None if labels is None else labels.types, manifest.model.knows_classes)
    params = _tracker(settings, manifest, request.threshold is not None)

    # The commit point's first half: from here on the folder says it is being redrawn.
    data = _updated_manifest(manifest, settings, job, status=REDRAWING)
    data["tracking"] = tracking_record(params, None)  # what a second redraw (after a crash) tracks with
    write_manifest(directory / MANIFEST_FILE, data)
    resume_key = journal.load_settings(directory) or {}
    journal.save_settings(directory, resume_key | {"redraw": "unfinished"})

    ids = np.full(0, -1, np.int64)

    def track(table: pa.Table) -> np.ndarray:
        nonlocal ids
        ids = np.full(table.num_rows, -1, np.int64) if params is None else track_table(table, class_map, params)
        return ids

    write_table(directory / DETECTIONS_FILE, results.values(), track)
    tracked = params is not None and len({k.frame_timestamp_micros for k in results}) >= 2
    # the render processes draw while this process's main thread mostly waits on them: room for `alongside`
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="redraw-alongside") as side:
        beside = side.submit(alongside) if alongside is not None else None
        written = _redraw_pixels(directory, uri, keys, job, results, labels, ids if tracked else None, manifest)
    if beside is not None:
        beside.result()

    data = _updated_manifest(manifest, settings, job, status=COMPLETE_WITH_FAILURES if manifest.failures else COMPLETE)
    data["counts"] = dict(manifest.section("counts")) | {"drawn": boxes_drawn(results.values(), settings.style.threshold)}
    data["tracking"] = tracking_record(params, ids)
    data["redraw"] = {"at": now_iso(), "images": len(results), "seconds": round(time.perf_counter() - started, 3),
                      "threshold": settings.style.threshold}
    write_manifest(directory / MANIFEST_FILE, data)  # the commit point's second half
    journal.save_settings(directory, _resume_key(resume_key, settings, job))
    return Redrawn(directory, segment, len(results), settings.style.threshold, written,
                   time.perf_counter() - started)


def _redraw_pixels(directory: Path, uri: str, keys: SegmentKeys, job: SegmentJob, results: Mapping[FrameKey, FrameResult],
                   labels: SegmentLabels | None, ids: np.ndarray | None, manifest: Manifest) -> tuple[str, ...]:
    """Every finished image decoded, drawn and written as the run did; the animations rebuilt."""
    settings = job.settings
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
            frame_labels = labels.get(key) if labels is not None and job.errors is not None else None
            window.append(renderer.submit(decoded, key, results[key].detections, frame_labels, tracks.get(key)))
            drawn += 1
            while len(window) > 2 * settings.workers + 2:
                consume(window.popleft())
        while window:
            consume(window.popleft())
        if drawn != len(results):
            raise InputError(f"{directory}: cannot redraw: its source file {uri} has changed since the run "
                             f"({len(results) - drawn} of the run's {len(results)} images are no longer readable)")
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


def _recorded_settings(manifest: Manifest) -> Mapping[str, object]:
    settings = manifest.section("settings")
    if not isinstance(settings.get("draw"), Mapping):
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: records no drawing settings; cannot redraw")
    return settings


def _class_map(manifest: Manifest, override: Path | None) -> ClassMap:
    if override is not None:
        return load_class_map(override)
    errors = manifest.section("settings").get("errors")
    source = errors.get("class_map") if isinstance(errors, Mapping) else None
    default = default_class_map()
    return default if not isinstance(source, str) or source == default.source else load_class_map(Path(source))


def _settings(recorded: Mapping[str, object], manifest: Manifest, request: RedrawRequest,
              class_map: ClassMap) -> SegmentSettings:
    """The run's settings as its manifest records them, with the request's changes."""
    draw = dict(recorded["draw"])  # type: ignore[call-overload]
    draw.pop("palette", None)  # recorded as its length: only the default palette is drawn
    classes = draw.get("classes")
    style = DrawStyle(**{k: v for k, v in draw.items() if k in {f.name for f in dataclasses.fields(DrawStyle)}}
                      | {"classes": None if classes is None else frozenset(classes)})
    if request.threshold is not None:
        style = dataclasses.replace(style, threshold=request.threshold)
    if request.unscored is not None:
        style = dataclasses.replace(style, unscored=request.unscored)
    cameras = recorded.get("cameras")
    errors = recorded.get("errors")
    protocol = errors.get("protocol") if isinstance(errors, Mapping) else None
    mode = request.draw or recorded.get("draw_mode") or "auto"
    if mode not in DRAW_MODES:
        mode = "auto"
    try:
        settings = SegmentSettings(
            frame_filter=FrameFilter(cameras=None if not isinstance(cameras, list) else
                                     tuple(CameraName[c] for c in cameras),
                                     first_frame=int(recorded.get("first_frame") or 0),  # type: ignore[call-overload]
                                     max_frames=recorded.get("max_frames")),  # type: ignore[arg-type]
            write_frames=bool(recorded.get("write_frames", True)),
            frame_format=str(recorded.get("frame_format", "png")),
            gif=bool(recorded.get("gif", True)), mp4=bool(recorded.get("mp4", False)),
            gif_width=int(recorded.get("gif_width", 640)),  # type: ignore[call-overload]
            style=style, mode="resume", max_pixels=int(recorded.get("max_pixels")),  # type: ignore[call-overload]
            draw=str(mode), class_map=class_map, protocol=str(protocol or "coco"),
            track=manifest.data.get("tracking") is not None,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: its settings cannot be read back ({err}); "
                         f"cannot redraw") from None
    return dataclasses.replace(settings, workers=request.workers) if request.workers else settings


def _tracker(settings: SegmentSettings, manifest: Manifest, new_threshold: bool) -> TrackerParams | None:
    """The tracker as the manifest records it (a run's, or what `detect track` set); with a new
    threshold, its scores follow that threshold (as a fresh run's do), its lost buffer kept."""
    if not settings.track:
        return None
    recorded = manifest.section("tracking").get("params")
    params = recorded if isinstance(recorded, Mapping) else {}
    if not new_threshold:
        try:
            return TrackerParams(**params)
        except (TypeError, ValueError):
            pass  # an edited record: the tracker as a run at this threshold sets it
    lost = params.get("lost_seconds")
    overrides = {"lost_seconds": float(lost)} if isinstance(lost, (int, float)) and not isinstance(lost, bool) else {}
    return tracker_params(settings.style.threshold, **overrides)


def _labels(keys: SegmentKeys, origin: object) -> SegmentLabels | None:
    """The labels the run drew, from where it read them (its own file, or a camera_box file)."""
    if not isinstance(origin, str):
        return None
    gt = origin.removeprefix("camera_box file ") if origin.startswith("camera_box file ") else None
    return read_labels(keys, gt)


def _updated_manifest(manifest: Manifest, settings: SegmentSettings, job: SegmentJob, *, status: str) -> dict[str, object]:
    data = dict(manifest.data)
    recorded = dict(manifest.section("settings"))
    recorded["draw"] = dataclasses.asdict(settings.style) | {"palette": len(settings.style.palette)}
    recorded["draw_mode"] = settings.draw
    recorded["errors"] = job.errors_json()
    data["settings"] = recorded
    data["status"] = status
    return data


def _resume_key(previous: Mapping[str, object], settings: SegmentSettings, job: SegmentJob) -> dict[str, object]:
    """settings.json as a fresh run with the new drawing settings writes it (so `--resume` with them
    goes on, and with the old ones is refused)."""
    style = dataclasses.asdict(settings.style)
    key = {k: v for k, v in previous.items() if k != "redraw"}
    key |= {f"draw_{k}": v for k, v in style.items() if k not in ("classes", "palette")}
    rules = job.errors
    key["draw"] = settings.draw
    key["errors"] = None if rules is None else f"{rules.protocol.name} protocol, {rules.class_map.source}"
    return key
