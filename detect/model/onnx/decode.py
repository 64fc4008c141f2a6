"""An ONNX detector's raw outputs -> our contract's four outputs, and where an image sits in the
network's input (letterbox or stretch) to map its boxes back. Pure numpy.

The letterbox is Ultralytics' own (`LetterBox(auto=False)` and `ops.scale_boxes`): the image scaled
by `r = min(H / h, W / w)` to `round(w * r) x round(h * r)`, placed at `round(dh - 0.1)`,
`round(dw - 0.1)` on grey; boxes mapped back by subtracting `round((W - w * r) / 2 - 0.1)` (and the
same for y) and dividing by `r`, as `scale_boxes` does. Python's `round` (half to even) as theirs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from detect.model.onnx.layouts import BOXES_LABELS_SCORES, TF_OD_API, TF_OUTPUTS, ULTRALYTICS, OnnxSpec


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a `width` x `height` image sits in the network input: network x = image x * gain_x + pad_x."""

    width: int
    height: int
    net_width: int
    net_height: int
    gain_x: float
    gain_y: float
    pad_x: float
    pad_y: float
    # The resized image's size and its top-left corner in the network input (what `letterbox` fills).
    inner_width: int
    inner_height: int
    top: int
    left: int

    @property
    def identity(self) -> bool:
        return (self.width, self.height) == (self.net_width, self.net_height) and self.gain_x == self.gain_y == 1


def letterbox(width: int, height: int, net_width: int, net_height: int) -> Placement:
    """Ultralytics' letterbox of a `width` x `height` image into `net_width` x `net_height`."""
    r = min(net_height / height, net_width / width)
    inner_w, inner_h = int(round(width * r)), int(round(height * r))
    dw, dh = (net_width - inner_w) / 2, (net_height - inner_h) / 2
    top, left = int(round(dh - 0.1)), int(round(dw - 0.1))
    pad_x = round((net_width - round(width * r)) / 2 - 0.1)  # ops.scale_boxes, as it computes them
    pad_y = round((net_height - round(height * r)) / 2 - 0.1)
    return Placement(width, height, net_width, net_height, r, r, pad_x, pad_y, inner_w, inner_h, top, left)


def stretch(width: int, height: int, net_width: int, net_height: int) -> Placement:
    """The image resized to the whole network input (each axis by its own factor)."""
    return Placement(width, height, net_width, net_height, net_width / width, net_height / height, 0.0, 0.0,
                     net_width, net_height, 0, 0)


def placement(spec: OnnxSpec, width: int, height: int) -> Placement:
    """Where an image of this size goes in `spec`'s network input (its own size when the input is dynamic)."""
    net = spec.input
    if net.height is None or net.width is None:
        return stretch(width, height, width, height)
    fit = letterbox if net.fit == "letterbox" else stretch
    return fit(width, height, net.width, net.height)


def to_contract(spec: OnnxSpec, outputs: Mapping[str, np.ndarray], place: Placement, count: int) -> dict[str, np.ndarray]:
    """The network's outputs for `count` images placed as `place` -> the four contract outputs
    (boxes normalized `[ymin, xmin, ymax, xmax]` of the image, COCO ids as floats)."""
    if spec.layout == TF_OD_API:
        boxes, scores, classes, num = (np.asarray(outputs[name]) for name in TF_OUTPUTS)
        xyxy: np.ndarray = boxes[..., [1, 0, 3, 2]].astype(np.float32) * _sides(place)
        return _contract(xyxy[:count], scores[:count], classes[:count], num[:count], place)
    if spec.layout == BOXES_LABELS_SCORES:
        boxes, labels, scores = (np.asarray(outputs[name]) for name in spec.outputs)
        if boxes.ndim == 2:  # torchvision: one image, no batch axis
            boxes, labels, scores = boxes[None], labels[None], scores[None]
        xyxy = boxes.astype(np.float32).reshape(len(boxes), -1, 4)
        if spec.normalized:
            xyxy = xyxy * _sides(place)
        rows = np.full(len(boxes), xyxy.shape[1], np.float32)
        return _contract(xyxy[:count], scores[:count], _coco(spec, labels)[:count], rows[:count], place)
    if spec.layout == ULTRALYTICS:
        head = np.asarray(outputs[spec.outputs[0]], np.float32).transpose(0, 2, 1)  # [B, N, 4 + C]
        cx, cy, w, h = (head[..., k] for k in range(4))
        xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=-1)
        class_scores = head[..., 4:]
        best = class_scores.argmax(axis=-1)  # one class a box, as Ultralytics' NMS takes it (multi_label=False)
        scores = np.take_along_axis(class_scores, best[..., None], axis=-1)[..., 0]
        rows = np.full(len(head), head.shape[1], np.float32)
        return _contract(xyxy[:count], scores[:count], _coco(spec, best)[:count], rows[:count], place)
    raise ValueError(f"unknown layout {spec.layout!r}")


def _sides(place: Placement) -> np.ndarray:
    """What normalized xyxy is multiplied by for network-input pixels."""
    return np.array([place.net_width, place.net_height] * 2, np.float32)


def _coco(spec: OnnxSpec, labels: np.ndarray) -> np.ndarray:
    """Model class indices -> COCO ids as floats; an index the model has no class for -> -1 (dropped, counted)."""
    if spec.class_ids is None:
        return labels.astype(np.float64)
    table = np.asarray(spec.class_ids, np.float64)
    index = labels.astype(np.int64)
    inside = (index >= 0) & (index < len(table)) & (labels == index)
    return np.where(inside, table[np.clip(index, 0, len(table) - 1)], -1.0)


def _contract(xyxy: np.ndarray, scores: np.ndarray, classes: np.ndarray, num: np.ndarray,
              place: Placement) -> dict[str, np.ndarray]:
    """xyxy in network-input pixels -> normalized `[ymin, xmin, ymax, xmax]` of the image."""
    x = (xyxy[..., [0, 2]] - place.pad_x) / place.gain_x / place.width
    y = (xyxy[..., [1, 3]] - place.pad_y) / place.gain_y / place.height
    boxes = np.stack([y[..., 0], x[..., 0], y[..., 1], x[..., 1]], axis=-1).astype(np.float32)
    return {"detection_boxes": boxes, "detection_scores": np.asarray(scores, np.float32),
            "detection_classes": np.asarray(classes, np.float32), "num_detections": np.asarray(num, np.float32)}
