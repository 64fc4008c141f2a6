"""The stages `--engine ray` runs on the cluster, over numpy batches (dicts of column arrays).

read (our streaming readers) -> decode + resize (tf.data, as the local pipeline) -> detect
(`Detector` in an actor) -> render (decode the full frame again, draw, write the PNG/JPG).
Each stage reuses the local pipeline's functions, so pixels, boxes and error texts are the same.
Importable without Ray: the functions are plain, and so is the actor's class.

A stage never raises for one bad input: it writes the problem into the row's `stage` / `error`
columns and later stages pass the row on. An exception inside a Ray Data function fails the
whole dataset, and one broken segment must never stop the others.

Full-size frames never enter Ray's object store: the JPEG travels, the model's small input
travels, and the render task decodes the full frame again (~11 ms) right where it draws it. A
1920x1280 frame is 7.4 MB; shipping it between nodes costs more than decoding it twice.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.fs as pafs

from detect.core.cameras import CameraName
from detect.core.errors import error_text
from detect.core.records import CameraFrame, FrameFailure, FrameKey, FrameResult, Labels
from detect.core.tf_env import import_tensorflow
from detect.engine.spec import SegmentJob
from detect.engine.stages import DECODE, DETECT, READ, RENDER, StageTimings, detect_images, render_frame
from detect.engine.tuning import keep_freed_memory
from detect.model.detector import Detector
from detect.model.inputs import DecodedImage, InputSize, decode_error, decode_stream, resize_images
from detect.model.tiles import TiledDetector, TileSpec
from detect.results import journal
from detect.results.ground_truth import RENDER_LABELS_FILE, read_ground_truth
from detect.results.layout import segment_dir
from detect.waymo.camera_labels import SegmentLabels, label_types, read_labels
from detect.waymo.context.read import read_context
from detect.waymo.context.segment import SegmentContext
from detect.waymo.readers import iter_frames, read_keys
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import SegmentSource, split_uri

# Rows per batch a read task hands to Ray (Ray merges them into blocks of its target size).
ROWS_PER_READ_BATCH = 8
# Per-row seconds, and the manifest stage each one adds to.
TIMING_COLUMNS = {"t_decode": "decode", "t_detect": "detect", "t_draw": "draw", "t_write": "frame_write"}

Batch = dict[str, np.ndarray]


@dataclasses.dataclass(frozen=True)
class WorkItem:
    """One segment for a read task: where it is, which images to read, which are done already."""

    uri: str  # as the user named it: the key of run.json and the name in error messages
    path: str  # inside its filesystem; absolute for local files, so any worker finds it
    format: str
    local: bool
    segment: str
    cameras: tuple[int, ...] | None = None
    first_frame: int = 0
    max_frames: int | None = None
    done: tuple[tuple[int, int], ...] = ()  # (frame_timestamp_micros, camera) finished earlier

    @classmethod
    def for_source(cls, source: SegmentSource, segment: str, frame_filter: FrameFilter,
                   done: Collection[tuple[int, int]] = ()) -> WorkItem:
        cameras = tuple(int(c) for c in frame_filter.cameras) if frame_filter.cameras else None
        return cls(source.uri, source.path, source.format, source.is_local, segment, cameras,
                   frame_filter.first_frame, frame_filter.max_frames, tuple(sorted(done)))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkItem:
        data = json.loads(text)
        cameras = data.pop("cameras")
        cameras = tuple(cameras) if cameras else None
        done = tuple((int(t), int(c)) for t, c in data.pop("done"))
        return cls(**data, cameras=cameras, done=done)

    def source(self) -> SegmentSource:
        return open_source(self.uri, self.path, self.format, self.local)

    def frame_filter(self) -> FrameFilter:
        cameras = tuple(CameraName(c) for c in self.cameras) if self.cameras else None
        return FrameFilter(cameras=cameras, first_frame=self.first_frame, max_frames=self.max_frames)


# A Ray Data row: column name -> value, the shape `map_batches` hands rows in (Ray's format).
RayRow = dict[str, Any]


def open_source(uri: str, path: str, fmt: str, local: bool) -> SegmentSource:
    """The driver's `SegmentSource` rebuilt on a worker (pyarrow filesystems are not shipped)."""
    filesystem = pafs.LocalFileSystem() if local else split_uri(uri)[0]
    return SegmentSource(uri=uri, path=path, format=fmt, filesystem=filesystem)  # type: ignore[arg-type]


def tensorflow_on_cpu() -> None:
    """Hide the GPUs from TensorFlow in this process (call before its first TensorFlow work).

    Ray leaves every GPU visible to tasks that asked for none, and TensorFlow takes nearly all
    the memory of every GPU it sees: a decode task would starve the detector actors.
    """
    tf = import_tensorflow()
    if tf.config.list_physical_devices("GPU"):
        try:
            tf.config.set_visible_devices([], "GPU")
        except RuntimeError:  # this process already hid them before its first TensorFlow work
            pass


def plan_segment(uri: str, path: str, fmt: str, local: bool,
                 ground_truth: str | None = None) -> tuple[tuple[str, ...], Any, str | None, SegmentLabels | None,
                                                           SegmentContext] | str:
    """Key columns of one segment (names, `KeyIndex`, ground-truth note), its labels and its context
    (the boxes' ranges and the images' conditions: a v1 file's come with its keys), or a one-line
    error. The labels and context are small; the driver writes them into the tables."""
    if fmt == "v1":  # TFRecords are read with TensorFlow
        tensorflow_on_cpu()
    try:
        keys = read_keys(open_source(uri, path, fmt, local))
        labels = read_labels(keys, ground_truth)
        context = read_context(keys)
    except Exception as err:  # reported as this segment's failure; the others go on
        return error_text(err)
    return keys.segment_names, keys.index, keys.labels, labels, context


def read_frames(batch: Batch) -> Iterator[Batch]:
    """Read task: stream each work item's camera images with `detect.waymo.readers.iter_frames`."""
    for text in batch["item"]:
        item = WorkItem.from_json(str(text))
        if item.format == "v1":
            tensorflow_on_cpu()
        done = set(item.done)
        rows: list[RayRow] = []
        try:
            for frame in iter_frames(item.source(), item.frame_filter()):
                if frame.key.order in done:
                    continue
                rows.append(_frame_row(item.uri, frame))
                if len(rows) >= ROWS_PER_READ_BATCH:
                    yield _columns(rows)
                    rows = []
        except Exception as err:  # a file that breaks half-way: the frames before it still count
            rows.append(_read_error_row(item, error_text(err)))
        if rows:
            yield _columns(rows)


def decode_images(batch: Batch, *, input_size: tuple[int, int] | None, max_pixels: int) -> Batch:
    """Decode task: the model's input, exactly as the local pipeline makes it (`decode_stream`)."""

    keep_freed_memory()
    tensorflow_on_cpu()
    n = len(batch[TIMESTAMP])
    out = dict(batch)
    out["width"], out["height"] = np.zeros(n, np.int64), np.zeros(n, np.int64)
    out["model_h"], out["model_w"] = np.zeros(n, np.int64), np.zeros(n, np.int64)
    model_input = np.full(n, b"", dtype=object)
    stage, error = batch["stage"].astype(object).copy(), batch["error"].astype(object).copy()
    ok = [i for i in range(n) if not stage[i]]
    start = time.perf_counter()
    decoded = {d.index: d for d in decode_stream(((i, bytes(batch["jpeg"][i])) for i in ok),
                                                 input_size=input_size, keep_full=False, parallel=1,
                                                 max_pixels=max_pixels)}
    for i in ok:
        d = decoded.get(i)
        if d is None:
            stage[i], error[i] = DECODE, decode_error(bytes(batch["jpeg"][i]), max_pixels)
            continue
        out["width"][i], out["height"][i] = d.width, d.height
        out["model_h"][i], out["model_w"][i] = d.model_input.shape[:2]
        model_input[i] = d.model_input.tobytes()  # bytes: one Arrow type whatever the image sizes
    out["model_input"], out["stage"], out["error"] = model_input, stage, error
    out["t_decode"] = np.full(n, (time.perf_counter() - start) / max(len(ok), 1))
    return out


class DetectorActor:
    """The detector as a Ray Data callable class: loaded once per actor, then called per batch."""

    def __init__(self, model: str, threshold: float, classes: list[str] | None, batch_size: int,
                 nms_iou: float | None = None, tile: TileSpec | None = None, input_size: InputSize = None,
                 runtime: str = "auto") -> None:
        detector = Detector(model, threshold=threshold, classes=classes, batch_size=batch_size, nms_iou=nms_iou,
                            runtime=runtime)
        # With tiles, the rows hold full frames: the whole frame and its tiles are resized here.
        self.detector: Any = detector if tile is None else TiledDetector(detector, tile, input_size, resize_images)

    def __call__(self, batch: Batch) -> Batch:
        return detect_batch(self.detector, batch)


def detect_batch(detector: Any, batch: Batch) -> Batch:
    """Detections for every decoded row, as journal lines; same-shape images share a model call."""
    n = len(batch[TIMESTAMP])
    out = {k: v for k, v in batch.items() if k != "model_input"}
    stage, error = batch["stage"].astype(object).copy(), batch["error"].astype(object).copy()
    result = np.full(n, "", dtype=object)
    t_detect = np.zeros(n)
    groups: dict[tuple[int, int], list[int]] = {}
    for i in range(n):
        if not stage[i]:
            groups.setdefault((int(batch["model_h"][i]), int(batch["model_w"][i])), []).append(i)
    for (h, w), rows in groups.items():
        decoded = [DecodedImage(i, int(batch["width"][i]), int(batch["height"][i]), None,
                                np.frombuffer(batch["model_input"][i], np.uint8).reshape(h, w, 3)) for i in rows]
        keys = [FrameKey(str(batch[SEGMENT][i]), int(batch[TIMESTAMP][i]), CameraName(int(batch[CAMERA][i]))) for i in rows]
        start = time.perf_counter()
        outcomes = detect_images(detector, decoded, keys)
        t_detect[rows] = (time.perf_counter() - start) / len(rows)
        for i, d, key, outcome in zip(rows, decoded, keys, outcomes, strict=True):
            if isinstance(outcome, FrameFailure):
                stage[i], error[i] = DETECT, outcome.error
            else:
                result[i] = journal.encode(FrameResult(key, d.width, d.height, outcome))
    out["result"], out["stage"], out["error"], out["t_detect"] = result, stage, error, t_detect
    return out


def render_frames(batch: Batch, *, root: str, job: SegmentJob) -> Batch:
    """Render task: decode the full frame, draw, write the annotated frame atomically.

    Returns small rows (keys, the journal line, errors, timings): never an image.
    `job`'s settings must have animations off: the driver builds them from the frames on disk.
    """
    settings = job.settings
    keep_freed_memory()
    tensorflow_on_cpu()
    n = len(batch[TIMESTAMP])
    out = {k: v for k, v in batch.items() if k not in ("jpeg", "model_h", "model_w")}
    stage, error = batch["stage"].astype(object).copy(), batch["error"].astype(object).copy()
    t_decode = np.asarray(batch["t_decode"], np.float64).copy()
    t_draw, t_write = np.zeros(n), np.zeros(n)
    ok = [i for i in range(n) if not stage[i]]
    if settings.write_frames and ok:
        # prefetch=1: at most a few full-size frames per task are ever decoded at once.
        stream = decode_stream(((i, bytes(batch["jpeg"][i])) for i in ok), input_size=None, keep_full=True,
                               max_pixels=settings.max_pixels,
                               parallel=1, prefetch=1)
        seen = set()
        start = time.perf_counter()
        for decoded in stream:
            i = decoded.index
            seen.add(i)
            t_decode[i] += time.perf_counter() - start
            segment = str(batch[SEGMENT][i])
            timings = StageTimings()
            try:
                result = journal.decode(str(batch["result"][i]), segment)
                directory = segment_dir(Path(root), segment)
                labels = _render_labels(directory / journal.STATE_DIR / RENDER_LABELS_FILE) if job.rules else None
                here = job if labels is None else job.for_label_types(labels[1])
                render_frame(decoded, result.key, result.detections, directory, here, timings,
                             None if labels is None else labels[0].get(result.key, Labels.empty()))
            except Exception as err:  # one frame's drawing or writing failed: skip it
                stage[i], error[i] = RENDER, error_text(err)
            t_draw[i] = timings.values.get("draw", 0.0)
            t_write[i] = timings.values.get("frame_write", 0.0)
            start = time.perf_counter()
        for i in ok:
            if i not in seen:
                stage[i], error[i] = RENDER, decode_error(bytes(batch["jpeg"][i]), settings.max_pixels)
    out.update(stage=stage, error=error, t_decode=t_decode, t_draw=t_draw, t_write=t_write)
    return out


@functools.lru_cache(maxsize=8)
def _labels_file(path: Path, stamp: tuple[int, int]) -> tuple[dict[FrameKey, Labels], frozenset[int]]:
    labels = read_ground_truth(path)[0]
    return labels, label_types(labels.values())


def _render_labels(path: Path) -> tuple[dict[FrameKey, Labels], frozenset[int]] | None:
    """A segment's labels for drawing its errors, and the Waymo types they have (read once per task
    process and file version); None when the driver wrote none (no labels: the detections are drawn
    alone)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _labels_file(path, (stat.st_size, stat.st_mtime_ns))


def failure_of(row: RayRow) -> FrameFailure:
    key = FrameKey(str(row[SEGMENT]), int(row[TIMESTAMP]), CameraName(int(row[CAMERA])))
    return FrameFailure(key, str(row["stage"]), str(row["error"]))


def _frame_row(uri: str, frame: CameraFrame) -> RayRow:
    return {"source": uri, SEGMENT: frame.segment_context_name, TIMESTAMP: frame.frame_timestamp_micros,
            CAMERA: int(frame.camera_name), "jpeg": frame.jpeg, "stage": "", "error": ""}


def _read_error_row(item: WorkItem, error: str) -> RayRow:
    """A file that broke while read: one row that carries the error, not an image."""
    return {"source": item.uri, SEGMENT: item.segment, TIMESTAMP: -1, CAMERA: int(CameraName.FRONT), "jpeg": b"",
            "stage": READ, "error": error}


def _columns(rows: list[RayRow]) -> Batch:
    return {
        "source": np.array([r["source"] for r in rows], dtype=object),
        SEGMENT: np.array([r[SEGMENT] for r in rows], dtype=object),
        TIMESTAMP: np.array([r[TIMESTAMP] for r in rows], dtype=np.int64),
        CAMERA: np.array([r[CAMERA] for r in rows], dtype=np.int64),
        "jpeg": _object_array([r["jpeg"] for r in rows]),
        "stage": np.array([r["stage"] for r in rows], dtype=object),
        "error": np.array([r["error"] for r in rows], dtype=object),
    }


def _object_array(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
