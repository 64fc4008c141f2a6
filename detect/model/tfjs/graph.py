"""A TF.js graph model (`model.json` + weight files) read back into a TensorFlow GraphDef.

A TF.js graph model is a GraphDef written as JSON (`modelTopology`, protobuf's JSON mapping) whose
`Const` nodes lost their values, plus a `weightsManifest`: each constant's name, shape, dtype and
storage (float32 as is, float16, or uint8/uint16 affine-quantized), concatenated in the `.bin`
files the manifest lists. TF.js also keeps ops TensorFlow cannot load: `_FusedConv2D`,
`_FusedMatMul` (grappler's internal fusions) and `FusedDepthwiseConv2dNative` (TF.js only). Each
is a conv or matmul + `BiasAdd` (+ an activation named in `fused_ops`); `read_graph_model`
splits them into the standard ops, so the result imports in plain TensorFlow.

Why not `tfjs-graph-converter` (PyPI): it imports `tensorflowjs`, whose package import pulls
`tf_keras`, `h5py` and `tensorflow_decision_forests`, none of which we need to read two files.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import stat
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from detect.core.errors import ModelError, first_line
from detect.core.files import UnreadableFileError, read_json, read_regular

GRAPH_MODEL_FORMAT = "graph-model"
# A model.json is a few hundred KB; refuse a multi-GB file before json.loads holds it twice.
MAX_JSON_BYTES = 64 << 20
# TF.js names activations in `fused_ops` after the TensorFlow op that computes them.
ACTIVATIONS = ("Relu", "Relu6", "Elu", "Selu", "Sigmoid", "Tanh", "LeakyRelu")
_SPLIT = {"_FusedConv2D": "Conv2D", "FusedDepthwiseConv2dNative": "DepthwiseConv2dNative", "_FusedMatMul": "MatMul"}
# The attributes each plain op takes (TensorFlow refuses a NodeDef with any other).
_OP_ATTRS = {
    "Conv2D": ("strides", "use_cudnn_on_gpu", "padding", "explicit_paddings", "data_format", "dilations"),
    "DepthwiseConv2dNative": ("strides", "padding", "explicit_paddings", "data_format", "dilations"),
    "MatMul": ("transpose_a", "transpose_b"),
}
_NUMPY = {"float32": np.float32, "int32": np.int32, "bool": np.bool_, "int64": np.int64}
# How each storage dtype sits in the weight files (bool as one byte).
_STORED = {"float32": np.float32, "int32": np.int32, "bool": np.uint8, "float16": np.float16, "uint8": np.uint8,
           "uint16": np.uint16}
MAX_RANK = 32  # numpy's (and far above any network's)
MAX_WEIGHT_BYTES = 2**31 - 1  # a GraphDef (protobuf) holds at most 2 GB, its constants included


@dataclasses.dataclass(frozen=True, eq=False)
class TfjsGraph:
    """What a TF.js graph model holds: the loadable GraphDef and the facts around it."""

    graph_def: Any  # tf.compat.v1.GraphDef
    inputs: dict[str, list[int]]  # input name -> shape (-1 where dynamic), from the signature
    outputs: tuple[str, ...]
    weight_files: tuple[Path, ...]
    split_ops: int  # fused nodes split into standard ops
    meta: dict[str, str]  # the model.json's top-level strings: generatedBy, convertedBy, format, ...


def read_graph_model(json_path: Path) -> TfjsGraph:
    """Read `json_path` and its weight files into a GraphDef TensorFlow can import.

    Raises `ModelError` (one line, naming the file) for a JSON that is not a TF.js graph model,
    weight files that are missing or of the wrong size, or ops that cannot be rewritten.
    """
    from google.protobuf import json_format  # protobuf comes with TensorFlow

    from detect.core.tf_env import import_tensorflow

    tf = import_tensorflow()
    json_path = Path(json_path)
    model = load_model_json(json_path)
    topology = model.get("modelTopology")
    manifest = model.get("weightsManifest")
    if model.get("format") not in (None, GRAPH_MODEL_FORMAT) or not isinstance(topology, dict) \
            or not isinstance(topology.get("node"), list) or not isinstance(manifest, list):
        raise ModelError(f"model {json_path} is not a TF.js graph model (expected format {GRAPH_MODEL_FORMAT!r} "
                         f"with modelTopology.node and weightsManifest)")
    try:
        bytes_as_base64(topology)
        graph_def = json_format.ParseDict(topology, tf.compat.v1.GraphDef(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as err:
        raise ModelError(f"model {json_path}: modelTopology is not a GraphDef: {first_line(err)}") from None
    weights, files = _read_weights(json_path, manifest)
    nodes = {node.name: node for node in graph_def.node}
    for name, array in weights.items():
        node = nodes.get(name)
        if node is None or node.op != "Const":
            continue  # TF.js keeps weights of nodes pruned later; they are harmless
        declared = node.attr["dtype"].type
        if declared == tf.int64.as_datatype_enum and array.dtype == np.int32:
            array = array.astype(np.int64)  # TF.js has no int64: it stores them as int32
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(array))
        if declared == 0:
            node.attr["dtype"].type = node.attr["value"].tensor.dtype
    empty = [n.name for n in graph_def.node if n.op == "Const" and not n.attr["value"].HasField("tensor")]
    if empty:
        raise ModelError(f"model {json_path}: {len(empty)} constant(s) have no weights in the manifest "
                         f"(first: {empty[0]})")
    split = _split_fused_ops(graph_def, json_path)
    for node in graph_def.node:
        node.device = ""  # TF.js exports pin /device:CPU:0
    signature = model.get("signature") or topology.get("signature") or {}
    inputs = {_tensor_name(k, v): _shape(v) for k, v in (signature.get("inputs") or {}).items()}
    if not inputs:
        inputs = {n.name: [d.size for d in n.attr["shape"].shape.dim] for n in graph_def.node if n.op == "Placeholder"}
    outputs = tuple(_tensor_name(k, v) for k, v in (signature.get("outputs") or {}).items())
    meta = {k: v for k, v in model.items() if isinstance(v, str)}
    return TfjsGraph(graph_def, inputs, outputs, tuple(files), split, meta)


def bytes_as_base64(topology: dict[str, Any]) -> None:
    """Older TF.js converters (coco-ssd's) write protobuf bytes (`AttrValue.s`, `ListValue.s`, a
    tensor's `stringVal`) as lists of byte values, not protobuf JSON's base64: rewritten in place."""
    def encoded(value: Any) -> Any:
        return base64.b64encode(bytes(value)).decode() if isinstance(value, list) else value

    for node in topology.get("node") or []:
        for value in (node.get("attr") or {}).values() if isinstance(node, dict) else ():
            if not isinstance(value, dict):
                continue
            if "s" in value:
                value["s"] = encoded(value["s"])
            for key, repeated in (("list", "s"), ("tensor", "stringVal")):
                inner = value.get(key)
                if isinstance(inner, dict) and isinstance(inner.get(repeated), list):
                    inner[repeated] = [encoded(item) for item in inner[repeated]]


def weight_paths(json_path: Path) -> list[Path]:
    """The weight files a model.json names, in manifest order, each accepted by `weight_file` (for checksums)."""
    json_path = Path(json_path)
    return [path for group in _manifest(json_path, load_model_json(json_path)) for path in _group(json_path, group)[0]]


def weight_file(json_path: Path, name: object) -> Path:
    """The one rule for a manifest's weight path, used by loading and by checksums: a relative path,
    inside the model's folder once links are resolved (no `../`, no `/dev/zero`), of a regular file."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise ModelError(f"model {json_path}: weight path {name!r} is not a file name")
    if PurePosixPath(name).is_absolute() or Path(name).is_absolute():
        raise ModelError(f"model {json_path}: weight path {name} is absolute; weight files are named relative to "
                         f"the model's folder")
    path = json_path.parent / name
    if not path.resolve().is_relative_to(json_path.parent.resolve()):
        raise ModelError(f"model {json_path}: weight file {path.name} is outside the model's folder")
    try:
        mode = path.stat().st_mode
    except OSError as err:
        raise ModelError(f"model {json_path}: weight file missing or unreadable: {err.strerror}: {path}") from None
    if not stat.S_ISREG(mode):
        raise ModelError(f"model {json_path}: weight file {name} is not a regular file")
    return path


def load_model_json(path: Path) -> dict[str, Any]:  # a TF.js model.json: free-form JSON, read key by key
    """The model.json as an object, read through `core.files` (bounded, strict); ModelError naming it."""
    try:
        data = read_json(path, limit=MAX_JSON_BYTES)
    except UnreadableFileError as err:
        raise ModelError(f"model {err}") from None
    if not isinstance(data, dict):
        raise ModelError(f"model {path} is not a TF.js graph model (the JSON is a {type(data).__name__}, not an object)")
    return data


def _manifest(json_path: Path, model: dict[str, Any]) -> list[Any]:  # model.json: checked key by key
    manifest = model.get("weightsManifest")
    if manifest is None:
        return []
    if not isinstance(manifest, list):
        raise ModelError(f"model {json_path}: weightsManifest is not a list")
    return manifest


def _group(json_path: Path, group: Any) -> tuple[list[Path], list[Any]]:
    """A manifest group's weight files (each checked by `weight_file`) and its entries."""
    if not isinstance(group, dict) or not isinstance(group.get("paths"), list) \
            or not isinstance(group.get("weights"), list):
        raise ModelError(f"model {json_path}: a weightsManifest entry lacks paths or weights")
    return [weight_file(json_path, p) for p in group["paths"]], group["weights"]


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One manifest entry, checked: its shape's element count is a bounded Python int."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    stored: np.dtype
    quant: dict[str, Any] | None  # the weight's `quantization` entry of model.json, as written

    @property
    def size(self) -> int:
        return math.prod(self.shape) * self.stored.itemsize


def _entry(entry: Any, json_path: Path) -> _Entry:
    if not isinstance(entry, dict) or not isinstance(entry.get("shape"), list) or "name" not in entry \
            or "dtype" not in entry:
        raise ModelError(f"model {json_path}: a weightsManifest entry lacks name, shape or dtype")
    name, shape, dtype, quant = str(entry["name"]), entry["shape"], str(entry["dtype"]), entry.get("quantization")
    if len(shape) > MAX_RANK or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ModelError(f"model {json_path}: weight {name} has shape {_clip(shape)}; expected at most {MAX_RANK} "
                         f"dimensions, each a whole number >= 0")
    if quant is not None and not isinstance(quant, dict):
        raise ModelError(f"model {json_path}: weight {name} has a quantization that is not an object")
    stored = str(quant.get("dtype")) if quant else dtype
    if stored not in _STORED:
        raise ModelError(f"model {json_path}: weight {name} is stored as {stored}, which this reader does not know")
    found = _Entry(name, tuple(shape), dtype, np.dtype(_STORED[stored]), quant or None)
    if found.size > MAX_WEIGHT_BYTES:  # Python ints: [2**40, 2**40] does not wrap to 0
        raise ModelError(f"model {json_path}: weight {name} of shape {_clip(shape)} would take {found.size:,} bytes, "
                         f"more than the {MAX_WEIGHT_BYTES:,} a TensorFlow graph can hold")
    return found


def _clip(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _read_weights(json_path: Path, manifest: list[Any]) -> tuple[dict[str, np.ndarray], list[Path]]:
    """Every weight of the manifest as a numpy array, dequantized to its original dtype.

    Sizes are checked against what the manifest declares before any byte is read, and each file
    is read as a regular file bounded by its size (a weight file swapped for a FIFO or grown since
    is refused, not waited on).
    """
    weights: dict[str, np.ndarray] = {}
    files: list[Path] = []
    for group in manifest:
        paths, raw_entries = _group(json_path, group)
        entries = [_entry(e, json_path) for e in raw_entries]
        names = ", ".join(p.name for p in paths)
        sizes = [path.stat().st_size for path in paths]
        available, offset = sum(sizes), 0
        for entry in entries:
            if offset + entry.size > available:
                raise ModelError(f"model {json_path}: weight file {names} ends inside weight {entry.name} (needs "
                                 f"{offset + entry.size:,} bytes, has {available:,}): truncated or not this model's weights")
            offset += entry.size
        if offset != available:
            raise ModelError(f"model {json_path}: weight file {names} holds {available:,} bytes, the manifest "
                             f"describes {offset:,} (truncated or not this model's weights)")
        try:
            data = b"".join(read_regular(path, limit=size) for path, size in zip(paths, sizes, strict=True))
        except UnreadableFileError as err:
            raise ModelError(f"model {json_path}: weight file {err}") from None
        if len(data) != available:
            raise ModelError(f"model {json_path}: weight file {names} changed while it was read")
        files.extend(paths)
        offset = 0
        for entry in entries:
            weights[entry.name] = _weight(entry, data, offset, json_path)
            offset += entry.size
    return weights, files


def _weight(entry: _Entry, data: bytes, offset: int, json_path: Path) -> np.ndarray:
    """One checked manifest entry read from `data` at `offset`, dequantized."""
    raw = np.frombuffer(data, entry.stored, math.prod(entry.shape), offset).reshape(entry.shape)
    quant = entry.quant
    if not quant:
        return raw.astype(bool) if entry.dtype == "bool" else raw.copy()
    if entry.stored == np.float16:
        return raw.astype(np.float32)
    try:  # affine: value = q * scale + min (TF.js quantization.ts)
        scale, low = float(quant["scale"]), float(quant["min"])
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"model {json_path}: weight {entry.name} is {entry.stored}-quantized without scale and min") from None
    return (raw.astype(np.float32) * scale + low).astype(_NUMPY.get(entry.dtype, np.float32))


def _split_fused_ops(graph_def: Any, json_path: Path) -> int:
    """Rewrite every fused conv / matmul into conv + BiasAdd (+ activation), in place.

    The last op of the chain keeps the fused node's name, so its consumers stay wired.
    """
    rewritten = []
    count = 0
    for node in graph_def.node:
        if node.op not in _SPLIT:
            rewritten.append(node)
            continue
        fused = [s.decode() for s in node.attr["fused_ops"].list.s]
        if not fused or fused[0] != "BiasAdd" or any(op not in ACTIVATIONS for op in fused[1:]) or len(fused) > 2:
            raise ModelError(f"model {json_path}: node {node.name} fuses {'+'.join(fused) or 'nothing'} into "
                             f"{node.op}; only BiasAdd (+ one of {', '.join(ACTIVATIONS)}) can be split")
        if len(node.input) < 3:
            raise ModelError(f"model {json_path}: node {node.name} ({node.op}) has {len(node.input)} inputs, expected 3")
        data_input, weights, bias = node.input[0], node.input[1], node.input[2]
        chain = [_SPLIT[node.op], "BiasAdd", *fused[1:]]
        names = [f"{node.name}/{op.lower()}" for op in chain[:-1]] + [node.name]
        dtype = node.attr["T"]
        previous = ""
        for op, name in zip(chain, names):
            step = type(node)()
            step.name, step.op = name, op
            step.attr["T"].CopyFrom(dtype)
            if op == chain[0]:
                step.input.extend([data_input, weights])
                for key in _OP_ATTRS[op]:
                    if key in node.attr:
                        step.attr[key].CopyFrom(node.attr[key])
            elif op == "BiasAdd":
                step.input.extend([previous, bias])
                if "data_format" in node.attr and chain[0] != "MatMul":
                    step.attr["data_format"].CopyFrom(node.attr["data_format"])
            else:
                step.input.append(previous)
                if op == "LeakyRelu" and "leakyrelu_alpha" in node.attr:
                    step.attr["alpha"].f = node.attr["leakyrelu_alpha"].f
            rewritten.append(step)
            previous = name
        count += 1
    del graph_def.node[:]
    graph_def.node.extend(rewritten)
    return count


def tensor_name(name: str) -> str:
    """`node` -> `node:0`; `node:k` as it is."""
    return name if ":" in name else f"{name}:0"


def node_name(name: str) -> str:
    """`node:k` -> `node`."""
    return name.split(":")[0]


def _tensor_name(key: str, value: Any) -> str:
    name = value.get("name", key) if isinstance(value, dict) else key
    return str(name).split(":")[0]


def _shape(value: Any) -> list[int]:
    try:
        return [int(d.get("size", -1)) for d in value["tensorShape"]["dim"]]
    except (KeyError, TypeError, ValueError, AttributeError):
        return []


def as_function(graph: TfjsGraph, input_name: str, output_names: tuple[str, ...], *, path: Path) -> Any:
    """The graph as a TensorFlow function `input -> [outputs]`, with the input's batch made dynamic.

    TF.js exports pin batch 1 on the placeholder; convolutional networks do not depend on it.
    Nodes past `output_names` (a decode with batch 1 folded into its constants) are pruned away.
    An output is a node name (its first output) or `name:k` (its k-th, e.g. a split's second half).
    """
    from detect.core.tf_env import import_tensorflow, tf_error_text

    tf = import_tensorflow()
    graph_def = tf.compat.v1.GraphDef()
    graph_def.CopyFrom(graph.graph_def)
    placeholders = {n.name: n for n in graph_def.node if n.op == "Placeholder"}
    if input_name not in placeholders:
        raise ModelError(f"model {path}: no input named {input_name} (it has {', '.join(sorted(placeholders)) or 'none'})")
    dims = placeholders[input_name].attr["shape"].shape.dim
    if dims:
        dims[0].size = -1

    def imported() -> None:
        tf.compat.v1.import_graph_def(graph_def, name="")

    try:
        wrapped = tf.compat.v1.wrap_function(imported, [])
        g = wrapped.graph
        return wrapped.prune(feeds=g.get_tensor_by_name(f"{input_name}:0"),
                             fetches=[g.get_tensor_by_name(tensor_name(name)) for name in output_names])
    except (KeyError, ValueError, tf.errors.OpError) as err:
        raise ModelError(f"model {path}: TensorFlow cannot import this graph: {tf_error_text(err)}") from None
