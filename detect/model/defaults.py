"""What a model recommends for itself (its sidecar's `defaults`), as a typed record."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ModelDefaults:
    """What a model's sidecar recommends; None where it says nothing (the tool's own default applies)."""

    input_size: str | None = None  # "native", "512" or "640x384", as `--input-size` takes it
    threshold: float | None = None
    nms_iou: float | None = None  # class-aware NMS after the model; None: off
