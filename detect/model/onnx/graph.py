"""An ONNX file read for what `detect` needs to know before running it: its inputs, outputs,
metadata and opsets, each checked, with no weights kept and no runtime loaded.

Read with the `onnx` package (the format's own reader: a protobuf `ModelProto`), never executed:
OpenVINO runs the graph (`detect.model.onnx.runtime`). A file that does not parse as a model, or
parses as an empty one (protobuf accepts most short byte strings), is not ONNX; sides beyond what a
camera image or a detector can be, and channels other than 3, are refused with the shapes named.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from detect.core.errors import DependencyError, ModelError
from detect.core.files import UnreadableFileError, open_regular

ONNX_SUFFIX = ".onnx"
# A detector's ONNX is 5-300 MB; protobuf cannot hold more than 2 GB in one file (larger models keep
# their weights in external files, which this reader does not follow).
MAX_BYTES = 2**31 - 1
MAX_SIDE = 8192  # pixels: an input side beyond this is not a detector's (Waymo's frames are 1920 wide)
MAX_BATCH = 1024
MAX_ROWS = 10_000_000  # an output dimension: Ultralytics' 8400 anchors at 640, 134,400 at 2560
MAX_METADATA = 1 << 20  # characters of one metadata value (Ultralytics' `args` and `names` are a few KB)
DEFAULT_DOMAIN = "ai.onnx"

Dim = int | None  # None: dynamic (a symbolic or unset dimension)


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """One graph input or output: its name, element type (numpy's name) and shape (None: rank unknown)."""

    name: str
    dtype: str
    shape: tuple[Dim, ...] | None

    def shape_text(self) -> str:
        """`[1, 84, 8400]`, `?` for a dynamic dimension."""
        if self.shape is None:
            return "[unknown rank]"
        return "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"

    def __str__(self) -> str:
        return f"{self.name} {self.dtype} {self.shape_text()}"


@dataclasses.dataclass(frozen=True)
class OnnxGraph:
    """What an ONNX file declares: inputs (initializers left out), outputs, metadata, opsets, producer."""

    path: Path
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    metadata: Mapping[str, str]
    opsets: Mapping[str, int]  # domain ("ai.onnx" for the default one) -> version
    producer: str  # "tf2onnx 1.17.0", "pytorch 2.5.1", or ""

    def output(self, name: str) -> TensorInfo:
        return next(o for o in self.outputs if o.name == name)

    def outputs_text(self) -> str:
        """`output0 float32 [1, 84, 8400]; ...`: what a refusal names."""
        return "; ".join(str(o) for o in self.outputs) or "none"


def read_graph(path: Path) -> OnnxGraph:
    """`path` read and checked (`ModelError` in one line naming it); cached while the file is unchanged."""
    path = Path(path)
    try:
        fd = open_regular(path)
    except UnreadableFileError as err:
        raise ModelError(f"model {err}") from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_size > MAX_BYTES:
        raise ModelError(f"model {path} is {info.st_size:,} bytes; an ONNX file holds at most {MAX_BYTES:,} "
                         f"(weights in external data files are not read)")
    return _read(path, info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _read(path: Path, size: int, mtime_ns: int) -> OnnxGraph:
    onnx = import_onnx()
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as err:
        raise ModelError(f"model {path} is not an ONNX model ({_first(err) or 'not a ModelProto'})") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node or not model.opset_import:
        raise ModelError(f"model {path} is not an ONNX model (no graph, IR version or opset in it)")
    initializers = {t.name for t in model.graph.initializer}
    inputs = tuple(_tensor(onnx, v, path) for v in model.graph.input if v.name not in initializers)
    outputs = tuple(_tensor(onnx, v, path) for v in model.graph.output)
    if not inputs or not outputs:
        raise ModelError(f"model {path}: the ONNX graph has {len(inputs)} inputs and {len(outputs)} outputs; a "
                         f"detector has at least one of each")
    metadata = {}
    for prop in model.metadata_props:
        if len(prop.value) > MAX_METADATA:
            raise ModelError(f"model {path}: ONNX metadata {prop.key!r} holds {len(prop.value):,} characters, more "
                             f"than the {MAX_METADATA:,} read")
        metadata[prop.key] = prop.value
    opsets = {(o.domain or DEFAULT_DOMAIN): int(o.version) for o in model.opset_import}
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)
    return OnnxGraph(path, inputs, outputs, MappingProxyType(metadata), MappingProxyType(opsets), producer)


def import_onnx() -> Any:  # the onnx module
    """The `onnx` package (reads the file's metadata; OpenVINO runs it), or a one-line DependencyError."""
    try:
        import onnx
    except ImportError:
        raise DependencyError("reading an ONNX model needs the onnx package: pip install onnx==1.23.2") from None
    return onnx


def _tensor(onnx: Any, value: Any, path: Path) -> TensorInfo:  # value: onnx's ValueInfoProto
    tensor = value.type.tensor_type
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "undefined"
    except (KeyError, ValueError, TypeError):
        dtype = f"onnx type {tensor.elem_type}"
    shape: tuple[Dim, ...] | None = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim)
        bad = [d for d in shape if d is not None and not 1 <= d <= MAX_ROWS]
        if bad:
            found = TensorInfo(value.name, dtype, shape)
            raise ModelError(f"model {path}: {found} has a dimension of {bad[0]}; expected 1-{MAX_ROWS:,} "
                             f"(an absurd shape)")
    return TensorInfo(value.name, dtype, shape)


def _first(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0][:200] if lines else ""
