"""Which boxes track together: classes the class map sends to the same Waymo type share tracks (a car the
model calls a truck for two frames keeps its id); every other class (unmapped, or mapped to UNKNOWN,
a catch-all where a dog and a chair must not share a track) tracks by itself."""

from __future__ import annotations

import numpy as np

from detect.core.records import WaymoType
from detect.model.classmap import ClassMap

# Group keys: a Waymo type's number (1-4) for a typed group, CLASS_GROUP_BASE + class id for a class alone.
CLASS_GROUP_BASE = 1000


def group_keys(class_ids: np.ndarray, class_map: ClassMap) -> np.ndarray:
    """Per box, the key of the group it is tracked in (int64)."""
    class_ids = np.asarray(class_ids, np.int64).reshape(-1)
    if len(class_ids) and class_ids.min() < 0:
        raise ValueError(f"class ids: expected values >= 0, got {int(class_ids.min())}")
    classes, where = np.unique(class_ids, return_inverse=True)  # the map asked once per class, not per box
    keys = np.array([_key(int(c), class_map) for c in classes.tolist()], np.int64)
    return keys[where.reshape(-1)] if len(class_ids) else np.zeros(0, np.int64)


def _key(class_id: int, class_map: ClassMap) -> int:
    waymo_type = class_map.waymo_type(class_id)
    return int(waymo_type) if waymo_type is not None and waymo_type != WaymoType.UNKNOWN else CLASS_GROUP_BASE + class_id
