"""Crafted pairs of results folders for `detect compare`: one pedestrian per frame, found or not by each
side, or two pedestrians tracked with ids kept or swapped; and the command run on two of them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from detect.cli import main
from detect.core.cameras import CameraName
from detect.core.records import FrameKey
from detect.results.table import with_track_ids
from helpers.results_folders import PERSON, SEGMENT, T0, dets, labels, segment_folder

PED = 2  # Waymo's PEDESTRIAN
BOX, ELSEWHERE = (100, 100, 200, 300), (1000, 100, 1100, 300)  # the pedestrian, and a false alarm away from it
FRAMES = 20
LEFT, RIGHT = (100, 100, 200, 300), (600, 100, 700, 300)  # two pedestrians side by side
TRACKED_FRAMES, APART = 12, 100_000  # 1.2 s at 10 Hz: one block


def folder(tmp_path: Path, name: str, found: list[bool], first: int = 0, apart: float = 0.1) -> Path:
    """One segment, `len(found)` frames `apart` seconds apart (10 Hz: `key`'s) with one pedestrian
    each; found[i]: the model boxed it."""
    images = {FrameKey(SEGMENT, T0 + round((first + i) * apart * 1e6), CameraName.FRONT):
              (labels((BOX, PED, 1)), dets((BOX, 0.9, PERSON)) if hit else dets((ELSEWHERE, 0.2, PERSON)))
              for i, hit in enumerate(found)}
    return segment_folder(tmp_path / name, images, knows=[PERSON]).parent


def compare(a: Path, b: Path, out: Path, *extra: str) -> dict:
    """`detect compare A B --out OUT --quiet EXTRA`'s compare.json."""
    assert main(["compare", str(a), str(b), "--out", str(out), "--quiet", *extra]) == 0
    return json.loads((out / "compare.json").read_text())


def frame_key(i: int, apart: int = APART) -> FrameKey:
    return FrameKey(SEGMENT, T0 + i * apart, CameraName.FRONT)


def tracked_folder(tmp_path: Path, name: str, swap_every: int | None, frames: int = TRACKED_FRAMES, apart: int = APART) -> Path:
    """Two pedestrians (labels obj0 left, obj1 right) boxed in every frame; the tracker keeps ids 1
    (left) and 2 (right), or swaps them every `swap_every` frames."""
    images = {frame_key(i, apart): (labels((LEFT, PED, 1), (RIGHT, PED, 1)),
                                    dets((LEFT, 0.9, PERSON), (RIGHT, 0.8, PERSON)))
              for i in range(frames)}
    segment = segment_folder(tmp_path / name, images, knows=[PERSON])
    path = segment / "detections.parquet"
    table = pq.read_table(path)
    frame = (np.asarray(table.column("key.frame_timestamp_micros")) - T0) // apart
    left = np.asarray(table.column("xmin")) < 300
    swapped = (frame // swap_every) % 2 == 1 if swap_every else np.zeros(len(frame), bool)
    ids = np.where(left ^ swapped, 1, 2)
    pq.write_table(with_track_ids(table, ids), path)
    return segment.parent
