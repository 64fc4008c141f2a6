"""TF.js networks at any input size: constant resize targets made shape-derived in the GraphDef.

The TF.js exports fold each upsampling's output size into a constant for the one input size they
were exported at. Each such constant becomes `StridedSlice(Shape(input), [a], [b]) // stride`, the
input's own (H, W) over that feature map's stride, so the network runs at whatever H x W (multiples
of 32) it is fed. One graph, not one SavedModel per size: OpenVINO, which fixes shapes, folds these
back to constants per input shape (its cache keeps one network per shape).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from detect.core.errors import ModelError
from detect.model.tfjs.graph_def import TfjsGraph


def shape_derived(tf: Any, graph: TfjsGraph, path: Path, input_name: str, targets: dict[str, int],
                  sides: tuple[int, int], family: str) -> TfjsGraph:
    """`graph` with each constant of `targets` (name -> stride) replaced by the input's dimensions
    `sides` (begin, end: (1, 3) for NHWC, (2, 4) for NCHW) floor-divided by its stride."""
    graph_def = tf.compat.v1.GraphDef()
    graph_def.CopyFrom(graph.graph_def)
    nodes = {node.name: node for node in graph_def.node}
    missing = [name for name in targets if nodes.get(name) is None or nodes[name].op != "Const"]
    if missing:
        raise ModelError(f"model {path}: no constant resize target {missing[0]} (not the {family} graph this head knows)")
    node_type = type(graph_def.node[0])
    prefix = f"{input_name}/any_size"
    added = [_node(node_type, f"{prefix}/shape", "Shape", [input_name], T=tf.float32.as_datatype_enum,
                   out_type=tf.int32.as_datatype_enum)]
    for name, value in (("begin", [sides[0]]), ("end", [sides[1]]), ("strides", [1])):
        added.append(_const(tf, node_type, f"{prefix}/{name}", value))
    added.append(_node(node_type, f"{prefix}/sides", "StridedSlice",
                       [f"{prefix}/{n}" for n in ("shape", "begin", "end", "strides")],
                       T=tf.int32.as_datatype_enum, Index=tf.int32.as_datatype_enum))
    for name, stride in targets.items():
        node = nodes[name]
        added.append(_const(tf, node_type, f"{name}/stride", [stride]))
        node.Clear()
        node.name, node.op = name, "FloorDiv"
        node.input.extend([f"{prefix}/sides", f"{name}/stride"])
        node.attr["T"].type = tf.int32.as_datatype_enum
    graph_def.node.extend(added)
    return dataclasses.replace(graph, graph_def=graph_def)


def _node(node_type: Any, name: str, op: str, inputs: list[str], **types: int) -> Any:
    node = node_type()
    node.name, node.op = name, op
    node.input.extend(inputs)
    for key, value in types.items():
        node.attr[key].type = value
    return node


def _const(tf: Any, node_type: Any, name: str, value: list[int]) -> Any:
    node = _node(node_type, name, "Const", [], dtype=tf.int32.as_datatype_enum)
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=tf.int32))
    return node
