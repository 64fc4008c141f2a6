"""`images.parquet`: one row per camera image and Waymo type with what its frame shows at the
drawing threshold (hits, false alarms, missed labels), from the same matching as `matches.parquet`
(LEVEL_2: every label counts). It is written beside matches.parquet (a segment's folder, or a run's
top for every segment of the run) and answers "which images went worst" without re-matching:
summed over images, a type's misses are its labels minus its true positives in eval.json.

A type with no label in the image still gets its row (zeros, or the false alarms of boxes of that
type); the pages score false alarms only of types the evaluation has labels of (Waymo's 2D labels
have no SIGN: a stop sign is no false alarm there), so the false alarms here count every box."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.records import FrameKey, WaymoType
from detect.evaluate.matches import Match
from detect.waymo.schema import CAMERA, KEY_FIELDS, SEGMENT, TIMESTAMP

COUNTS = ("labels", "hits", "false_alarms", "misses")
CONDITIONS = ("time_of_day", "location", "weather")  # Waymo's stats of the frame; null where not recorded
IMAGES_SCHEMA = pa.schema([
    *KEY_FIELDS,
    ("type", pa.int8()),
    ("type_name", pa.string()),
    *((name, pa.int32()) for name in COUNTS),
    *((name, pa.string()) for name in CONDITIONS),
])


def image_counts(images: Iterable[FrameKey], matches: Sequence[Match], types: Sequence[int], threshold: float,
                 conditions: Mapping[FrameKey, Sequence[str | None]] | None = None) -> pa.Table:
    """One row per image of `images` (in time, then camera order) and type of `types`: its labels,
    and at `threshold` its hits (detections at or above it that matched a label), false alarms (that
    matched none) and missed labels (no detection at or above it matched them); with the image's
    time of day, location and weather from `conditions` (null where not recorded)."""
    keys = sorted(set(images), key=lambda k: k.order)
    row_of = {(k, t): i * len(types) + j for i, k in enumerate(keys) for j, t in enumerate(types)}
    counts = np.zeros((len(row_of), len(COUNTS)), np.int32)
    for match in matches:
        row = row_of.get((match.key, match.waymo_type))
        if row is None:
            continue  # a type not evaluated (cannot happen for the evaluation's own matches)
        kept = match.score is not None and match.score >= threshold
        if match.kind == "label":
            counts[row, 0] += 1
            counts[row, 3] += not (match.matched and kept)
        elif kept:
            counts[row, 1 if match.matched else 2] += 1
    return pa.table({
        SEGMENT: pa.array([k.segment_context_name for k in keys for _ in types], pa.string()),
        TIMESTAMP: pa.array([k.frame_timestamp_micros for k in keys for _ in types], pa.int64()),
        CAMERA: pa.array([int(k.camera_name) for k in keys for _ in types], pa.int8()),
        "type": pa.array(list(types) * len(keys), pa.int8()),
        "type_name": pa.array([WaymoType(t).name for t in types] * len(keys), pa.string()),
        **{name: pa.array(counts[:, c], pa.int32()) for c, name in enumerate(COUNTS)},
        **{name: pa.array([_condition(conditions, k, c) for k in keys for _ in types], pa.string())
           for c, name in enumerate(CONDITIONS)},
    }, schema=IMAGES_SCHEMA)


def _condition(conditions: Mapping[FrameKey, Sequence[str | None]] | None, key: FrameKey, index: int) -> str | None:
    found = None if conditions is None else conditions.get(key)
    return found[index] if found is not None and index < len(found) else None


class ImagesWriter:
    """`images.parquet`, written segment by segment as the evaluation goes and renamed into place
    only when it finished (as `MatchesWriter`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._target = atomic_path(self.path)
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> ImagesWriter:
        self._writer = pq.ParquetWriter(self._target.__enter__(), IMAGES_SCHEMA)
        return self

    def write(self, table: pa.Table) -> None:
        if self._writer is not None and table.num_rows:
            self._writer.write_table(table)

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._writer is not None:
            self._writer.close()
        self._target.__exit__(kind, error, trace)
