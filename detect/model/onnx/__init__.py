"""ONNX detectors, the format PyTorch models are exported to, run by OpenVINO (no TensorFlow form).

`graph` reads the file's inputs, outputs, metadata and opsets (the `onnx` package); `layouts`
recognises which of three output layouts it has and how its image input is fed; `decode` maps its
outputs to our contract; `runtime` runs it on OpenVINO. The model's sidecar (`detect_model.json`
beside the file) may name the layout and the input's feeding in its `onnx` object.
"""

from __future__ import annotations

from pathlib import Path

from detect.core.errors import ModelError
from detect.model.onnx.graph import ONNX_SUFFIX, OnnxGraph, read_graph
from detect.model.onnx.layouts import LAYOUT_TITLES, LAYOUTS, OnnxSpec, recognise
from detect.model.sidecar import SIDECAR, ModelSidecar, read_sidecar


def describe(path: Path, sidecar: ModelSidecar | None = None) -> OnnxSpec:
    """The ONNX file at `path` read and recognised, with the `onnx` object of `sidecar` (default: the
    one beside it); a one-line `ModelError` naming the file for anything it cannot run."""
    path = Path(path)
    sidecar = sidecar if sidecar is not None else read_sidecar(path.parent)
    options = sidecar.facts.get("onnx") if sidecar is not None else None
    if options is not None and not isinstance(options, dict):
        raise ModelError(f"model {path}: {SIDECAR} has an onnx entry that is not an object")
    return recognise(read_graph(path), options)


__all__ = ["LAYOUTS", "LAYOUT_TITLES", "ONNX_SUFFIX", "OnnxGraph", "OnnxSpec", "describe", "read_graph"]
