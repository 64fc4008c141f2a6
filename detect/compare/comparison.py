"""What `detect compare` found, as typed records: each side's facts, each Waymo type's AP and its
interval, box-for-box agreement; `Comparison.to_json` is compare.json, the page reads the records."""

from __future__ import annotations

import dataclasses

from detect.core.matching import Protocol
from detect.core.records import FrameKey

# Fewer frames than this give no interval: resampling 1-4 frames says nothing about the noise.
MIN_FRAMES = 5
# Facts that differ between any two runs (where, how fast): never "what differs" between the sides.
NOT_SETTINGS = ("results", "images/s", "detect ms/image")


@dataclasses.dataclass(frozen=True)
class SideFacts:
    """What a reader compares first: the model and the settings that change what it finds. Values
    the manifest records as they are (input size, tiles, speeds), checked where shown."""

    results: str
    model: str | None
    description: str | None
    sha256: str | None
    classes: str
    input_size: object
    threshold: float
    score_floor: object
    nms_iou: float | None
    tiles: object
    runtime: str | None  # what ran the model: it sets the speeds below
    images_per_second: object
    detect_ms_per_image: object

    def to_json(self) -> dict[str, object]:
        return {"results": self.results, "model": self.model, "description": self.description, "sha256": self.sha256,
                "classes": self.classes, "input size": self.input_size, "threshold": self.threshold,
                "score floor": self.score_floor, "NMS IoU": self.nms_iou, "tiles": self.tiles, "runtime": self.runtime,
                "images/s": self.images_per_second, "detect ms/image": self.detect_ms_per_image}


@dataclasses.dataclass(frozen=True)
class TypeComparison:
    """One Waymo type: each side's AP (None: not evaluated), the difference and its interval."""

    name: str
    labels: int
    ap_a: float | None  # None: no labels, or the model cannot output the type
    ap_b: float | None
    difference: float | None  # B - A
    low: float | None  # 95% paired-bootstrap interval of the difference
    high: float | None
    found_by_both: int
    only_a: int
    only_b: int
    neither: int
    outputs_a: bool  # the model has a class of this type
    outputs_b: bool

    @property
    def verdict(self) -> str:
        return "-" if self.difference is None else interval_verdict(self.low, self.high)


def interval_verdict(low: float | None, high: float | None) -> str:
    """What a 95% interval of B - A says: "-" without one, else which side is better or neither."""
    if low is None or high is None:
        return "-"
    if low > 0:
        return "B better"
    if high < 0:
        return "A better"
    return "within noise"


@dataclasses.dataclass(frozen=True)
class TrackingComparison:
    """One Waymo type and one metric: each side's value, B - A and its 95% paired-bootstrap interval."""

    name: str
    metric: str  # "HOTA", "MOTA" or "IDF1"
    a: float
    b: float
    difference: float
    low: float | None  # None: too few frames, or no resample
    high: float | None

    @property
    def verdict(self) -> str:
        return interval_verdict(self.low, self.high)

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self) | {"verdict": self.verdict}


@dataclasses.dataclass(frozen=True)
class AgreementRow:
    """Boxes of one Waymo type both sides drew, matched A to B at IoU 0.5."""

    pairs: int
    only_a: int
    only_b: int
    score_correlation: float | None  # None: fewer than 3 pairs, or no spread


@dataclasses.dataclass(frozen=True)
class GalleryEntry:
    """One A | B picture of the disagreement gallery."""

    image: FrameKey
    file: str
    frame_a: str
    frame_b: str
    disagreement: int
    only_a: int = 0  # of the objects marked: found by A only
    only_b: int = 0
    close_ups: tuple[str, ...] = ()  # files: the marked objects cut from the camera image

    def to_json(self) -> dict[str, object]:
        key = self.image
        return {"image": {"segment": key.segment_context_name, "timestamp": key.frame_timestamp_micros,
                          "camera": key.camera_name.name},
                "file": self.file, "frame_a": self.frame_a, "frame_b": self.frame_b, "disagreement": self.disagreement,
                "only_a": self.only_a, "only_b": self.only_b, "close_ups": list(self.close_ups)}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Everything compare.json holds."""

    a: SideFacts
    b: SideFacts
    names: tuple[str, str]  # what sets each side apart (`naming.side_names`): the page and pictures call them so
    images: int  # common images
    frames: int  # common timestamps
    left_out: tuple[str, ...]
    labels: str | None  # "A", "B" (whose labels) or None: agreement only
    protocol: Protocol
    replicates: int
    seed: int
    types: tuple[TypeComparison, ...]
    agreement: dict[str, AgreementRow]  # by Waymo type name
    boxes_per_image: tuple[float, float]  # drawn per image, A and B
    animations: tuple[str, ...] = ()
    gallery: tuple[GalleryEntry, ...] = ()
    notes: tuple[str, ...] = ()
    tracking: tuple[TrackingComparison, ...] = ()  # per type: HOTA, MOTA, IDF1 (none: not tracked)

    @property
    def differs(self) -> list[str]:
        a, b = self.a.to_json(), self.b.to_json()
        return sorted(k for k in a if k not in NOT_SETTINGS and a[k] != b[k])

    def to_json(self) -> dict[str, object]:
        return {
            "a": self.a.to_json(), "b": self.b.to_json(), "differs": self.differs,
            "names": {"A": self.names[0], "B": self.names[1]},
            "images": self.images, "frames": self.frames, "left_out": list(self.left_out), "labels": self.labels,
            "protocol": {"name": self.protocol.name, "title": self.protocol.describe(), "ap_name": self.protocol.ap_name},
            "bootstrap": {"replicates": self.replicates, "seed": self.seed, "unit": BOOTSTRAP_UNIT,
                          "min_frames": MIN_FRAMES, "interval": "2.5th-97.5th percentile of AP(B) - AP(A)"},
            "types": [dataclasses.asdict(t) | {"verdict": t.verdict} for t in self.types],
            "agreement": {name: dataclasses.asdict(row) for name, row in self.agreement.items()},
            "boxes_per_image": {"A": self.boxes_per_image[0], "B": self.boxes_per_image[1]},
            "animations": list(self.animations),
            "gallery": [entry.to_json() for entry in self.gallery],
            "notes": list(self.notes),
            **({"tracking": [row.to_json() for row in self.tracking]} if self.tracking else {}),
        }


BOOTSTRAP_UNIT = "frames (every camera of one timestamp)"
