"""TF.js graph models (the format of the npm packages that ship detectors) turned into our contract.

`graph` reads any TF.js graph model into a TensorFlow GraphDef; each detector family has a small
head module (`centernet`, `nanodet`, `ssdlite`) that says how its network is fed and how its outputs are decoded,
and the facts about it (description, upstream, license, the defaults measured for it). A new
TF.js detector is a new head, not a new reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from detect.core.errors import ModelError
from detect.model.contract import ModelOutputs
from detect.model.tfjs import centernet, nanodet, ssdlite
from detect.model.tfjs.heads import ANY_INPUT_SIZE, Head

HEADS: dict[str, Head] = {head.name: head for head in (centernet.HEAD, nanodet.HEAD, ssdlite.HEAD)}


def head_for(json_path: Path) -> Head:
    """The head whose network input and outputs this model.json declares (no TensorFlow needed)."""
    from detect.model.tfjs.graph import load_model_json, node_name

    model = load_model_json(Path(json_path))
    topology = model.get("modelTopology")
    nodes = topology.get("node") if isinstance(topology, dict) else None
    if not isinstance(nodes, list):
        raise ModelError(f"model {json_path} is not a TF.js graph model (no modelTopology.node)")
    names = {str(n.get("name")) for n in nodes if isinstance(n, dict)}
    for head in HEADS.values():
        if head.input in names and all(node_name(name) in names for name in head.outputs):
            return head
    raise ModelError(f"model {json_path}: a TF.js graph model of no known detector family (known: "
                     f"{', '.join(HEADS)}; their input and output node names are not in this graph)")


class Loaded:
    """A TF.js detector built in memory, called like a SavedModel object: uint8 batch -> our outputs."""

    def __init__(self, module: Any) -> None:
        self.module = module  # keeps the graph's variables and functions alive

    def __call__(self, images: Any) -> ModelOutputs:
        return dict(self.module.serve(images))


def load(json_path: Path) -> Loaded:
    """The TF.js detector, built around its head, meeting our contract (nothing written to disk)."""
    from detect.core.tf_env import import_tensorflow
    from detect.model.tfjs.graph import read_graph_model

    tf = import_tensorflow()
    head = head_for(json_path)
    return Loaded(head.build(tf, read_graph_model(json_path), Path(json_path)))


__all__ = ["ANY_INPUT_SIZE", "HEADS", "Head", "Loaded", "head_for", "load"]
