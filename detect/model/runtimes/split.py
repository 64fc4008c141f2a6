"""Where a frozen detector graph splits: pre-processing | the network | post-processing.

A faster runtime (OpenVINO) takes only the part it runs well: a static-shape convolutional network.
Everything else stays in TensorFlow, the runtime that wrote it:
- **pre-processing**: every node the network's first convolution needs, i.e. the resize, pad and
  normalization (TF1 exports run them in a while loop; a letterbox sizes itself from the image);
- **the network**: what depends on that convolution's input up to the post-processing;
- **post-processing**: from the first NMS or top-k op (or any control-flow op: TF1 exports run
  NMS in a while loop) to the outputs. What it reads of the pre-processing (an image's true
  size, say) is handed over; whatever does not depend on the network runs with the pre-processing.

Pure functions over `GraphDef` protos (no session, no conversion): `flatten` inlines function
calls so that one graph holds every node, `find_split` finds the three parts, `network_graph`
cuts the middle one out as a graph of its own.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from detect.core.errors import ModelError

# The ops a detector's post-processing starts with: NMS, and the top-k of CenterNet-style heads.
POSTPROCESS_OPS = frozenset({
    "TopKV2", "NonMaxSuppression", "NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4",
    "NonMaxSuppressionV5", "NonMaxSuppressionWithOverlaps", "CombinedNonMaxSuppression",
})
# Loops and branches (TF1 frames and TF2 functional ones) and the tensor arrays they fill: never
# in the network part; after the network they start the post-processing.
CONTROL_FLOW_OPS = frozenset({
    "Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "RefEnter", "RefExit", "RefMerge",
    "RefSwitch", "RefNextIteration", "While", "StatelessWhile", "If", "StatelessIf", "Case",
    "TensorArrayV3", "TensorArrayGatherV3", "TensorArrayScatterV3", "TensorArrayReadV3",
    "TensorArrayWriteV3", "TensorArraySizeV3",
})
NETWORK_START_OPS = frozenset({"Conv2D", "DepthwiseConv2dNative", "_FusedConv2D", "FusedDepthwiseConv2dNative"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
NETWORK_OUTPUT_PREFIX = "detect_network_output_"


class SplitError(ModelError):
    """The graph has no part a network runtime can take on its own; `str()` says why in one line."""


@dataclasses.dataclass(frozen=True)
class Split:
    """The three parts of a detector graph, named by their boundary tensors (`node:index`).

    `network_input` is the first convolution's input; `network_outputs` what the network hands to
    the post-processing (and any graph output it computes itself); `handoff` the pre-processing
    tensors the post-processing reads directly (the model's own input among them when it does).
    """

    network_input: str
    network_outputs: tuple[str, ...]
    handoff: tuple[str, ...]
    postprocess_ops: tuple[str, ...]  # the ops the post-processing starts with, e.g. ("CombinedNonMaxSuppression",)
    network_nodes: int

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Split:
        """split.json's `split` as parsed: what `to_json` wrote, else ValueError."""
        if not isinstance(data, Mapping) or not isinstance(data.get("network_nodes"), int):
            raise ValueError("not a split as a run writes it")

        def names(key: str) -> tuple[str, ...]:
            value = data[key]
            if not isinstance(value, list | tuple):  # a list once written as JSON
                raise ValueError(f"the split's {key} is not a list")
            return tuple(str(name) for name in value)

        return cls(network_input=str(data["network_input"]), network_outputs=names("network_outputs"),
                   handoff=names("handoff"), postprocess_ops=names("postprocess_ops"),
                   network_nodes=int(data["network_nodes"]))


def node_of(reference: str) -> str:
    """The node a graph input refers to: `^node`, `node`, `node:1` -> `node`."""
    return reference.lstrip("^").split(":")[0]


def tensor_of(reference: str) -> str:
    """A data input as a tensor name: `node` -> `node:0`, `node:1` as it is."""
    return reference if ":" in reference else f"{reference}:0"


class _Index:
    """A graph's nodes, their consumers and a topological order of what `outputs` need."""

    def __init__(self, graph_def: Any, outputs: Iterable[str]) -> None:
        self.nodes = {node.name: node for node in graph_def.node}
        self.consumers: dict[str, list[str]] = defaultdict(list)
        for node in graph_def.node:
            for ref in node.input:
                self.consumers[node_of(ref)].append(node.name)
        missing = [name for name in outputs if node_of(name) not in self.nodes]
        if missing:
            raise SplitError(f"the graph has no {', '.join(missing)}")
        self.order = self._topological([node_of(name) for name in outputs])
        self.needed = set(self.order)

    def _topological(self, roots: list[str]) -> list[str]:
        order: list[str] = []
        seen: set[str] = set()
        for root in roots:
            stack: list[tuple[str, bool]] = [(root, False)]
            while stack:
                name, done = stack.pop()
                if done:
                    order.append(name)
                    continue
                if name in seen:
                    continue
                seen.add(name)
                stack.append((name, True))
                stack.extend((node_of(ref), False) for ref in self.nodes[name].input if node_of(ref) not in seen)
        return order

    def ancestors(self, names: Iterable[str], stop: frozenset[str] = frozenset(), data_only: bool = False) -> set[str]:
        found: set[str] = set()
        stack = list(names)
        while stack:
            name = stack.pop()
            if name in found:
                continue
            found.add(name)
            if name not in stop:
                stack.extend(node_of(ref) for ref in self.nodes[name].input if not (data_only and ref.startswith("^")))
        return found

    def descendants(self, names: Iterable[str]) -> set[str]:
        """`names` and every needed node reachable from them (data and control edges)."""
        found: set[str] = set()
        stack = [n for n in names if n in self.needed]
        while stack:
            name = stack.pop()
            if name in found:
                continue
            found.add(name)
            stack.extend(c for c in self.consumers[name] if c in self.needed)
        return found


@dataclasses.dataclass(frozen=True)
class _Parts:
    index: _Index
    network_input: str
    before: frozenset[str]  # runs before the network (TensorFlow): its input and all that does not depend on it
    network: frozenset[str]
    after: frozenset[str]  # post-processing (TensorFlow)
    anchors: tuple[str, ...]


def _parts(graph_def: Any, model_input: str, outputs: Sequence[str]) -> _Parts:
    index = _Index(graph_def, [model_input, *outputs])
    nodes = index.nodes
    if any(nodes[name].op in CALL_OPS for name in index.needed):
        raise SplitError("the graph still calls functions: flatten it first")
    start = next((name for name in index.order if nodes[name].op in NETWORK_START_OPS), None)
    if start is None:
        raise SplitError("no convolution between the input and the outputs: not a convolutional detector")
    network_input = tensor_of(nodes[start].input[0])
    begin = node_of(network_input)
    if node_of(model_input) not in index.ancestors([begin]):
        raise SplitError(f"the first convolution ({start}) does not read the model's input")
    body = index.descendants([begin]) - {begin}
    anchors = tuple(name for name in index.order if name in body
                    and (nodes[name].op in POSTPROCESS_OPS or nodes[name].op in CONTROL_FLOW_OPS))
    after = index.descendants(anchors)
    # A TF1 while loop is one piece: its nodes share the loop's name scope (`.../while/`). A loop
    # touched by the network runs after it, whole; any other loop runs before it, whole.
    for scope in sorted({name.rsplit("/", 1)[0] + "/" for name in index.needed if nodes[name].op in ("Enter", "RefEnter")}):
        members = {name for name in index.needed if name.startswith(scope)}
        if members & body:
            after |= index.descendants(members)
    network = body - after
    from_input = index.descendants([node_of(model_input)])
    for name in sorted(network):
        for ref in nodes[name].input:
            source = node_of(ref)
            if source in network or ref.startswith("^"):
                continue
            if (source == begin and tensor_of(ref) != network_input) or (source != begin and source in from_input):
                raise SplitError(f"the network reads more than its first convolution's input ({name} reads "
                                 f"{ref}): no single place to cut it")
    before = index.needed - network - after
    return _Parts(index, network_input, frozenset(before), frozenset(network), frozenset(after), anchors)


def find_split(graph_def: Any, model_input: str, outputs: Sequence[str]) -> Split:
    """Split a frozen, flat detector graph (see the module docstring); `SplitError` when it has no network."""
    parts = _parts(graph_def, model_input, outputs)
    index = parts.index
    network_outputs = _read_by(index, set(parts.network), set(parts.after), outputs)
    # Constants the post-processing reads are its own; what depends on the images is handed over.
    from_input = index.descendants([node_of(model_input)])
    handoff = _read_by(index, set(parts.before) & from_input, set(parts.after), outputs)
    if not network_outputs:
        raise SplitError("the outputs do not depend on the network")
    return Split(network_input=parts.network_input, network_outputs=tuple(network_outputs), handoff=tuple(handoff),
                 postprocess_ops=tuple(sorted({index.nodes[name].op for name in parts.anchors})),
                 network_nodes=len(parts.network))


def _read_by(index: _Index, producers: set[str], readers: set[str], outputs: Sequence[str]) -> list[str]:
    """Tensors made in `producers` and read (data edges) in `readers` or as graph outputs, in graph order."""
    read: set[str] = {tensor_of(name) for name in outputs if node_of(name) in producers}
    for name in readers:
        for ref in index.nodes[name].input:
            if not ref.startswith("^") and node_of(ref) in producers:
                read.add(tensor_of(ref))
    position = {name: i for i, name in enumerate(index.order)}
    return sorted(read, key=lambda t: (position[node_of(t)], t))


def network_graph(graph_def: Any, split: Split, input_dtype: int, output_dtypes: Sequence[int]) -> Any:
    """The network part as a GraphDef of its own: a placeholder for `network_input`, an Identity
    `detect_network_output_<k>` per network output (dtypes as `DataType` enum values)."""
    from tensorflow.core.framework import graph_pb2

    index = _Index(graph_def, split.network_outputs)
    start = node_of(split.network_input)
    # Data edges only: OpenVINO needs no ordering, and a control edge back to an assertion in the
    # pre-processing would pull the model's own input into the network.
    keep = index.ancestors([node_of(t) for t in split.network_outputs], stop=frozenset({start}), data_only=True)
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    placeholder = "detect_network_input"
    placeholder_node = out.node.add(name=placeholder, op="Placeholder")
    placeholder_node.attr["dtype"].type = input_dtype
    for node in graph_def.node:
        if node.name not in keep or node.name == start:
            continue
        copy = out.node.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for ref in node.input:
            if ref.startswith("^"):
                continue
            copy.input.append(placeholder if not ref.startswith("^") and tensor_of(ref) == split.network_input else ref)
    for k, (tensor, dtype) in enumerate(zip(split.network_outputs, output_dtypes, strict=True)):
        identity = out.node.add(name=f"{NETWORK_OUTPUT_PREFIX}{k}", op="Identity")
        identity.input.append(placeholder if tensor == split.network_input else tensor)
        identity.attr["T"].type = dtype
    return out


def without_control_edges_from(graph_def: Any, model_input: str, outputs: Sequence[str]) -> Any:
    """A copy whose post-processing no longer waits on the other two parts through control edges.

    The post-processing is run fed with the network's outputs and the hand-off tensors; a control
    edge back into the network or the pre-processing (an assertion on the padded size, say) would
    make TensorFlow run them again just to honour the ordering. Edges inside the post-processing
    (those of its while loops) stay.
    """
    from tensorflow.core.framework import graph_pb2

    parts = _parts(graph_def, model_input, outputs)
    earlier = parts.before | parts.network
    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    for node in out.node:
        if node.name in earlier:
            continue
        kept = [ref for ref in node.input if not (ref.startswith("^") and node_of(ref) in earlier)]
        if len(kept) != len(node.input):
            del node.input[:]
            node.input.extend(kept)
    return out


def flatten(graph_def: Any) -> Any:
    """A copy with every `PartitionedCall`/`StatefulPartitionedCall` replaced by the function's body.

    TF2 wraps imported TF1 graphs (our converted person model) in such a call, which freezing
    keeps; splitting needs the nodes themselves. Nested calls are inlined too.
    """
    from tensorflow.core.framework import graph_pb2

    out = graph_pb2.GraphDef()
    out.CopyFrom(graph_def)
    functions = {f.signature.name: f for f in graph_def.library.function}
    for _ in range(64):  # nesting depth; real graphs have one or two levels
        calls = [node for node in out.node if node.op in CALL_OPS]
        if not calls:
            del out.library.function[:]
            return out
        for call in calls:
            _inline(out, call.name, functions)
    raise SplitError("function calls nested more than 64 deep")


def _inline(graph_def: Any, call_name: str, functions: dict[str, Any]) -> None:  # name -> FunctionDef (protobuf)
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

    call = next(node for node in graph_def.node if node.name == call_name)
    name = call.attr["f"].func.name
    if name not in functions:
        raise SplitError(f"{call_name} calls {name}, which the graph does not define")
    fdef = functions[name]
    body, flat_names = function_def_to_graph_def(fdef)
    prefix = f"{call_name}/"
    args = [arg.name for arg in fdef.signature.input_arg]
    data_inputs = [ref for ref in call.input if not ref.startswith("^")]
    control_inputs = [ref for ref in call.input if ref.startswith("^")]
    if len(data_inputs) != len(args):
        raise SplitError(f"{call_name} passes {len(data_inputs)} inputs to {name}, which takes {len(args)}")

    def renamed(ref: str) -> str:
        return ("^" + prefix + ref[1:]) if ref.startswith("^") else prefix + ref

    new_nodes = []
    for node in body.node:
        copy = type(node)()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        if node.op == "Placeholder" and node.name in args:
            dtype = node.attr["dtype"].type
            copy.op = "Identity"
            copy.attr.clear()
            copy.attr["T"].type = dtype
            del copy.input[:]
            copy.input.append(data_inputs[args.index(node.name)])
            copy.input.extend(control_inputs)
        else:
            del copy.input[:]
            copy.input.extend(renamed(ref) for ref in node.input)
        new_nodes.append(copy)
    results = [prefix + flat_names[fdef.ret[arg.name]] for arg in fdef.signature.output_arg]
    for node in graph_def.node:
        if node.name == call_name:
            continue
        if any(node_of(ref) == call_name for ref in node.input):
            rewired = []
            for ref in node.input:
                if node_of(ref) != call_name:
                    rewired.append(ref)
                elif ref.startswith("^"):
                    rewired.extend(f"^{node_of(r)}" for r in results)
                else:
                    rewired.append(results[int(ref.split(":")[1]) if ":" in ref else 0])
            del node.input[:]
            node.input.extend(rewired)
    kept = [node for node in graph_def.node if node.name != call_name]
    del graph_def.node[:]
    graph_def.node.extend(kept + new_nodes)
