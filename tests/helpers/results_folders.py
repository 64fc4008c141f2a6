"""Results folders as `detect segment` writes them, crafted from boxes and labels without a model:
the table, the labels, the journal and a manifest, for tests of what reads a results folder; and
`detect eval` on one, read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from detect.cli import main
from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult, Labels
from detect.results import journal
from detect.results.frames import write_frame
from detect.results.ground_truth import GROUND_TRUTH_FILE, write_ground_truth
from detect.results.table import DETECTIONS_FILE, with_track_ids, write_table

SEGMENT = "seg_eval"
T0 = 1_000_000
PERSON, BICYCLE, CAR = 1, 2, 3  # COCO classes
VEHICLE, PEDESTRIAN = 1, 2  # Waymo types

Box = tuple[float, float, float, float]
BOX_A, BOX_B, ELSEWHERE = (100, 100, 300, 500), (600, 100, 800, 500), (1200, 600, 1300, 800)


def key(i: int = 0, camera: CameraName = CameraName.FRONT, segment: str = SEGMENT) -> FrameKey:
    """The `i`-th image of a camera, 0.1 s apart."""
    return FrameKey(segment, T0 + i * 100_000, camera)


def labels(*rows: tuple[Box, int] | tuple[Box, int, int], ids: list[str] | None = None) -> Labels:
    """(xyxy, Waymo type) rows at LEVEL_1, or (xyxy, Waymo type, difficulty) rows, with object ids obj0,
    obj1... unless `ids` names them."""
    return Labels(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), [r[1] for r in rows],
                  [r[2] if len(r) > 2 else 1 for r in rows],
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


def evaluation(directory: Path, *extra: str) -> dict:
    """`detect eval DIRECTORY --quiet EXTRA`'s eval.json."""
    assert main(["eval", str(directory), "--quiet", *extra]) == 0
    return json.loads((directory / "eval.json").read_text())


def row(report: dict, level: str, name: str) -> dict:
    """The row of type `name` at `level` ("LEVEL_1", "LEVEL_2") of an eval.json."""
    return next(r for r in report["levels"][level] if r["name"] == name)


def walking_pedestrian(parent: Path, frames: int = 6, name: str = SEGMENT) -> Path:
    """One labeled pedestrian (obj0) walking right, detected and tracked (id 1) on every image."""
    images = {}
    for i in range(frames):
        box = (100.0 + 10 * i, 100.0, 200.0 + 10 * i, 300.0)
        images[key(i, segment=name)] = (labels((box, PEDESTRIAN)), dets((box, 0.9, PERSON)))
    return segment_folder(parent, images, knows=[PERSON], name=name, track_ids=[1] * frames)


# Two segments' names, for a run folder that holds one at its top and one nested below it.
TOP, NESTED = "1000000000000000001_000_000_000_000", "1000000000000000002_000_000_000_000"


def segment_with_frame(parent: Path, name: str) -> Path:
    """A segment's results (table, labels, journal, manifest) and one annotated frame."""
    key = FrameKey(name, 1_000_000, CameraName.FRONT)
    directory = segment_folder(parent, {key: (labels((BOX_A, 2, 1)), dets((BOX_A, 0.9, PERSON)))}, name=name)
    write_frame(directory, key, np.full((64, 96, 3), 80, np.uint8))
    return directory


def with_frames(segment: Path, keys: list[FrameKey], size: tuple[int, int] = (1920, 1280)) -> None:
    """A grey JPEG per image, as a run with frames writes them."""
    from PIL import Image

    from detect.results.frames import frame_path

    for k in keys:
        path = frame_path(segment, k.camera_name, k.frame_timestamp_micros, "jpg")
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", size, (120, 120, 120)).save(path)


def repeated(path: Path, rows: int) -> None:
    """Replace the table at `path` by its first row `rows` times: a few hundred KB on disk (dictionary
    and run-length encoding), as many rows as a table of distinct boxes gigabytes in size."""
    table = pq.read_table(path)
    pq.write_table(table.take(np.zeros(rows, np.int64)), path, compression="zstd")
