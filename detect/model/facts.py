"""What a run records about the model it loaded (a manifest's `model`), typed, with its JSON form.

Built once by the engine from a loaded `Detector` (`detect.engine.loading.model_facts`), written
into every segment's manifest, and read back by eval, report and compare through `from_json`, the
one place that decides what a recorded value means: `knows_classes` is a list of class ids, or the
string "COCO label map" for a model that says nothing (the whole COCO map); `model_batch` a number,
or "dynamic". A value of the wrong kind in an edited manifest reads as "not recorded" (None), never
as something else.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

COCO_LABEL_MAP = "COCO label map"  # `knows_classes` of a model that names no classes of its own
DYNAMIC = "dynamic"  # `model_batch` of a model that takes any batch


@dataclasses.dataclass(frozen=True)
class ModelFacts:
    """The model of a run. Fields in the order the manifest writes them."""

    path: str
    kind: str  # "real", "stub" or "benchmark"
    description: str
    format: str
    sha256: str
    source: dict[str, object] | None  # where it came from, as its builder wrote it (free-form: package, URL, head...)
    knows_classes: tuple[int, ...] | None  # None: the whole COCO label map
    call_style: str
    model_batch: int | None  # None: any batch
    batch_size: int
    pinned_input: tuple[int, int] | None  # (width, height) the model requires, if any
    outputs: tuple[str, ...]
    threshold: float | None  # the drawing threshold of the run (None: loaded outside a run)
    score_floor: float | None  # the lowest score kept in the table
    classes: tuple[int, ...] | None  # --classes
    nms_iou: float | None
    short_name: str | None
    strategy: str
    replicas: int
    runtime: dict[str, object]  # what the runtime says of itself (each runtime its own keys), requested, fallback
    load_seconds: float

    @property
    def runtime_name(self) -> str:
        return str(self.runtime.get("name") or "")

    def to_json(self) -> dict[str, object]:  # the manifest's JSON object
        return {
            "path": self.path, "kind": self.kind, "description": self.description, "format": self.format,
            "sha256": self.sha256, "source": self.source,
            "knows_classes": list(self.knows_classes) if self.knows_classes is not None else COCO_LABEL_MAP,
            "call_style": self.call_style, "model_batch": self.model_batch if self.model_batch else DYNAMIC,
            "batch_size": self.batch_size,
            "pinned_input": list(self.pinned_input) if self.pinned_input else None,
            "outputs": list(self.outputs), "threshold": self.threshold, "score_floor": self.score_floor,
            "classes": list(self.classes) if self.classes is not None else None, "nms_iou": self.nms_iou,
            "short_name": self.short_name, "strategy": self.strategy, "replicas": self.replicas,
            "runtime": self.runtime, "load_seconds": self.load_seconds,
        }

    @classmethod
    def from_json(cls, data: object) -> ModelFacts:
        """A manifest's `model`, whatever it holds: what is not of the expected kind reads as not recorded."""
        d: Mapping[str, object] = data if isinstance(data, Mapping) else {}
        source = d.get("source")
        runtime = d.get("runtime")
        pinned = _ints(d.get("pinned_input"))
        outputs = d.get("outputs")
        seconds = d.get("load_seconds")
        return cls(
            path=_text(d.get("path")), kind=_text(d.get("kind")), description=_text(d.get("description")),
            format=_text(d.get("format")), sha256=_text(d.get("sha256")),
            source=dict(source) if isinstance(source, Mapping) else None,
            knows_classes=_ints(d.get("knows_classes")), call_style=_text(d.get("call_style")),
            model_batch=_int(d.get("model_batch")), batch_size=_int(d.get("batch_size")) or 0,
            pinned_input=(pinned[0], pinned[1]) if pinned is not None and len(pinned) == 2 else None,
            outputs=tuple(o for o in outputs if isinstance(o, str)) if isinstance(outputs, list) else (),
            threshold=_unit(d.get("threshold")), score_floor=_unit(d.get("score_floor")),
            classes=_ints(d.get("classes")), nms_iou=_unit(d.get("nms_iou")),
            short_name=_text(d.get("short_name")) or None, strategy=_text(d.get("strategy")),
            replicas=_int(d.get("replicas")) or 1, runtime=dict(runtime) if isinstance(runtime, Mapping) else {},
            load_seconds=float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            and math.isfinite(seconds) else 0.0,
        )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53 else None


def _ints(value: object) -> tuple[int, ...] | None:
    """A list of whole numbers as a tuple; anything else (the COCO map's string, an edit) None."""
    if not isinstance(value, list) or not all(_int(v) is not None for v in value):
        return None
    return tuple(value)


def _unit(value: object) -> float | None:
    """A number from 0 to 1 (a threshold, an IoU), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None
    return float(value)
