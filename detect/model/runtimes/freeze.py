"""A loaded detector as one flat, frozen GraphDef: what other runtimes read, and what is split.

Every format `detect.model.formats` loads ends up here the same way: a TF2 SavedModel's
`serving_default` signature or a TF.js head's `serve` function has its variables folded into
constants (`convert_variables_to_constants_v2`, TensorFlow's own freezing) and its function calls
inlined; a TF1 frozen graph already is one.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from detect.core.tf_env import tf_error_text
from detect.model.contract import REQUIRED_OUTPUTS
from detect.model.runtimes.split import SplitError, flatten


@dataclasses.dataclass(frozen=True)
class FrozenModel:
    """A flat GraphDef and the tensor names of its uint8 image input and of the four outputs."""

    graph_def: Any
    model_input: str
    outputs: dict[str, str]  # contract key -> tensor name


def freeze(loaded: Any) -> FrozenModel:
    """Freeze what `formats.load` returned; `SplitError` (one line) when it cannot be frozen."""
    from detect.model.formats import FrozenGraph
    from detect.model.tfjs import Loaded

    if isinstance(loaded, FrozenGraph):
        return FrozenModel(flatten(loaded.graph_def), f"{loaded.input_name}:0",
                           {key: f"{key}:0" for key in REQUIRED_OUTPUTS})
    if isinstance(loaded, Loaded):
        function = loaded.module.serve.get_concrete_function()
    elif "serving_default" in (getattr(loaded, "signatures", None) or {}):
        function = loaded.signatures["serving_default"]
    else:
        call = loaded.__call__ if callable(loaded) else None
        concrete = getattr(call, "get_concrete_function", None)
        if concrete is None or not getattr(call, "input_signature", None):
            raise SplitError("the model has neither a serving signature nor a call with an input signature")
        function = concrete()
    return _frozen_function(function)


def _frozen_function(function: Any) -> FrozenModel:
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    try:
        frozen = convert_variables_to_constants_v2(function)
    except Exception as err:  # TF raises many types for graphs it cannot freeze
        raise SplitError(f"TensorFlow cannot freeze it: {tf_error_text(err)}") from None
    named = function.structured_outputs
    if not isinstance(named, dict) or any(key not in named for key in REQUIRED_OUTPUTS):
        raise SplitError("its function does not return the four detection outputs by name")
    # Freezing keeps the outputs in the flattened order of the original dict: its sorted keys.
    outputs = dict(zip(sorted(named), frozen.outputs, strict=True))
    inputs = [t for t in frozen.inputs if t.dtype.name == "uint8"]
    if len(inputs) != 1:
        raise SplitError(f"its frozen function takes {len(frozen.inputs)} inputs, expected one uint8 image batch")
    graph_def = flatten(frozen.graph.as_graph_def())
    return FrozenModel(graph_def, inputs[0].name, {key: outputs[key].name for key in REQUIRED_OUTPUTS})
