"""Which rows of matches.parquet are the same object, so that a gallery shows each object once:
the same label id or track, or, without one, the same place in the same camera within a second."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from detect.core.boxes import box_iou
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

# Boxes of one camera less than this far apart in time and overlapping this much are one object (where
# no track or label id says so: a stationary false alarm, or a track that lost its id for a frame).
SAME_OBJECT_SECONDS, SAME_OBJECT_IOU = 1.0, 0.3


def distinct(rows: pd.DataFrame, limit: int, identity: Callable[[Mapping[str, object]], object] | None) -> pd.DataFrame:
    """The first `limit` of `rows` (worst first) that are each another object (`ObjectMemory`)."""
    taken: list[int] = []
    memory = ObjectMemory(identity)
    for index, row in zip(rows.index, rows.to_dict("records"), strict=True):
        if len(taken) >= limit:
            break
        if memory.add(row):
            taken.append(index)
    return rows.loc[taken]


def object_key_of(kind: str, row: Mapping[str, object], identity: Callable[[Mapping[str, object]], object] | None) -> str:
    """The object a row shows, as text: its label id or track (`identity`), else its own box in its
    image (a detection no track names is an object of its own)."""
    found = identity(row) if identity is not None else None
    if found is not None:
        return "/".join(str(part) for part in (kind, *(found if isinstance(found, tuple) else (found,))))
    return "/".join(str(row.get(c)) for c in (SEGMENT, CAMERA, TIMESTAMP, "xmin", "ymin", "xmax", "ymax")) + f"/{kind}"


class ObjectMemory:
    """The objects shown so far. A row is the same object as one shown before when `identity` gives
    both the same id (a track id, a label id), or, in the same camera at another timestamp under
    `SAME_OBJECT_SECONDS` away, when they overlap by `SAME_OBJECT_IOU` (no id, or a track that
    changed its id)."""

    def __init__(self, identity: Callable[[Mapping[str, object]], object] | None) -> None:
        self.identity = identity
        self._ids: set[object] = set()
        self._boxes: dict[tuple[object, object], list[tuple[int, np.ndarray]]] = {}  # (segment, camera) -> (time, box)

    def add(self, row: Mapping[str, Any]) -> bool:
        """Remember the object of `row` (a matches row) and say True, unless it was shown before."""
        object_id = self.identity(row) if self.identity is not None else None
        where, when = (row[SEGMENT], row[CAMERA]), int(row[TIMESTAMP])
        box = np.array([[row["xmin"], row["ymin"], row["xmax"], row["ymax"]]], np.float64)
        near = [b for t, b in self._boxes.get(where, []) if t != when and abs(t - when) < SAME_OBJECT_SECONDS * 1e6]
        seen = object_id is not None and object_id in self._ids
        if seen or near and box_iou(box, np.concatenate(near))[0].max() >= SAME_OBJECT_IOU:
            return False
        if object_id is not None:
            self._ids.add(object_id)
        self._boxes.setdefault(where, []).append((when, box))
        return True


def label_id(row: Mapping[str, object]) -> object:
    """A label's object: its id in its camera (None: the label has none)."""
    object_id = row.get(OBJECT_ID)
    return (row[SEGMENT], row[CAMERA], object_id) if isinstance(object_id, str) and object_id else None
