"""What `detect compare` found, as typed records: each side's facts, each Waymo type's AP under both
protocols with its interval and verdict, the tracking scores, box-for-box agreement. `Comparison`'s
`to_json` is compare.json and `from_json` reads it back; the page and the terminal read the records."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detect.core.cameras import CameraName
from detect.core.matching import PROTOCOLS, Protocol
from detect.core.names import counted
from detect.core.records import FrameKey, WaymoType
from detect.core.resample import BLOCK_SECONDS, MIN_BLOCKS, UNIT
from detect.results.layout_version import COMPARE, LAYOUT_KEY, LAYOUT_VERSION, upgraded

# Facts that differ between any two runs (where, how fast): never "what differs" between the sides.
NOT_SETTINGS = ("results", "images/s", "detect ms/image")
INTERVAL = "2.5th-97.5th percentile of B - A over the resamples"


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
        return {key: getattr(self, field) for field, key in _FACT_KEYS.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SideFacts:
        values: dict[str, Any] = {field: data.get(key) for field, key in _FACT_KEYS.items()}
        return cls(**values)


# SideFacts' fields and their names in compare.json (and on the page), in the order they are shown.
_FACT_KEYS = {"results": "results", "model": "model", "description": "description", "sha256": "sha256",
              "classes": "classes", "input_size": "input size", "threshold": "threshold", "score_floor": "score floor",
              "nms_iou": "NMS IoU", "tiles": "tiles", "runtime": "runtime", "images_per_second": "images/s",
              "detect_ms_per_image": "detect ms/image"}


@dataclasses.dataclass(frozen=True)
class Change:
    """One number for A and for B on the same images, B - A and its 95% paired-bootstrap interval;
    `blocks`: the independent blocks of frames the interval resampled."""

    a: float | None  # None: not evaluated (no labels, or the model cannot output the type)
    b: float | None
    low: float | None  # None: no interval (one block, --bootstrap 0, or nothing to compare)
    high: float | None
    blocks: int

    @classmethod
    def of(cls, a: float | None, b: float | None, interval: tuple[float, float] | None, blocks: int) -> Change:
        low, high = interval or (None, None)
        return cls(a, b, low, high, blocks)

    @property
    def difference(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def verdict(self) -> str:
        """"B better", "A better", "within noise"; "too little data (N blocks)" below `MIN_BLOCKS`
        (the interval is still shown from 2); "-" with nothing to compare or no interval."""
        if self.difference is None:
            return "-"
        if self.blocks < MIN_BLOCKS:
            return f"too little data ({counted(self.blocks, 'block')})"
        if self.low is None or self.high is None:
            return "-"
        if self.low > 0:
            return "B better"
        if self.high < 0:
            return "A better"
        return "within noise"

    def to_json(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "difference": self.difference, "low": self.low, "high": self.high,
                "verdict": self.verdict}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], blocks: int) -> Change:
        return cls(data["a"], data["b"], data["low"], data["high"], blocks)


def ap_metric(protocol: Protocol, waymo_type: int) -> str:
    """"AP50", "AP70": the AP a protocol computes for one type."""
    return f"AP{round(100 * protocol.iou(waymo_type))}"


@dataclasses.dataclass(frozen=True)
class TypeComparison:
    """One Waymo type: each side's AP under each protocol (COCO: AP50; Waymo: AP70 for VEHICLE, AP50
    for the others) and the labeled objects each found."""

    name: str
    labels: int
    ap: Mapping[str, Change]  # by protocol name, in PROTOCOLS' order
    found_by_both: int
    only_a: int
    only_b: int
    neither: int
    outputs_a: bool  # the model has a class of this type
    outputs_b: bool

    @property
    def waymo_type(self) -> int:
        return int(WaymoType[self.name])

    def ap_rows(self) -> list[tuple[str, tuple[str, ...], Change]]:
        """One row per distinct AP and the protocols that compute it: ("AP50", ("COCO",), ...), ("AP70",
        ("Waymo 2D",), ...) for VEHICLE; one AP50 of both where both ask IoU 0.5 (the same matching,
        the same numbers)."""
        rows: dict[str, tuple[tuple[str, ...], Change]] = {}
        for name, change in self.ap.items():
            protocol = PROTOCOLS[name]
            metric = ap_metric(protocol, self.waymo_type)
            titles, first = rows.get(metric, ((), change))
            rows[metric] = ((*titles, protocol.title), first)
        return [(metric, titles, change) for metric, (titles, change) in rows.items()]

    def to_json(self) -> dict[str, object]:
        ap = {name: {"metric": ap_metric(PROTOCOLS[name], self.waymo_type), "iou": PROTOCOLS[name].iou(self.waymo_type),
                     **change.to_json()} for name, change in self.ap.items()}
        return {"name": self.name, "labels": self.labels, "ap": ap, "found_by_both": self.found_by_both,
                "only_a": self.only_a, "only_b": self.only_b, "neither": self.neither, "outputs_a": self.outputs_a,
                "outputs_b": self.outputs_b}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], blocks: int) -> TypeComparison:
        return cls(data["name"], data["labels"], {name: Change.from_json(v, blocks) for name, v in data["ap"].items()},
                   data["found_by_both"], data["only_a"], data["only_b"], data["neither"], data["outputs_a"],
                   data["outputs_b"])


@dataclasses.dataclass(frozen=True)
class TrackingComparison:
    """One Waymo type and one metric ("HOTA", "MOTA" or "IDF1"): both sides' values and the change."""

    name: str
    metric: str
    change: Change

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "metric": self.metric, **self.change.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], blocks: int) -> TrackingComparison:
        return cls(data["name"], data["metric"], Change.from_json(data, blocks))


@dataclasses.dataclass(frozen=True)
class Bootstrap:
    """How the intervals were made: resamples of blocks of consecutive frames (`detect.core.resample`)."""

    replicates: int
    seed: int
    blocks: int  # independent blocks in the common frames: a verdict needs MIN_BLOCKS
    block_seconds: float = BLOCK_SECONDS
    min_blocks: int = MIN_BLOCKS
    unit: str = UNIT

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self) | {"interval": INTERVAL}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Bootstrap:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GalleryEntry:
        image = data["image"]
        return cls(FrameKey(image["segment"], image["timestamp"], CameraName[image["camera"]]), data["file"],
                   data["frame_a"], data["frame_b"], data["disagreement"], data["only_a"], data["only_b"],
                   tuple(data["close_ups"]))


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
    protocol: Protocol  # the one that decides the labels found, the pictures and tracking's IoU
    bootstrap: Bootstrap
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
            LAYOUT_KEY: LAYOUT_VERSION,
            "a": self.a.to_json(), "b": self.b.to_json(), "differs": self.differs,
            "names": {"A": self.names[0], "B": self.names[1]},
            "images": self.images, "frames": self.frames, "left_out": list(self.left_out), "labels": self.labels,
            "protocol": {"name": self.protocol.name, "title": self.protocol.describe(), "ap_name": self.protocol.ap_name},
            "bootstrap": self.bootstrap.to_json(),
            "types": [t.to_json() for t in self.types],
            "agreement": {name: dataclasses.asdict(row) for name, row in self.agreement.items()},
            "boxes_per_image": {"A": self.boxes_per_image[0], "B": self.boxes_per_image[1]},
            "animations": list(self.animations),
            "gallery": [entry.to_json() for entry in self.gallery],
            "notes": list(self.notes),
            **({"tracking": [row.to_json() for row in self.tracking]} if self.tracking else {}),
        }

    @classmethod
    def from_json(cls, record: Mapping[str, Any], source: Path | str = "compare.json") -> Comparison:
        """The comparison `to_json` wrote, read from `source` in the current layout (`upgraded`)."""
        data: Mapping[str, Any] = upgraded(record, COMPARE, source)
        bootstrap = Bootstrap.from_json(data["bootstrap"])
        blocks = bootstrap.blocks
        return cls(SideFacts.from_json(data["a"]), SideFacts.from_json(data["b"]),
                   (data["names"]["A"], data["names"]["B"]), data["images"], data["frames"], tuple(data["left_out"]),
                   data["labels"], PROTOCOLS[data["protocol"]["name"]], bootstrap,
                   tuple(TypeComparison.from_json(t, blocks) for t in data["types"]),
                   {name: AgreementRow(**row) for name, row in data["agreement"].items()},
                   (data["boxes_per_image"]["A"], data["boxes_per_image"]["B"]), tuple(data["animations"]),
                   tuple(GalleryEntry.from_json(g) for g in data["gallery"]), tuple(data["notes"]),
                   tuple(TrackingComparison.from_json(t, blocks) for t in data.get("tracking", ())))
