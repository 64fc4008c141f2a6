"""Build tiny stub SavedModels in the exact TF Object Detection API zoo contract.

The stub is not a detector: it returns fixed, known boxes (so tests can check exact pixels) plus
one "probe" box whose score depends on the mean pixel value of its own input image, so tests can
prove that batch items are neither swapped nor mixed across replicas.

    python models/build_stub.py --out models/build   # -> stub_batch1/ and stub_dynamic/
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from detect.core.tf_env import import_tensorflow  # noqa: E402
from detect.model.sidecar import SIDECAR as SIDECAR  # noqa: E402  (tests/conftest.py reads it here)
from detect.model.sidecar import ModelSidecar  # noqa: E402

MAX_DETECTIONS = 100
NUM_CLASSES = 91  # COCO ids 0..90, 0 = background
NUM_ANCHORS = 8  # size of the fake raw_* outputs

# Rows before num_detections: (ymin, xmin, ymax, xmax), score, class id. Values are exact in
# binary so pixel boxes are exact on any image size. Order is not by score on purpose.
FIXED_DETECTIONS: tuple[tuple[tuple[float, float, float, float], float, int], ...] = (
    ((0.5, 0.25, 0.75, 0.5), 0.875, 3),  # car
    ((0.25, -0.0625, 0.875, 0.125), 0.75, 1),  # person, xmin outside the image -> clipped
    ((0.0625, 0.625, 0.1875, 0.6875), 0.625, 10),  # traffic light
    ((0.375, 0.75, 0.625, 1.0625), 0.5625, 12),  # id 12 is a gap in COCO; xmax clipped
    ((0.125, 0.125, 0.25, 0.25), 0.25, 2),  # bicycle below the default threshold
)
PROBE_BOX = (0.75, 0.5, 0.9375, 0.625)
PROBE_CLASS = 13  # stop sign
PROBE_SCORE_MIN, PROBE_SCORE_SPAN = 0.5, 0.4  # score = 0.5 + 0.4 * mean(pixels) / 255
NUM_DETECTIONS = len(FIXED_DETECTIONS) + 1
# Padding rows after num_detections: valid-looking, high-scoring junk that must be trimmed.
PADDING_DETECTION = ((0.1, 0.1, 0.3, 0.3), 0.99, 1)

REQUIRED_OUTPUTS = ("detection_boxes", "detection_scores", "detection_classes", "num_detections")
EXTRA_OUTPUTS = (
    "raw_detection_boxes",
    "raw_detection_scores",
    "detection_anchor_indices",
    "detection_multiclass_scores",
)

STUB_DESCRIPTION = "stub model (fixed boxes, not a detector)"


def probe_score(image: np.ndarray) -> float:
    """The probe row's score for one uint8 HxWx3 image, as the stub computes it."""
    mean = float(np.mean(image.astype(np.float32)))
    return PROBE_SCORE_MIN + PROBE_SCORE_SPAN * mean / 255.0


def _fixed_rows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    boxes = np.tile(np.asarray(PADDING_DETECTION[0], np.float32), (MAX_DETECTIONS, 1))
    scores = np.full(MAX_DETECTIONS, PADDING_DETECTION[1], np.float32)
    classes = np.full(MAX_DETECTIONS, PADDING_DETECTION[2], np.float32)
    for i, (box, score, class_id) in enumerate(FIXED_DETECTIONS):
        boxes[i], scores[i], classes[i] = box, score, class_id
    probe = len(FIXED_DETECTIONS)
    boxes[probe], scores[probe], classes[probe] = PROBE_BOX, 0.0, PROBE_CLASS
    return boxes, scores, classes


def build_stub(path: str | os.PathLike, dynamic_batch: bool, *, omit: Iterable[str] = ()) -> Path:
    """Write a stub SavedModel to `path` (batch fixed at 1, or dynamic); returns the path.

    `omit` drops outputs from the signature, to build models that break the contract in tests.
    """
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    path = Path(path)
    omit = frozenset(omit)
    boxes, scores, classes = _fixed_rows()
    probe = len(FIXED_DETECTIONS)
    probe_mask = np.zeros(MAX_DETECTIONS, np.float32)
    probe_mask[probe] = 1.0
    batch = None if dynamic_batch else 1
    spec = tf.TensorSpec([batch, None, None, 3], tf.uint8, name="input_tensor")

    class Stub(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            # A variable, as real models have, so tf.distribute mirrors something.
            self.probe_span = tf.Variable(PROBE_SCORE_SPAN, dtype=tf.float32, trainable=False)

        @tf.function(input_signature=[spec])
        def __call__(self, input_tensor: tf.Tensor) -> dict[str, tf.Tensor]:
            n = tf.shape(input_tensor)[0]
            mean = tf.reduce_mean(tf.cast(input_tensor, tf.float32), axis=[1, 2, 3])
            probe_scores = PROBE_SCORE_MIN + self.probe_span * mean / 255.0
            out_scores = tf.constant(scores)[None, :] + probe_scores[:, None] * probe_mask[None, :]
            outputs = {
                "detection_boxes": tf.tile(tf.constant(boxes)[None], [n, 1, 1]),
                "detection_scores": out_scores,
                "detection_classes": tf.tile(tf.constant(classes)[None], [n, 1]),
                "num_detections": tf.fill([n], tf.constant(float(NUM_DETECTIONS))),
                "raw_detection_boxes": tf.zeros([n, NUM_ANCHORS, 4]),
                "raw_detection_scores": tf.zeros([n, NUM_ANCHORS, NUM_CLASSES]),
                "detection_anchor_indices": tf.zeros([n, MAX_DETECTIONS]),
                "detection_multiclass_scores": tf.zeros([n, MAX_DETECTIONS, NUM_CLASSES]),
            }
            return {k: v for k, v in outputs.items() if k not in omit}

    module = Stub()
    signature = module.__call__.get_concrete_function()
    tf.saved_model.save(module, str(path), signatures={"serving_default": signature})
    variant = "dynamic batch" if dynamic_batch else "batch fixed at 1"
    ModelSidecar("stub", f"{STUB_DESCRIPTION}, {variant}").write(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to write the models in")
    args = parser.parse_args(argv)
    for name, dynamic in (("stub_batch1", False), ("stub_dynamic", True)):
        target = build_stub(args.out / name, dynamic)
        print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
