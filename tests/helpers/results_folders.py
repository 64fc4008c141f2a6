"""Results folders as `detect segment` writes them, crafted from boxes and labels without a model:
the table, the labels, the journal and a manifest, for tests of what reads a results folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult, Labels
from detect.sinks import journal
from detect.sinks.ground_truth import GROUND_TRUTH_FILE, write_ground_truth
from detect.sinks.table import DETECTIONS_FILE, with_track_ids, write_table

SEGMENT = "seg_eval"
T0 = 1_000_000
PERSON, CAR = 1, 3  # COCO classes
VEHICLE, PEDESTRIAN = 1, 2  # Waymo types

Box = tuple[float, float, float, float]


def key(i: int = 0, camera: CameraName = CameraName.FRONT, segment: str = SEGMENT) -> FrameKey:
    """The `i`-th image of a camera, 0.1 s apart."""
    return FrameKey(segment, T0 + i * 100_000, camera)


def labels(*rows: tuple[Box, int], ids: list[str] | None = None) -> Labels:
    """(xyxy, Waymo type) rows at LEVEL_1, with object ids obj0, obj1... unless `ids` names them."""
    return Labels(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), [r[1] for r in rows], [1] * len(rows),
                  tuple(ids if ids is not None else (f"obj{i}" for i in range(len(rows)))))


def dets(*rows: tuple[Box, float, int]) -> Detections:
    """(xyxy, score, COCO class) rows, best first."""
    rows = tuple(sorted(rows, key=lambda r: -r[1]))
    return Detections(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), [r[1] for r in rows],
                      [r[2] for r in rows], tuple("person" if r[2] == PERSON else str(r[2]) for r in rows))


def segment_folder(parent: Path, images: dict[FrameKey, tuple[Labels, Detections]], threshold: float = 0.5,
                   knows: list[int] | None = None, name: str = SEGMENT, track_ids: list[int] | None = None) -> Path:
    """A segment's results folder (table, labels, journal, manifest) under `parent`; `track_ids`:
    one per row of the table (rows in time order, best score first in an image; -1 for none)."""
    directory = parent / name
    directory.mkdir(parents=True)
    results = [FrameResult(k, 1920, 1280, d) for k, (_, d) in images.items()]
    write_table(directory / DETECTIONS_FILE, results)
    if track_ids is not None:
        path = directory / DETECTIONS_FILE
        pq.write_table(with_track_ids(pq.read_table(path), np.asarray(track_ids, np.int64)), path)
    write_ground_truth(directory / GROUND_TRUTH_FILE, {k: lab for k, (lab, _) in images.items()}, images)
    with journal.Journal(directory) as log:
        for result in results:
            log.append(result)
    manifest = {"segment_context_name": name, "status": "complete", "settings": {"draw": {"threshold": threshold}},
                "model": {"knows_classes": knows if knows is not None else "COCO label map"}}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def walking_pedestrian(parent: Path, frames: int = 6, name: str = SEGMENT) -> Path:
    """One labeled pedestrian (obj0) walking right, detected and tracked (id 1) on every image."""
    images = {}
    for i in range(frames):
        box = (100.0 + 10 * i, 100.0, 200.0 + 10 * i, 300.0)
        images[key(i, segment=name)] = (labels((box, PEDESTRIAN)), dets((box, 0.9, PERSON)))
    return segment_folder(parent, images, knows=[PERSON], name=name, track_ids=[1] * frames)


def with_frames(segment: Path, keys: list[FrameKey], size: tuple[int, int] = (1920, 1280)) -> None:
    """A grey JPEG per image, as a run with frames writes them."""
    from PIL import Image

    from detect.sinks.frames import frame_path

    for k in keys:
        path = frame_path(segment, k.camera_name, k.frame_timestamp_micros, "jpg")
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", size, (120, 120, 120)).save(path)


def repeated(path: Path, rows: int) -> None:
    """Replace the table at `path` by its first row `rows` times: a few hundred KB on disk (dictionary
    and run-length encoding), as many rows as a table of distinct boxes gigabytes in size."""
    table = pq.read_table(path)
    pq.write_table(table.take(np.zeros(rows, np.int64)), path, compression="zstd")
