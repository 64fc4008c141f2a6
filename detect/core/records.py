"""Frozen records that flow between the stages, keyed with Waymo's own names."""

from __future__ import annotations

import copy
import dataclasses
import enum

import numpy as np

from detect.core.cameras import CameraName
from detect.core.names import printable

# A box record's columns, declared once: one image's `Detections` holds its boxes in these dtypes,
# and a segment's detections table (written and read back by `detect.results`: `table.SCHEMA`,
# `detections_table.DetectionTable`) holds them as its columns, with the optional ones beside
# (a track id, `NO_TRACK` where none; a range; the image's conditions).
XYXY_DTYPE = np.float32  # pixel (xmin, ymin, xmax, ymax)
SCORE_DTYPE = np.float32
CLASS_ID_DTYPE = np.int32  # the model's class (COCO ids for the default model)
TRACK_ID_DTYPE = np.int64
NO_TRACK = -1  # a box the tracker kept no track for (null in the table)


def boxes_array(values: object, name: str) -> np.ndarray:
    """`XYXY_DTYPE` `[N, 4]` boxes (an empty input is `[0, 4]`), or a ValueError naming `name`."""
    xyxy = np.asarray(values, dtype=XYXY_DTYPE)
    if xyxy.size == 0:
        xyxy = xyxy.reshape(0, 4)
    if xyxy.ndim != 2 or xyxy.shape[1] != 4:
        raise ValueError(f"{name} must have shape (N, 4), got {xyxy.shape}")
    return xyxy


@dataclasses.dataclass(frozen=True)
class FrameKey:
    """Identifies one camera image exactly as Waymo's `key.*` columns do."""

    segment_context_name: str
    frame_timestamp_micros: int
    camera_name: CameraName

    def __str__(self) -> str:
        return f"{printable(self.segment_context_name)}/{self.camera_name.name}/{self.frame_timestamp_micros}"

    @property
    def order(self) -> tuple[int, int]:
        """Sort key within a segment: (frame_timestamp_micros, camera number), as Waymo's files do."""
        return self.frame_timestamp_micros, int(self.camera_name)


@dataclasses.dataclass(frozen=True)
class CameraFrame:
    """One camera image of one frame, still JPEG-encoded."""

    segment_context_name: str
    frame_timestamp_micros: int
    camera_name: CameraName
    jpeg: bytes = dataclasses.field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.camera_name, CameraName):
            object.__setattr__(self, "camera_name", CameraName(int(self.camera_name)))

    @property
    def key(self) -> FrameKey:
        return FrameKey(self.segment_context_name, self.frame_timestamp_micros, self.camera_name)


@dataclasses.dataclass(frozen=True, eq=False)
class Detections:
    """Boxes in pixel `xyxy` of the image they were found in, best score first.

    `xyxy` is float32 `[N, 4]` as `(xmin, ymin, xmax, ymax)`; `scores` float32 `[N]`;
    `class_ids` int32 `[N]` (COCO ids for the default model); `labels` one name per box;
    `invalid` how many rows the model emitted that were dropped as invalid (not in the arrays);
    `track_ids` int64 `[N]`, each box's track (`NO_TRACK`: the tracker kept none for it), or None
    where the image was not tracked (an optional column, as supervision's `tracker_id`).
    """

    xyxy: np.ndarray
    scores: np.ndarray
    class_ids: np.ndarray
    labels: tuple[str, ...]
    invalid: int = 0  # rows the model emitted that were dropped as invalid (NaN, zero area, ...)
    track_ids: np.ndarray | None = None  # TRACK_ID_DTYPE per box, NO_TRACK for none; None: not tracked

    def __post_init__(self) -> None:
        if self.invalid < 0:
            raise ValueError(f"invalid must be >= 0, got {self.invalid}")
        xyxy = boxes_array(self.xyxy, "xyxy")
        n = xyxy.shape[0]
        scores = np.asarray(self.scores, dtype=SCORE_DTYPE).reshape(-1)
        class_ids = np.asarray(self.class_ids).reshape(-1)
        if scores.shape != (n,):
            raise ValueError(f"scores must have shape ({n},), got {scores.shape}")
        if class_ids.shape != (n,):
            raise ValueError(f"class_ids must have shape ({n},), got {class_ids.shape}")
        if class_ids.size and not np.issubdtype(class_ids.dtype, np.integer):
            if not np.all(np.equal(np.mod(class_ids, 1), 0)):
                raise ValueError("class_ids must be whole numbers")
        labels = tuple(self.labels)
        if len(labels) != n:
            raise ValueError(f"labels must have {n} entries, got {len(labels)}")
        if n and np.any(xyxy[:, 2:] < xyxy[:, :2]):
            raise ValueError("xyxy boxes must have xmin <= xmax and ymin <= ymax")
        object.__setattr__(self, "xyxy", xyxy)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "class_ids", class_ids.astype(CLASS_ID_DTYPE))
        object.__setattr__(self, "labels", labels)
        if self.track_ids is not None:
            object.__setattr__(self, "track_ids", _track_ids(self.track_ids, n))

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    @classmethod
    def empty(cls, *, tracked: bool = False) -> Detections:
        """No boxes (`tracked`: of an image that was tracked, an empty `track_ids` column)."""
        return cls(np.zeros((0, 4), XYXY_DTYPE), np.zeros(0, SCORE_DTYPE), np.zeros(0, CLASS_ID_DTYPE), (),
                   track_ids=np.zeros(0, TRACK_ID_DTYPE) if tracked else None)

    def with_track_ids(self, track_ids: np.ndarray | None) -> Detections:
        """The same boxes with `track_ids` as their track column (one per box; None: untracked).
        Only the new column is checked (the others were when this record was made): the live
        tracker and the drawing call this for every image."""
        tracked = copy.copy(self)
        object.__setattr__(tracked, "track_ids", None if track_ids is None else _track_ids(track_ids, len(self)))
        return tracked

    def select(self, mask_or_index: np.ndarray) -> Detections:
        """A new Detections holding the rows picked by a boolean mask or an index array."""
        index = np.asarray(mask_or_index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        return Detections(
            self.xyxy[index],
            self.scores[index],
            self.class_ids[index],
            tuple(self.labels[i] for i in index),
            invalid=self.invalid,
            track_ids=None if self.track_ids is None else self.track_ids[index],
        )

    def equals(self, other: Detections, atol: float = 1e-3) -> bool:
        """Same boxes, classes, labels and track ids (or both untracked), scores and coordinates within `atol`."""
        return (
            len(self) == len(other)
            and self.labels == other.labels
            and np.array_equal(self.class_ids, other.class_ids)
            and _same_tracks(self.track_ids, other.track_ids)
            and np.allclose(self.scores, other.scores, atol=atol)
            and np.allclose(self.xyxy, other.xyxy, atol=atol)
        )


def _same_tracks(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is None and b is None or a is not None and b is not None and np.array_equal(a, b)


def _track_ids(values: object, n: int) -> np.ndarray:
    """`TRACK_ID_DTYPE` `[n]` track ids, each `NO_TRACK` or >= 0, or a ValueError saying what is wrong."""
    ids = np.asarray(values)
    if ids.shape != (n,):
        raise ValueError(f"track_ids must have shape ({n},), got {ids.shape}")
    if n and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"track_ids must be integers, got dtype {ids.dtype}")
    ids = ids.astype(TRACK_ID_DTYPE)
    if n and ids.min() < NO_TRACK:
        raise ValueError(f"track_ids must be >= {NO_TRACK} ({NO_TRACK}: no track), got {int(ids.min())}")
    return ids


@dataclasses.dataclass(frozen=True)
class FrameFailure:
    """A camera image that could not be processed; the run goes on without it."""

    key: FrameKey
    stage: str
    error: str


@dataclasses.dataclass(frozen=True)
class FrameResult:
    """What the pipeline knows about one processed camera image."""

    key: FrameKey
    width: int
    height: int
    detections: Detections


class WaymoType(enum.IntEnum):
    """`[CameraBoxComponent].type` / `Label.Type` in the Waymo Open Dataset."""

    UNKNOWN = 0
    VEHICLE = 1
    PEDESTRIAN = 2
    SIGN = 3
    CYCLIST = 4


WAYMO_TYPE_NUMBERS = frozenset(int(t) for t in WaymoType)  # what `[CameraBoxComponent].type` may hold

LEVEL_1, LEVEL_2 = 1, 2  # `difficulty_level.detection`; 0 (unset) counts as LEVEL_1, as Waymo's metrics do


@dataclasses.dataclass(frozen=True, eq=False)
class Labels:
    """Waymo's 2D boxes on one camera image: pixel `xyxy` (float32 `[N, 4]`), `types` (int8
    `WaymoType`), `difficulty` (int8, LEVEL_1 or LEVEL_2) and the objects' ids."""

    xyxy: np.ndarray
    types: np.ndarray
    difficulty: np.ndarray
    object_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        xyxy = boxes_array(self.xyxy, "label xyxy")
        n = xyxy.shape[0]
        types = np.asarray(self.types).reshape(-1).astype(np.int8)
        difficulty = np.asarray(self.difficulty).reshape(-1).astype(np.int8)
        if types.shape != (n,):
            raise ValueError(f"label types must have shape ({n},), got {types.shape}")
        if difficulty.shape != (n,):
            raise ValueError(f"label difficulty must have shape ({n},), got {difficulty.shape}")
        if len(self.object_ids) != n:
            raise ValueError(f"label object_ids must have {n} entries, got {len(self.object_ids)}")
        object.__setattr__(self, "xyxy", xyxy)
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "difficulty", np.where(difficulty == LEVEL_2, LEVEL_2, LEVEL_1).astype(np.int8))
        object.__setattr__(self, "object_ids", tuple(self.object_ids))

    def __len__(self) -> int:
        return int(self.types.shape[0])

    @classmethod
    def empty(cls) -> Labels:
        return cls(np.zeros((0, 4), np.float32), np.zeros(0, np.int8), np.zeros(0, np.int8), ())

    @classmethod
    def from_centers(cls, cx: np.ndarray, cy: np.ndarray, size_x: np.ndarray, size_y: np.ndarray, types: np.ndarray,
                     difficulty: np.ndarray, object_ids: tuple[str, ...]) -> Labels:
        """From Waymo's center and size in pixels (x along the width, y along the height).

        Callers drop the rows `valid_label_rows` refuses first: this only converts.
        """
        cx, cy = np.asarray(cx, np.float64), np.asarray(cy, np.float64)
        half_x, half_y = np.asarray(size_x, np.float64) / 2, np.asarray(size_y, np.float64) / 2
        xyxy = np.stack([cx - half_x, cy - half_y, cx + half_x, cy + half_y], axis=1) if len(cx) else np.zeros((0, 4))
        return cls(xyxy, types, difficulty, object_ids)


# Label boxes past this many pixels from any image are not boxes of it (Waymo's images are 1920 wide).
MAX_LABEL_COORDINATE = 1e6


def valid_label_rows(values: dict[str, np.ndarray]) -> np.ndarray:
    """Which label rows are usable: finite centers within reach of an image, sizes > 0, a type of
    Waymo's enum (0-4), a difficulty of 0-2 (null counts as 0, as Waymo's metrics read it).

    `values` holds float arrays `cx`, `cy`, `size_x`, `size_y`, `type`, `difficulty` (NaN for null).
    """
    with np.errstate(invalid="ignore"):
        centers = [np.asarray(values[k], np.float64) for k in ("cx", "cy")]
        sizes = [np.asarray(values[k], np.float64) for k in ("size_x", "size_y")]
        kind = np.asarray(values["type"], np.float64)
        difficulty = np.nan_to_num(np.asarray(values["difficulty"], np.float64), nan=0.0)
        ok = np.ones(len(kind), bool)
        for array in centers:
            ok &= np.isfinite(array) & (np.abs(array) <= MAX_LABEL_COORDINATE)
        for array in sizes:
            ok &= np.isfinite(array) & (array > 0) & (array <= MAX_LABEL_COORDINATE)
        ok &= np.isin(kind, [t.value for t in WaymoType])
        ok &= np.isin(difficulty, [0, LEVEL_1, LEVEL_2])
    return ok
