"""Small ONNX detectors with known outputs, built with the `onnx` helper API (no PyTorch): the shapes,
names and metadata of an Ultralytics YOLOv8/11 export, a torchvision export and an RT-DETR / D-FINE
export, whose outputs are constants (plus zero times the input, so the input is used) or, for the
probes, pixels of the network input itself (so a test sees what the preprocessing fed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _save(path: Path, nodes: list, inputs: list, outputs: list, initializers: list, metadata: dict[str, str] | None = None,
          opset: int = OPSET, domains: Sequence[tuple[str, int]] = ()) -> Path:
    graph = helper.make_graph(nodes, "detector", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    *(helper.make_opsetid(d, v) for d, v in domains)],
                              producer_name="detect-tests")
    model.ir_version = 8
    for key, value in (metadata or {}).items():
        model.metadata_props.append(onnx.StringStringEntryProto(key=key, value=value))
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _zero_of(input_name: str, nodes: list, initializers: list, tag: str) -> str:
    """A scalar 0 computed from the input (ReduceMean(x) * 0): the output depends on the input's presence."""
    nodes.append(helper.make_node("Cast", [input_name], [f"{tag}_f"], to=TensorProto.FLOAT))
    nodes.append(helper.make_node("ReduceMean", [f"{tag}_f"], [f"{tag}_mean"], keepdims=0))
    initializers.append(numpy_helper.from_array(np.array(0, np.float32), f"{tag}_zero"))
    nodes.append(helper.make_node("Mul", [f"{tag}_mean", f"{tag}_zero"], [f"{tag}_0"]))
    return f"{tag}_0"


def ultralytics_head(boxes: Sequence[tuple[float, float, float, float, int, float]], classes: int,
                     anchors: int = 64) -> np.ndarray:
    """`[1, 4 + classes, anchors]`: each (cx, cy, w, h, class index, score) in an anchor of its own, the rest 0."""
    head = np.zeros((1, 4 + classes, anchors), np.float32)
    for k, (cx, cy, w, h, cls, score) in enumerate(boxes):
        head[0, :4, k] = cx, cy, w, h
        head[0, 4 + cls, k] = score
    return head


ULTRALYTICS_METADATA = {"description": "Ultralytics YOLO11n-test model", "author": "Ultralytics", "stride": "32",
                        "batch": "1"}


def ultralytics_model(path: Path, names: dict[int, str], head: np.ndarray, *, imgsz: tuple[int, int] = (640, 640),
                      task: str = "detect", dynamic: bool = False, probes: Sequence[tuple[int, int, int, int, int]] = (),
                      metadata: dict[str, str] | None = None, opset: int = OPSET) -> Path:
    """An Ultralytics detect export: `images` float32 [1, 3, H, W] (or dynamic), `output0` = `head`, and its
    metadata. Each probe (channel, y, x, anchor, class index) adds the network input's value at that pixel to
    that class's score in that anchor: what the preprocessing put there."""
    h, w = imgsz
    shape = [1, 3, None, None] if dynamic else [1, 3, h, w]
    nodes: list = []
    inits = [numpy_helper.from_array(head, "head")]
    zero = _zero_of("images", nodes, inits, "z")
    nodes.append(helper.make_node("Add", ["head", zero], ["acc0"]))
    last = "acc0"
    for n, (c, y, x, anchor, cls) in enumerate(probes):
        starts, ends = np.array([0, c, y, x], np.int64), np.array([1, c + 1, y + 1, x + 1], np.int64)
        inits += [numpy_helper.from_array(starts, f"p{n}_s"), numpy_helper.from_array(ends, f"p{n}_e")]
        nodes.append(helper.make_node("Slice", ["images", f"p{n}_s", f"p{n}_e"], [f"p{n}_px"]))
        inits.append(numpy_helper.from_array(np.array([1, 1, 1], np.int64), f"p{n}_shape"))
        nodes.append(helper.make_node("Reshape", [f"p{n}_px", f"p{n}_shape"], [f"p{n}_v"]))
        mask = np.zeros_like(head)
        mask[0, 4 + cls, anchor] = 1
        inits.append(numpy_helper.from_array(mask, f"p{n}_mask"))
        nodes.append(helper.make_node("Mul", [f"p{n}_mask", f"p{n}_v"], [f"p{n}_add"]))
        nodes.append(helper.make_node("Add", [last, f"p{n}_add"], [f"acc{n + 1}"]))
        last = f"acc{n + 1}"
    nodes.append(helper.make_node("Identity", [last], ["output0"]))
    meta = {**ULTRALYTICS_METADATA, "task": task, "imgsz": str(list(imgsz)), "names": str(names), **(metadata or {})}
    return _save(path, nodes, [helper.make_tensor_value_info("images", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(head.shape))], inits, meta, opset=opset)


def boxes_labels_scores_model(path: Path, boxes: np.ndarray, labels: np.ndarray, scores: np.ndarray, *,
                              input_shape: Sequence[int | None] = (3, None, None), sizes_input: bool = False,
                              metadata: dict[str, str] | None = None) -> Path:
    """A torchvision-like export (`images` [3, H, W], outputs `boxes` [N, 4], `labels` [N] int64, `scores` [N]) or,
    with a batch axis and `sizes_input`, an RT-DETR-like one: `orig_target_sizes` int64 [B, 2] (width, height) in,
    `boxes` = the given normalized boxes times those sizes out."""
    nodes: list = []
    batched = len(input_shape) == 4
    inits = [numpy_helper.from_array(labels.astype(np.int64), "labels_c"),
             numpy_helper.from_array(scores.astype(np.float32), "scores_c"),
             numpy_helper.from_array(boxes.astype(np.float32), "boxes_c")]
    zero = _zero_of("images", nodes, inits, "z")
    inputs = [helper.make_tensor_value_info("images", TensorProto.FLOAT, list(input_shape))]
    if sizes_input:  # outputs with the batch's rows: the constants plus zeros [B, 1] made from the sizes
        inputs.append(helper.make_tensor_value_info("orig_target_sizes", TensorProto.INT64, [input_shape[0], 2]))
        nodes.append(helper.make_node("Cast", ["orig_target_sizes"], ["sizes_f"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("ReduceMean", ["sizes_f"], ["rows_mean"], axes=[1], keepdims=1))
        nodes.append(helper.make_node("Mul", ["rows_mean", zero], ["rows0"]))
        nodes.append(helper.make_node("Cast", ["rows0"], ["rows0_i"], to=TensorProto.INT64))
        nodes.append(helper.make_node("Add", ["scores_c", "rows0"], ["scores"]))
        nodes.append(helper.make_node("Add", ["labels_c", "rows0_i"], ["labels"]))
    else:
        nodes.append(helper.make_node("Add", ["scores_c", zero], ["scores"]))
        nodes.append(helper.make_node("Identity", ["labels_c"], ["labels"]))
    if sizes_input:
        nodes.append(helper.make_node("Concat", ["sizes_f", "sizes_f"], ["sizes4"], axis=1))  # [B, 4]: w, h, w, h
        inits.append(numpy_helper.from_array(np.array([-1, 1, 4], np.int64), "sizes_shape"))
        nodes.append(helper.make_node("Reshape", ["sizes4", "sizes_shape"], ["sizes_b"]))
        nodes.append(helper.make_node("Mul", ["boxes_c", "sizes_b"], ["boxes"]))
    else:
        nodes.append(helper.make_node("Add", ["boxes_c", zero], ["boxes"]))
    lead = [input_shape[0]] if batched else []
    n = boxes.shape[-2]
    outputs = [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [*lead, n, 4]),
               helper.make_tensor_value_info("labels", TensorProto.INT64, [*lead, n]),
               helper.make_tensor_value_info("scores", TensorProto.FLOAT, [*lead, n])]
    return _save(path, nodes, inputs, outputs, inits, metadata)


def single_output_model(path: Path, output_name: str = "output0", shape: Sequence[int] = (1, 300, 6),
                        input_shape: Sequence[int | None] = (1, 3, 640, 640), opset: int = OPSET, op: str = "Identity",
                        domain: str = "", metadata: dict[str, str] | None = None) -> Path:
    """One float input and one output of `shape` (zeros): an end-to-end YOLO head, or a graph for refusals
    (`op` in a custom `domain`, an opset of `opset`)."""
    nodes: list = []
    inits = [numpy_helper.from_array(np.zeros(shape, np.float32), "const")]
    zero = _zero_of("images", nodes, inits, "z")
    nodes.append(helper.make_node("Add", ["const", zero], ["sum"]))
    nodes.append(helper.make_node(op, ["sum"], [output_name], domain=domain))
    return _save(path, nodes, [helper.make_tensor_value_info("images", TensorProto.FLOAT, list(input_shape))],
                 [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, list(shape))], inits, metadata,
                 opset=opset, domains=[(domain, 1)] if domain else [])
