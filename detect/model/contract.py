"""The detector contract of TF Object Detection API SavedModels, and the adapter of its outputs.

Checks what a loaded SavedModel offers (call style, batch size, input size, output keys) and turns
its raw outputs into `Detections`: normalized `[ymin, xmin, ymax, xmax]` -> pixel `xyxy` (x by the
image's width, y by its height), float classes -> int, rows past `num_detections` dropped,
COCO labels, score threshold and class filter. Pure numpy; TensorFlow objects are only inspected.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np

from detect.core.errors import ModelError
from detect.core.records import Detections
from detect.model.coco_classes import label_for

REQUIRED_OUTPUTS = ("detection_boxes", "detection_scores", "detection_classes", "num_detections")
# The signature input: TF2 exports call it input_tensor, TF1 zoo SavedModels inputs.
INPUT_NAMES = ("input_tensor", "inputs")
# Classes arrive as floats: 1.0 is class 1, 1.5 is no class at all.
CLASS_TOLERANCE = 1e-3
MAX_CLASS_ID = 2**31 - 1  # class ids are int32 in the table
CallStyle = Literal["signature", "object", "onnx"]
# A model's outputs by name, as a signature or a tf.Module returns them: TensorFlow tensors (numpy
# arrays once fetched). TensorFlow ships no type information, so the values are untyped here;
# `adapt_outputs` checks them against the contract.
ModelOutputs = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What the detector found out about a model when it loaded it.

    `call_style` is "signature" (`signatures['serving_default'](<input_name>=...)`) or "object"
    (the loaded object, or a frozen graph, called directly) or "onnx" (OpenVINO runs the file). `batch_size` is 1 for zoo exports,
    None when dynamic. `input_height`/`input_width` are None unless the signature pins them.
    `kind`, `description`, `classes` and `origin` come from the `detect_model.json` sidecar our
    builders and converters write ("real" with the COCO label map when there is none).
    """

    path: Path
    format: str
    call_style: CallStyle
    input_name: str | None
    batch_size: int | None
    input_height: int | None
    input_width: int | None
    output_keys: tuple[str, ...]
    kind: str
    description: str
    classes: tuple[int, ...] | None = None
    origin: dict[str, object] | None = None

    @property
    def dynamic_batch(self) -> bool:
        return self.batch_size is None


def inspect_callable(loaded: Any, path: Path) -> tuple[CallStyle, str | None, Any, tuple[str, ...] | None]:
    """How to call a loaded model: `(call_style, input name, input TensorSpec or None, output keys)`.

    Output keys are None for object calls: they are only known after the warm-up call.
    """
    signatures = getattr(loaded, "signatures", None) or {}
    if "serving_default" in signatures:
        fn = signatures["serving_default"]
        _, kwargs = fn.structured_input_signature
        name = next((n for n in INPUT_NAMES if n in kwargs), None)
        if name is None:
            names = ", ".join(sorted(kwargs)) or "nothing"
            raise ModelError(
                f"model {path}: serving_default takes {names}, expected a uint8 {' or '.join(INPUT_NAMES)}"
            )
        outputs = fn.structured_outputs
        keys = tuple(sorted(outputs)) if isinstance(outputs, Mapping) else ()
        return "signature", name, kwargs[name], keys
    if callable(loaded):
        specs = getattr(loaded.__call__, "input_signature", None) or (None,)
        return "object", None, specs[0], None
    raise ModelError(f"model {path} has no serving_default signature and is not callable")


def input_shape(spec: Any, path: Path) -> tuple[int | None, int | None, int | None]:
    """`(batch, height, width)` pinned by an input TensorSpec (None = dynamic); checks uint8 RGB."""
    if spec is None:
        return None, None, None
    dtype = getattr(spec.dtype, "name", str(spec.dtype))
    shape = spec.shape.as_list() if spec.shape.rank is not None else [None, None, None, 3]
    if dtype != "uint8" or len(shape) != 4 or shape[3] not in (None, 3):
        raise ModelError(
            f"model {path}: input is {dtype} {shape}, expected uint8 [batch, height, width, 3]"
        )
    return shape[0], shape[1], shape[2]


def check_outputs(keys: Iterable[str], path: Path) -> tuple[str, ...]:
    """Refuse outputs lacking a required key; the message lists what is missing and what is there."""
    keys = tuple(sorted(keys))
    missing = [k for k in REQUIRED_OUTPUTS if k not in keys]
    if missing:
        raise ModelError(
            f"model {path} does not meet the detector contract: missing output"
            f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(it has: {', '.join(keys) or 'no outputs'})"
        )
    return keys


def to_detections(
    boxes: np.ndarray,
    scores: np.ndarray,
    classes: np.ndarray,
    num_detections: float,
    width: int,
    height: int,
    *,
    threshold: float = 0.5,
    class_ids: frozenset[int] | None = None,
) -> Detections:
    """One image's raw model rows -> `Detections` in pixels of a `width` x `height` image.

    Keeps rows before `num_detections` with `score >= threshold` (and a class in `class_ids`
    when given), clips boxes to the image, best score first. Rows a model should never emit (a
    NaN or infinite coordinate or score, a box of zero area in pixels once clipped to the image, a
    class that is NaN, negative, not a whole number or past int32) are dropped and counted in
    `Detections.invalid`.
    """
    total = scores.shape[0]
    n = int(round(float(num_detections))) if np.isfinite(num_detections) else total
    n = max(0, min(n, total))
    with np.errstate(all="ignore"):  # NaN, inf and huge values are expected here: they are what is checked
        boxes = np.asarray(boxes[:n], np.float32).reshape(n, 4)
        scores = np.asarray(scores[:n], np.float32)
        raw_classes = np.asarray(classes[:n], np.float64)
        ymin, xmin, ymax, xmax = boxes.T
        xyxy = np.stack(
            [
                np.clip(np.minimum(xmin, xmax) * width, 0, width),
                np.clip(np.minimum(ymin, ymax) * height, 0, height),
                np.clip(np.maximum(xmin, xmax) * width, 0, width),
                np.clip(np.maximum(ymin, ymax) * height, 0, height),
            ],
            axis=1,
        ).astype(np.float32)
        valid = (
            np.isfinite(boxes).all(axis=1)
            & np.isfinite(scores)
            & (raw_classes >= 0)
            & (raw_classes <= MAX_CLASS_ID)
            & (np.abs(raw_classes - np.rint(raw_classes)) <= CLASS_TOLERANCE)
            & (xyxy[:, 2] > xyxy[:, 0])  # positive area in pixels, once clipped to the image
            & (xyxy[:, 3] > xyxy[:, 1])
        )
    invalid = int(n - np.count_nonzero(valid))
    xyxy, scores = xyxy[valid], scores[valid]
    ids = np.rint(raw_classes[valid]).astype(np.int32)
    with np.errstate(all="ignore"):
        keep = scores >= threshold
    if class_ids is not None:
        keep &= np.isin(ids, np.fromiter(class_ids, np.int32, len(class_ids)))
    xyxy, scores, ids = xyxy[keep], scores[keep], ids[keep]
    order = np.argsort(-scores, kind="stable")
    xyxy, scores, ids = xyxy[order], scores[order], ids[order]
    return Detections(xyxy, scores, ids, tuple(label_for(i) for i in ids), invalid=invalid)
