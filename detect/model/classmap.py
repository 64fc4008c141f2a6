"""Which model class counts as which Waymo type: a documented default for COCO, overridable.

Waymo's 2D labels (see Waymo's labeling specifications) cover VEHICLE, PEDESTRIAN and CYCLIST
(SIGN exists in the type enum but has no 2D labels). The default map, and why:

- car, truck, bus -> VEHICLE; motorcycle -> VEHICLE too: "Motorcycles and motorcyclists are
  labeled as vehicles" in Waymo's specification, so a COCO motorcycle box is a VEHICLE box.
- person -> PEDESTRIAN, bicycle -> CYCLIST, and a rider becomes one CYCLIST: Waymo labels rider and
  bicycle as one CYCLIST box, where a COCO detector sees a `person` and a `bicycle`. A bicycle box
  and the person box that rides it (see `pair_riders`) become one CYCLIST detection: their union,
  scored by the geometric mean of the two scores. The union replaces the bicycle; it replaces the
  person too when the two scores are within a factor 2 (RIDER_SCORE_RATIO) of each other; further
  apart (a confident person over a faint bicycle), the person stays a PEDESTRIAN as well: one box,
  two readings, each judged within its own type, as the model itself scores one box as several
  classes. Unpaired
  bicycles (parked ones, which Waymo does not label) stay CYCLIST boxes and count as false positives.
- stop sign -> SIGN, reported only where SIGN labels exist.
- train is not mapped ("Trains and trams are not considered vehicles"); nor is any other class.

`--class-map FILE` replaces the map: a JSON object from model classes (COCO names or ids) to Waymo
types (names or numbers), e.g. `{"person": "PEDESTRIAN", "car": "VEHICLE", "3": 1}`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from detect.core.boxes import box_iou, overlap_of_smaller
from detect.core.errors import UsageError
from detect.core.files import UnreadableFileError, read_json
from detect.core.records import WaymoType
from detect.model.coco_classes import UnknownClassError, label_for, parse_classes

# A person box rides a bicycle box when at least this share of the smaller of the two lies in both,
# and the person's horizontal center is over the bicycle. The person stays a PEDESTRIAN too unless
# both scores are within a factor RIDER_SCORE_RATIO of each other: a confident pedestrian is not
# traded for a faint bicycle's guess.
RIDER_OVERLAP = 0.3
RIDER_SCORE_RATIO = 0.5
PERSON_ID, BICYCLE_ID = 1, 2

DEFAULT_COCO_TO_WAYMO: dict[str, WaymoType] = {
    "car": WaymoType.VEHICLE,
    "truck": WaymoType.VEHICLE,
    "bus": WaymoType.VEHICLE,
    "motorcycle": WaymoType.VEHICLE,
    "person": WaymoType.PEDESTRIAN,
    "bicycle": WaymoType.CYCLIST,
    "stop sign": WaymoType.SIGN,
}


@dataclasses.dataclass(frozen=True)
class ClassMap:
    """Model class id -> Waymo type, and where the map came from."""

    by_class: Mapping[int, int]
    source: str

    def waymo_type(self, class_id: int) -> int | None:
        return self.by_class.get(int(class_id))

    @property
    def pairs_riders(self) -> bool:
        """Riders are paired when persons are PEDESTRIANs and bicycles CYCLISTs (as in the default map)."""
        return self.waymo_type(PERSON_ID) == WaymoType.PEDESTRIAN and self.waymo_type(BICYCLE_ID) == WaymoType.CYCLIST

    def to_waymo(self, xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray) -> WaymoBoxes:
        """One image's detections as Waymo-typed boxes: unmapped classes dropped, riders paired."""
        xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
        scores = np.asarray(scores, np.float64).reshape(-1)
        class_ids = np.asarray(class_ids, np.int64).reshape(-1)
        types = np.array([self.by_class.get(int(c), -1) for c in class_ids], np.int64)
        pairs = pair_riders(xyxy, scores, class_ids) if self.pairs_riders else []
        used = {i for p, b in pairs for i in ((p, b) if _one_reading(scores[p], scores[b]) else (b,))}
        keep = [i for i in range(len(types)) if types[i] >= 0 and i not in used]
        boxes = [xyxy[i] for i in keep] + [_union(xyxy[p], xyxy[b]) for p, b in pairs]
        return WaymoBoxes(
            xyxy=np.asarray(boxes, np.float64).reshape(-1, 4),
            scores=np.asarray([scores[i] for i in keep] + [float(np.sqrt(scores[p] * scores[b])) for p, b in pairs]),
            types=np.asarray([types[i] for i in keep] + [int(WaymoType.CYCLIST)] * len(pairs), np.int64),
            class_ids=np.asarray([class_ids[i] for i in keep] + [BICYCLE_ID] * len(pairs), np.int64),
            riders=len(pairs),
            rows=tuple((i,) for i in keep) + tuple((p, b) for p, b in pairs),
        )

    def types_for(self, model_classes: Iterable[int] | None) -> list[int]:
        """The Waymo types a model can be evaluated on: those its classes map to (all mapped types
        for a model with the whole COCO label map)."""
        classes = set(self.by_class) if model_classes is None else {int(c) for c in model_classes}
        return sorted({t for c, t in self.by_class.items() if c in classes and t != WaymoType.UNKNOWN})

    def to_json(self) -> dict[str, object]:
        return {"source": self.source,
                "map": {label_for(c): WaymoType(t).name for c, t in sorted(self.by_class.items())}}


@dataclasses.dataclass(frozen=True, eq=False)
class WaymoBoxes:
    """One image's detections in Waymo types (pixel xyxy); `class_ids` is the model class behind each
    (a paired rider: bicycle), `riders` how many person + bicycle pairs became a CYCLIST, `rows`
    the input rows behind each box (two for a rider)."""

    xyxy: np.ndarray
    scores: np.ndarray
    types: np.ndarray
    class_ids: np.ndarray
    riders: int = 0
    rows: tuple[tuple[int, ...], ...] = ()


def pair_riders(xyxy: np.ndarray, scores: np.ndarray, class_ids: np.ndarray) -> list[tuple[int, int]]:
    """`(person index, bicycle index)` pairs of a rider and the bicycle it rides, each box in one pair
    at most, the best-fitting pairs first (the highest IoU of the two boxes; then the higher person
    score): a detector that sees a rider gives its person and its bicycle nearly one box, so a large
    faint person box that happens to cover a bicycle does not take it from its rider."""
    persons = [i for i in range(len(class_ids)) if class_ids[i] == PERSON_ID]
    bicycles = [i for i in range(len(class_ids)) if class_ids[i] == BICYCLE_ID]
    if not persons or not bicycles:
        return []
    overlaps = overlap_of_smaller(xyxy[persons], xyxy[bicycles])  # [persons, bicycles]
    fits = box_iou(xyxy[persons], xyxy[bicycles])
    candidates = sorted(
        (-float(fits[row, column]), -float(scores[p]), p, b)
        for row, p in enumerate(persons) for column, b in enumerate(bicycles)
        if overlaps[row, column] >= RIDER_OVERLAP and xyxy[b][0] <= (xyxy[p][0] + xyxy[p][2]) / 2 <= xyxy[b][2])
    pairs: list[tuple[int, int]] = []
    taken: set[int] = set()
    for _, _, p, b in candidates:
        if p not in taken and b not in taken:
            pairs.append((int(p), int(b)))
            taken |= {p, b}
    return pairs


def _one_reading(person_score: float, bicycle_score: float) -> bool:
    """Whether a rider's person box is read as the CYCLIST only (scores within RIDER_SCORE_RATIO of
    each other), or as a PEDESTRIAN too (a confident person over a faint bicycle, or the reverse)."""
    return min(person_score, bicycle_score) >= RIDER_SCORE_RATIO * max(person_score, bicycle_score)


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])])


DEFAULT_MAP_SOURCE = "default COCO -> Waymo map"  # the default map's `source`


def default_class_map() -> ClassMap:
    by_class = {next(iter(parse_classes([name]) or ())): int(t) for name, t in DEFAULT_COCO_TO_WAYMO.items()}
    return ClassMap(by_class, DEFAULT_MAP_SOURCE)


def load_class_map(path: Path | None) -> ClassMap:
    """The default map, or the one in `path` (one-line UsageErrors naming the file and the entry)."""
    if path is None:
        return default_class_map()
    try:
        data = read_json(Path(path))
    except UnreadableFileError as err:  # its message starts with the path
        raise UsageError(f"--class-map {path}: {str(err).removeprefix(str(path)).strip()}") from None
    if not isinstance(data, dict) or not data:
        raise UsageError(f"--class-map {path}: expected a JSON object from model classes to Waymo types")
    by_class: dict[int, int] = {}
    for key, value in data.items():
        try:
            classes = parse_classes([key]) or frozenset()
        except UnknownClassError as err:
            raise UsageError(f"--class-map {path}: {err}") from None
        by_class[next(iter(classes))] = _waymo_type(value, path, key)
    # its absolute path: the manifest and eval.json record it, and are read from other folders
    return ClassMap(by_class, os.path.abspath(path))


def _waymo_type(value: object, path: Path, key: str) -> int:
    names = {t.name: int(t) for t in WaymoType if t != WaymoType.UNKNOWN}
    if isinstance(value, str) and value.strip().upper() in names:
        return names[value.strip().upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in names.values():
        return value
    raise UsageError(f"--class-map {path}: {key!r} maps to {value!r}; expected one of {', '.join(names)} (or 1-4)")

