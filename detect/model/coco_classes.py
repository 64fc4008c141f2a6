"""The COCO label map of the TF Object Detection API (`mscoco_label_map.pbtxt`), written once.

Detectors trained on COCO emit ids 1..90 with gaps (80 classes); 0 is the background class.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

BACKGROUND_ID = 0

COCO_LABELS: Mapping[int, str] = MappingProxyType(
    {
        0: "background",
        1: "person",
        2: "bicycle",
        3: "car",
        4: "motorcycle",
        5: "airplane",
        6: "bus",
        7: "train",
        8: "truck",
        9: "boat",
        10: "traffic light",
        11: "fire hydrant",
        13: "stop sign",
        14: "parking meter",
        15: "bench",
        16: "bird",
        17: "cat",
        18: "dog",
        19: "horse",
        20: "sheep",
        21: "cow",
        22: "elephant",
        23: "bear",
        24: "zebra",
        25: "giraffe",
        27: "backpack",
        28: "umbrella",
        31: "handbag",
        32: "tie",
        33: "suitcase",
        34: "frisbee",
        35: "skis",
        36: "snowboard",
        37: "sports ball",
        38: "kite",
        39: "baseball bat",
        40: "baseball glove",
        41: "skateboard",
        42: "surfboard",
        43: "tennis racket",
        44: "bottle",
        46: "wine glass",
        47: "cup",
        48: "fork",
        49: "knife",
        50: "spoon",
        51: "bowl",
        52: "banana",
        53: "apple",
        54: "sandwich",
        55: "orange",
        56: "broccoli",
        57: "carrot",
        58: "hot dog",
        59: "pizza",
        60: "donut",
        61: "cake",
        62: "chair",
        63: "couch",
        64: "potted plant",
        65: "bed",
        67: "dining table",
        70: "toilet",
        72: "tv",
        73: "laptop",
        74: "mouse",
        75: "remote",
        76: "keyboard",
        77: "cell phone",
        78: "microwave",
        79: "oven",
        80: "toaster",
        81: "sink",
        82: "refrigerator",
        84: "book",
        85: "clock",
        86: "vase",
        87: "scissors",
        88: "teddy bear",
        89: "hair drier",
        90: "toothbrush",
    }
)

# Models trained on COCO's 80 categories number them 0..79 in label-map order: index i -> COCO id.
COCO80_IDS: tuple[int, ...] = tuple(sorted(k for k in COCO_LABELS if k != BACKGROUND_ID))

_IDS_BY_NAME: Mapping[str, int] = MappingProxyType(
    {name: class_id for class_id, name in COCO_LABELS.items() if class_id != BACKGROUND_ID}
)


class UnknownClassError(ValueError):
    """A class given by the user is neither a COCO class name nor a COCO id (1-90)."""


def label_for(class_id: int) -> str:
    """COCO name of `class_id`; ids outside the map read `"class <id>"`."""
    return COCO_LABELS.get(int(class_id), f"class {int(class_id)}")


def describe_classes(class_ids: Iterable[int] | None, *, most: int = 6) -> str:
    """A model's classes in a few words: "80 COCO classes", or their names when there are few."""
    if class_ids is None:
        return "COCO label map"
    ids = sorted({int(c) for c in class_ids})
    if set(ids) == set(COCO80_IDS):
        return f"{len(ids)} COCO classes"
    if len(ids) <= most:
        return ", ".join(label_for(c) for c in ids)
    return f"{len(ids)} classes"


def _normalise_name(name: str) -> str:
    return " ".join(name.strip().lower().replace("_", " ").replace("-", " ").split())


def parse_classes(values: Iterable[str | int] | None) -> frozenset[int] | None:
    """`["car", "traffic light", "1", 3]` or `["car,person"]` -> COCO ids; None means every class.

    Names are matched case-insensitively, with `_` or `-` accepted for spaces. Every bad value is
    reported at once in one `UnknownClassError`.
    """
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    ids: set[int] = set()
    bad: list[str] = []
    for value in values:
        parts = value.split(",") if isinstance(value, str) else [value]
        for part in parts:
            if isinstance(part, str) and not part.strip():
                continue
            class_id = _parse_one(part)
            if class_id is None:
                bad.append(repr(part.strip() if isinstance(part, str) else part))
            else:
                ids.add(class_id)
    if bad:
        raise UnknownClassError(
            f"unknown COCO class{'es' if len(bad) > 1 else ''} {', '.join(bad)}: "
            "expected names such as 'person', 'car', 'traffic light' or ids 1-90 "
            "(ids 12, 26, 29, 30, 45, 66, 68, 69, 71, 83 are unused)"
        )
    return frozenset(ids) if ids else None


def _parse_one(value: str | int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or value.strip().isdigit():
        number = int(value)
        return number if number in COCO_LABELS and number != BACKGROUND_ID else None
    return _IDS_BY_NAME.get(_normalise_name(value))
