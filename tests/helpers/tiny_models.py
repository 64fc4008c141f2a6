"""A tiny TF2 detector shaped like the Keras detection exports (built in a second), and how closely two
runs' boxes agree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from detect.core.boxes import box_iou
from detect.core.records import Detections
from detect.core.tf_env import import_tensorflow
from detect.model import formats


def build_conv_nms_model(out: Path, seed: int = 0) -> Path:
    """A tiny TF2 SavedModel shaped like the Keras detection exports: variables, resize inside,
    a convolution, box decode, `CombinedNonMaxSuppression`; our four outputs."""
    tf = import_tensorflow()

    class Tiny(tf.Module):
        def __init__(self) -> None:
            rng = np.random.default_rng(seed)
            self.kernel = tf.Variable(rng.normal(0, 0.05, (3, 3, 3, 8)).astype(np.float32))
            self.head = tf.Variable(rng.normal(0, 0.05, (1, 1, 8, 4 + 3)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor):
            images = tf.image.resize(tf.cast(input_tensor, tf.float32), [32, 32]) / 127.5 - 1.0
            features = tf.nn.relu(tf.nn.conv2d(images, self.kernel, 2, "SAME"))
            raw = tf.nn.conv2d(features, self.head, 1, "SAME")  # [B, 16, 16, 7]
            batch = tf.shape(raw)[0]
            raw = tf.reshape(raw, [batch, 256, 7])
            grid = tf.stack(tf.meshgrid(tf.range(16.0), tf.range(16.0), indexing="ij"), -1)
            centre = (tf.reshape(grid, [1, 256, 2]) + 0.5) / 16.0 + 0.05 * tf.tanh(raw[..., :2])
            half = 0.05 + 0.1 * tf.sigmoid(raw[..., 2:4])
            boxes = tf.concat([centre - half, centre + half], -1)[:, :, None, :]
            scores = tf.sigmoid(raw[..., 4:])
            nms = tf.image.combined_non_max_suppression(boxes, scores, 20, 20, 0.5, 0.05, clip_boxes=True)
            return {"detection_boxes": nms.nmsed_boxes, "detection_scores": nms.nmsed_scores,
                    "detection_classes": nms.nmsed_classes + 1.0,
                    "num_detections": tf.cast(nms.valid_detections, tf.float32)}

    module = Tiny()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve})
    (out / formats.SIDECAR).write_text(json.dumps({"kind": "real", "description": "tiny conv + NMS (test)"}))
    return out


def matched(a: Detections, b: Detections) -> float:
    """The worst IoU over a's boxes >= 0.3 with the best same-class box of b within 0.02 of its score."""
    keep = a.scores >= 0.3
    worst = 1.0
    iou = box_iou(a.xyxy[keep], b.xyxy) if len(b.scores) else np.zeros((int(keep.sum()), 0))
    for row, (cls, score) in enumerate(zip(a.class_ids[keep], a.scores[keep], strict=True)):
        same = (b.class_ids == cls) & (np.abs(b.scores - score) <= 0.02)
        worst = min(worst, float(iou[row][same].max()) if same.any() else 0.0)
    return worst
