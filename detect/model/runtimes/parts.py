"""What every network backend leaves to TensorFlow: the frozen graph, its split, and the pre- and
post-processing around the network, made once per model version and kept in the backend's cache.

A backend (`openvino.py`) converts `network_graph(...)` and runs it between `pre` and `post`; the
freezing (`freeze.py`), the cut (`split.py`) and this cache of both are the same for any backend.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from detect.core.files import JSON_LIMIT, parse_json
from detect.core.tf_env import tf_error_text
from detect.model.contract import REQUIRED_OUTPUTS
from detect.model.runtimes.cache import ModelCache
from detect.model.runtimes.freeze import FrozenModel, freeze
from detect.model.runtimes.split import Split, SplitError, find_split, network_graph, without_control_edges_from

FROZEN, SPLIT = "frozen.pb", "split.json"  # in the cache folder
FROZEN_LIMIT = 2 << 30  # bytes: a GraphDef cannot be larger


@dataclasses.dataclass(frozen=True)
class SplitFile:
    """split.json: where the frozen graph splits, and the tensor names of its input and four outputs."""

    split: Split
    model_input: str
    outputs: dict[str, str]  # contract key -> tensor name

    def to_json(self) -> dict[str, object]:
        return {"split": self.split.to_json(), "model_input": self.model_input, "outputs": self.outputs}

    @classmethod
    def from_json(cls, data: object) -> SplitFile:
        """The file as parsed; anything else than what `to_json` writes raises (the cache is then emptied)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("outputs"), Mapping):
            raise ValueError("split.json is not the object a run writes")
        outputs = {str(key): str(value) for key, value in data["outputs"].items()}
        return cls(Split.from_json(data["split"]), str(data["model_input"]), outputs)


@dataclasses.dataclass(frozen=True)
class TensorFlowParts:
    """The frozen model, its split, and the parts around the network as TensorFlow functions of one
    imported graph: `pre` maps the model input to (network input, *handoff), `post` maps
    (*handoff, *network outputs) to the four contract outputs."""

    frozen: FrozenModel
    split: Split
    pre: Any  # TensorFlow's pruned functions: no type information
    post: Any
    graph: Any  # the imported graph (its tensors' dtypes)

    def network_graph(self, input_dtype: Any) -> Any:
        """The network alone as a GraphDef, its input of `input_dtype` (a `tf.DType`)."""
        dtypes = [self.graph.get_tensor_by_name(t).dtype.as_datatype_enum for t in self.split.network_outputs]
        return network_graph(self.frozen.graph_def, self.split, input_dtype.as_datatype_enum, dtypes)


def cached(cache: ModelCache) -> bool:
    """Whether the cache holds a frozen graph and its split (checked: `ModelCache.verify`)."""
    return cache.has(FROZEN, SPLIT)


def tensorflow_parts(tf: Any, cache: ModelCache, loaded: Any) -> TensorFlowParts:
    """The parts of `loaded` (what `formats.load` returned), read from the cache when it has them,
    else frozen, split and written there. Under `cache.locked()`; a failure reading them is the
    caller's to heal (it empties the cache)."""
    frozen, split = _read(tf, cache) if cached(cache) else _make(cache, loaded)
    return _imported(tf, frozen, split)


def _make(cache: ModelCache, loaded: Any) -> tuple[FrozenModel, Split]:
    frozen = freeze(loaded)
    split = find_split(frozen.graph_def, frozen.model_input, [frozen.outputs[k] for k in REQUIRED_OUTPUTS])
    cache.write(FROZEN, frozen.graph_def.SerializeToString())
    facts = SplitFile(split, frozen.model_input, frozen.outputs)
    cache.write(SPLIT, json.dumps(facts.to_json(), indent=1).encode())
    return frozen, split


def _read(tf: Any, cache: ModelCache) -> tuple[FrozenModel, Split]:
    """The frozen graph and its split as a run wrote them."""
    facts = SplitFile.from_json(parse_json(cache.read(SPLIT, limit=JSON_LIMIT), str(cache.folder / SPLIT)))
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(cache.read(FROZEN, limit=FROZEN_LIMIT))
    return FrozenModel(graph_def, facts.model_input, facts.outputs), facts.split


def _imported(tf: Any, frozen: FrozenModel, split: Split) -> TensorFlowParts:
    """The pre-processing and the post-processing as TF functions of the one imported graph."""
    graph_def = without_control_edges_from(frozen.graph_def, frozen.model_input,
                                          [frozen.outputs[k] for k in REQUIRED_OUTPUTS])

    def imported() -> None:
        tf.compat.v1.import_graph_def(graph_def, name="")

    try:
        wrapped = tf.compat.v1.wrap_function(imported, [])
        graph = wrapped.graph
        tensor = graph.get_tensor_by_name
        pre = wrapped.prune(feeds=[tensor(frozen.model_input)],
                            fetches=[tensor(t) for t in (split.network_input, *split.handoff)])
        post = wrapped.prune(feeds=[tensor(t) for t in (*split.handoff, *split.network_outputs)],
                             fetches=[tensor(frozen.outputs[k]) for k in REQUIRED_OUTPUTS])
    except Exception as err:  # a split TF cannot prune (it would be our bug, said in one line)
        raise SplitError(f"TensorFlow cannot run the parts around the network: {tf_error_text(err)}") from None
    return TensorFlowParts(frozen, split, pre, post, graph)
