"""Build SSD MobileNet v2's architecture with random weights, in the zoo SavedModel contract.

Same compute as the real detector (MobileNetV2 backbone at 300x300, the OD API's SSD feature
layers and 3x3 box/class heads, 1,917 anchors, sigmoid scores, box decoding, NMS) so it can be
timed offline; its boxes are meaningless. Dynamic batch; any input size (resized inside to 300x300,
bilinear, as the zoo's fixed_shape_resizer). Batch-norm statistics and the class-logit bias are
calibrated on a real Waymo frame so that a realistic handful of boxes score above 0.5 (drawing
costs are realistic too).

    python models/build_benchmark.py --out models/build/ssd_mobilenet_v2_random
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from detect.core.tf_env import import_tensorflow  # noqa: E402
from detect.model.sidecar import ModelSidecar  # noqa: E402

INPUT_SIZE = 300
NUM_CLASSES = 91  # COCO ids 0..90; 0 = background, not scored
MAX_DETECTIONS = 100
FEATURE_MAPS = (19, 10, 5, 3, 2, 1)
EXTRA_DEPTHS = (512, 256, 256, 128)
ASPECT_RATIOS = (1.0, 2.0, 0.5, 3.0, 1.0 / 3.0)
MIN_SCALE, MAX_SCALE = 0.2, 0.95
BOX_SCALES = (10.0, 10.0, 5.0, 5.0)  # FasterRcnnBoxCoder y, x, h, w
IOU_THRESHOLD = 0.6
SCORE_THRESHOLD = 1e-8  # as the zoo's exported graphs
# Median boxes per image above 0.5 on the calibration frames (see calibrate).
TARGET_BOXES_ABOVE_HALF = 10
DESCRIPTION = (
    "SSD MobileNet v2 architecture with random weights (benchmark only, boxes meaningless)"
)


def anchor_specs() -> list[list[tuple[float, float]]]:
    """(scale, aspect ratio) per anchor per layer, as the OD API's ssd_anchor_generator."""
    n = len(FEATURE_MAPS)
    scales = [MIN_SCALE + (MAX_SCALE - MIN_SCALE) * i / (n - 1) for i in range(n)] + [1.0]
    specs = []
    for layer in range(n):
        if layer == 0:  # reduce_boxes_in_lowest_layer
            specs.append([(0.1, 1.0), (scales[0], 2.0), (scales[0], 0.5)])
        else:
            layer_specs = [(scales[layer], ar) for ar in ASPECT_RATIOS]
            layer_specs.append((math.sqrt(scales[layer] * scales[layer + 1]), 1.0))
            specs.append(layer_specs)
    return specs


def make_anchors() -> np.ndarray:
    """Anchors `[A, 4]` as normalized (ycenter, xcenter, height, width), in head output order."""
    rows = []
    for size, specs in zip(FEATURE_MAPS, anchor_specs()):
        for y in range(size):
            for x in range(size):
                for scale, ratio in specs:
                    rows.append(
                        ((y + 0.5) / size, (x + 0.5) / size, scale / math.sqrt(ratio),
                         scale * math.sqrt(ratio))
                    )
    return np.asarray(rows, np.float32)


def build_keras_model(seed: int = 0):
    """MobileNetV2 + SSD feature layers + heads -> (box codes [B,A,4], class logits [B,A,91])."""
    import keras
    from keras import layers

    keras.utils.set_random_seed(seed)
    backbone = keras.applications.MobileNetV2(
        input_shape=(INPUT_SIZE, INPUT_SIZE, 3), include_top=False, weights=None, alpha=1.0
    )
    # layer_15/expansion_output (19x19x576) and layer_19 (10x10x1280) in OD API names.
    features = [backbone.get_layer("block_13_expand_relu").output, backbone.output]
    x = features[-1]
    for i, depth in enumerate(EXTRA_DEPTHS, start=2):
        for kernel, stride, d in ((1, 1, depth // 2), (3, 2, depth)):
            name = f"layer_19_{i}_{kernel}x{kernel}_{d}"
            x = layers.Conv2D(d, kernel, stride, padding="same", use_bias=False, name=name)(x)
            x = layers.BatchNormalization(name=f"{name}_bn")(x)
            x = layers.ReLU(6.0, name=f"{name}_relu6")(x)
        features.append(x)
    boxes, logits = [], []
    for i, (feature, specs) in enumerate(zip(features, anchor_specs())):
        n = len(specs)
        b = layers.Conv2D(n * 4, 3, padding="same", name=f"box_head_{i}")(feature)
        c = layers.Conv2D(
            n * NUM_CLASSES, 3, padding="same", name=f"class_head_{i}",
            kernel_initializer=keras.initializers.RandomNormal(stddev=0.01, seed=seed + i),
        )(feature)
        boxes.append(layers.Reshape((-1, 4))(b))
        logits.append(layers.Reshape((-1, NUM_CLASSES))(c))
    outputs = [layers.Concatenate(axis=1)(boxes), layers.Concatenate(axis=1)(logits)]
    return keras.Model(backbone.input, outputs, name="ssd_mobilenet_v2_random")


def standardize(logits):
    """Per-image standardized class logits (benchmark-only, ~0.1 ms).

    Random weights shift all logits of an image together, so with a plain bias one frame gets 90
    boxes above 0.5 and the next none; standardizing makes the count steady from frame to frame.
    """
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    mean, variance = tf.nn.moments(logits, axes=[1, 2], keepdims=True)
    return (logits - mean) * tf.math.rsqrt(variance + 1e-12)


def _module(model, anchors: np.ndarray):
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    class SSDMobileNetV2(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.anchors = tf.constant(anchors)
            self.class_bias = tf.Variable(0.0, trainable=False, name="class_bias")

        def preprocess(self, images):
            x = tf.image.resize(tf.cast(images, tf.float32), [INPUT_SIZE, INPUT_SIZE])
            return x * (2.0 / 255.0) - 1.0

        def decode(self, codes):
            """Box codes `[B, A, 4]` against the anchors -> clipped normalized boxes."""
            ya, xa, ha, wa = tf.unstack(self.anchors, axis=1)
            ty, tx, th, tw = tf.unstack(codes / BOX_SCALES, axis=2)
            yc, xc = ty * ha + ya, tx * wa + xa
            h, w = tf.exp(th) * ha, tf.exp(tw) * wa
            return tf.clip_by_value(
                tf.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=2), 0.0, 1.0
            )

        @tf.function(
            input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")]
        )
        def __call__(self, input_tensor):
            codes, logits = self.model(self.preprocess(input_tensor), training=False)
            raw_boxes = self.decode(codes)
            raw_scores = tf.sigmoid(standardize(logits) + self.class_bias)
            nms = tf.image.combined_non_max_suppression(
                raw_boxes[:, :, None, :], raw_scores[:, :, 1:], MAX_DETECTIONS, MAX_DETECTIONS,
                iou_threshold=IOU_THRESHOLD, score_threshold=SCORE_THRESHOLD, clip_boxes=False,
            )
            n = tf.shape(input_tensor)[0]
            return {
                "detection_boxes": nms.nmsed_boxes,
                "detection_scores": nms.nmsed_scores,
                "detection_classes": nms.nmsed_classes + 1.0,  # skip background
                "num_detections": tf.cast(nms.valid_detections, tf.float32),
                "raw_detection_boxes": raw_boxes,
                "raw_detection_scores": raw_scores,
                # combined NMS does not report anchor indices; zeros keep the zoo's keys.
                "detection_anchor_indices": tf.zeros([n, MAX_DETECTIONS]),
                "detection_multiclass_scores": tf.zeros([n, MAX_DETECTIONS, NUM_CLASSES]),
            }

    return SSDMobileNetV2()


def calibrate(module, images: Sequence[np.ndarray], target: int) -> float:
    """Make random weights behave on real images; returns the class-logit bias it chose.

    Random weights with fresh batch-norm statistics shrink activations to ~1e-7 by the last layer,
    so every score would be sigmoid(bias). One training-mode pass with momentum 0 sets each
    batch-norm's moving statistics to those of the calibration images (activations then stay
    normalized through the network); then the bias added to the per-image standardized class
    logits is chosen by bisection so that a median of `target` boxes per image score above 0.5
    after NMS (on the fixture frame: 2-34 per camera image, median 7).
    """
    import keras
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    model = module.model
    batch = module.preprocess(
        tf.stack([tf.image.resize(img, [INPUT_SIZE, INPUT_SIZE]) for img in images])
    )
    norms = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    for layer in norms:
        layer.momentum = 0.0
    model(batch, training=True)
    for layer in norms:
        layer.momentum = 0.99
    codes, logits = model(batch, training=False)
    logits = standardize(logits)
    boxes = module.decode(codes)[:, :, None, :]

    def boxes_above_half(bias: float) -> float:
        scores = tf.sigmoid(logits[:, :, 1:] + bias)
        nms = tf.image.combined_non_max_suppression(
            boxes, scores, MAX_DETECTIONS, MAX_DETECTIONS, IOU_THRESHOLD, 0.5, clip_boxes=False
        )
        return float(np.median(nms.valid_detections.numpy()))

    low, high = -50.0, 50.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if boxes_above_half(mid) < target else (low, mid)
    bias = (low + high) / 2
    module.class_bias.assign(bias)
    return bias


def count_flops(model) -> float:
    """Floating-point operations (2 per multiply-add) of one 300x300 image through the network."""
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, INPUT_SIZE, INPUT_SIZE, 3], tf.float32)
    )
    graph = convert_variables_to_constants_v2(fn).graph
    opts = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    opts["output"] = "none"
    return float(tf.compat.v1.profiler.profile(graph=graph, options=opts).total_float_ops)


def fixture_images(tfrecord: Path) -> list[np.ndarray]:
    """Decoded camera images of the first frame of a Waymo v1 TFRecord."""
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter
    from waymo_open_dataset import dataset_pb2

    record = next(iter(tf.data.TFRecordDataset(str(tfrecord)))).numpy()
    frame = dataset_pb2.Frame.FromString(record)
    return [tf.io.decode_jpeg(image.image).numpy() for image in frame.images]


def build_benchmark(
    path: str | os.PathLike, *, calibration_images: Sequence[np.ndarray] = (), seed: int = 0
) -> dict[str, object]:
    """Write the benchmark SavedModel to `path`; returns facts about it (params, GFLOPs, ...)."""
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    path = Path(path)
    model = build_keras_model(seed)
    module = _module(model, make_anchors())
    bias = None
    if calibration_images:
        bias = calibrate(module, calibration_images, TARGET_BOXES_ABOVE_HALF)
    signature = module.__call__.get_concrete_function()
    tf.saved_model.save(module, str(path), signatures={"serving_default": signature})
    sidecar = ModelSidecar("benchmark", DESCRIPTION, facts={
        "parameters": int(model.count_params()),
        "anchors": int(make_anchors().shape[0]),
        "class_logit_bias": bias,
    })
    sidecar.write(path)
    return sidecar.to_json()


def main(argv: list[str] | None = None) -> int:
    default_fixture = Path(__file__).resolve().parents[2] / "shared/fixtures/waymo_v1_one_frame.tfrecord"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="SavedModel directory to write")
    parser.add_argument(
        "--calibrate-with", type=Path, default=default_fixture,
        help="Waymo v1 TFRecord whose first frame sets the class bias (default: shared fixture)",
    )
    parser.add_argument("--flops", action="store_true", help="also count GFLOPs per image")
    args = parser.parse_args(argv)
    images = fixture_images(args.calibrate_with) if args.calibrate_with.is_file() else []
    if not images:
        print(f"no calibration frame at {args.calibrate_with}: class bias left at 0", file=sys.stderr)
    facts = build_benchmark(args.out, calibration_images=images)
    if args.flops:
        facts["gflops_per_image"] = round(count_flops(build_keras_model()) / 1e9, 2)
    print(f"wrote {args.out}: {json.dumps(facts)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
