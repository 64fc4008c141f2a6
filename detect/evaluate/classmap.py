"""Which model class counts as which Waymo type: a documented default for COCO, overridable.

Waymo's 2D labels (see Waymo's labeling specifications) cover VEHICLE, PEDESTRIAN and CYCLIST
(SIGN exists in the type enum but has no 2D labels). The default map, and why:

- car, truck, bus -> VEHICLE; motorcycle -> VEHICLE too: "Motorcycles and motorcyclists are
  labeled as vehicles" in Waymo's specification, so a COCO motorcycle box is a VEHICLE box.
- person -> PEDESTRIAN. A COCO detector also boxes the rider of a bicycle as a person, where
  Waymo labels one CYCLIST box (rider and bicycle): those person boxes count as false positives.
- bicycle -> CYCLIST. Parked bicycles (not labeled by Waymo) count as false positives.
- stop sign -> SIGN, reported only where SIGN labels exist.
- train is not mapped ("Trains and trams are not considered vehicles"); nor is any other class.

`--class-map FILE` replaces the map: a JSON object from model classes (COCO names or ids) to Waymo
types (names or numbers), e.g. `{"person": "PEDESTRIAN", "car": "VEHICLE", "3": 1}`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from detect.core.errors import UsageError
from detect.core.records import WaymoType
from detect.model.labels import UnknownClassError, label_for, parse_classes

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

    def types_for(self, model_classes: Iterable[int] | None) -> list[int]:
        """The Waymo types a model can be evaluated on: those its classes map to (all mapped types
        for a model with the whole COCO label map)."""
        classes = set(self.by_class) if model_classes is None else {int(c) for c in model_classes}
        return sorted({t for c, t in self.by_class.items() if c in classes and t != WaymoType.UNKNOWN})

    def to_json(self) -> dict[str, object]:
        return {"source": self.source,
                "map": {label_for(c): WaymoType(t).name for c, t in sorted(self.by_class.items())}}


def default_class_map() -> ClassMap:
    by_class = {next(iter(parse_classes([name]) or ())): int(t) for name, t in DEFAULT_COCO_TO_WAYMO.items()}
    return ClassMap(by_class, "default COCO -> Waymo map")


def load_class_map(path: Path | None) -> ClassMap:
    """The default map, or the one in `path` (one-line UsageErrors naming the file and the entry)."""
    if path is None:
        return default_class_map()
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise UsageError(f"--class-map {path}: cannot read it ({err.strerror or err})") from None
    except ValueError as err:
        raise UsageError(f"--class-map {path}: not JSON ({err})") from None
    if not isinstance(data, dict) or not data:
        raise UsageError(f"--class-map {path}: expected a JSON object from model classes to Waymo types")
    by_class: dict[int, int] = {}
    for key, value in data.items():
        try:
            classes = parse_classes([key]) or frozenset()
        except UnknownClassError as err:
            raise UsageError(f"--class-map {path}: {err}") from None
        by_class[next(iter(classes))] = _waymo_type(value, path, key)
    return ClassMap(by_class, str(path))


def _waymo_type(value: object, path: Path, key: str) -> int:
    names = {t.name: int(t) for t in WaymoType if t != WaymoType.UNKNOWN}
    if isinstance(value, str) and value.strip().upper() in names:
        return names[value.strip().upper()]
    if isinstance(value, int) and not isinstance(value, bool) and value in names.values():
        return value
    raise UsageError(f"--class-map {path}: {key!r} maps to {value!r}; expected one of {', '.join(names)} (or 1-4)")
