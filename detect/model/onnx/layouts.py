"""Which ONNX detector layout a graph is, how its image input is fed and what its classes are.

Three layouts, told apart by the graph's output names and metadata (or named by the sidecar's
`onnx.layout`), each decided with where the decision came from (`detect model` prints it):
- `tf_od_api`: the TF Object Detection API's `detection_boxes` (normalized `[ymin, xmin, ymax,
  xmax]`), `detection_scores`, `detection_classes` (COCO ids), `num_detections`: tf2onnx's export
  of a zoo model or of our SavedModels. Our contract as it is.
- `boxes_labels_scores`: torchvision, RT-DETR and D-FINE exports. Boxes are xyxy in the pixels of
  the network input (torchvision maps them back to the image it was given; RT-DETR and D-FINE to the
  `orig_target_sizes` input, which gets the network input's own width and height); `onnx.boxes:
  normalized` in the sidecar says otherwise. Labels are COCO category ids (1-90), as those models
  trained on COCO give them, unless the metadata's `names` or the sidecar's `onnx.labels: coco80`
  (0-79) say otherwise.
- `ultralytics`: a YOLOv8/11 detect head, one output `[1, 4 + C, N]`: cx, cy, w, h in input pixels,
  then C class scores, no NMS (ours runs). Its metadata (`names`, a Python dict literal; `imgsz`,
  `stride`, `task`) is what marks it. Fed as Ultralytics feeds it: letterboxed to `imgsz` on grey
  114, RGB, / 255, NCHW float32.

The image input's layout (NHWC, NCHW, or torchvision's unbatched CHW) and size come from the graph;
a float input is RGB / 255 (the convention of every exporter above), which the sidecar's
`onnx.input` can change (`scale`, `mean`, `std`, `channels`, `order`, `fit`). Class names map to
COCO ids by name; a name that is not COCO's is refused in one line (the class map and the tables key
classes by COCO id).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping
from pathlib import Path

from detect.core.errors import ModelError
from detect.model.coco_classes import COCO80_IDS, UnknownClassError, parse_classes
from detect.model.defaults import ModelDefaults
from detect.model.onnx.graph import MAX_SIDE, OnnxGraph, TensorInfo
from detect.model.sidecar import SIDECAR

TF_OD_API = "tf_od_api"
BOXES_LABELS_SCORES = "boxes_labels_scores"
ULTRALYTICS = "ultralytics"
LAYOUTS = (TF_OD_API, BOXES_LABELS_SCORES, ULTRALYTICS)
TF_OUTPUTS = ("detection_boxes", "detection_scores", "detection_classes", "num_detections")
BLS_OUTPUTS = ("boxes", "labels", "scores")
SIZES_INPUT = "orig_target_sizes"  # RT-DETR's and D-FINE's second input: (width, height) per image
LETTERBOX_GREY = 114  # Ultralytics' padding
MIN_SIDE = 16
# Each layout's own defaults, under what a sidecar says: the whole frame goes in (the model, or the
# letterbox here, fits it to the network); Ultralytics' predict defaults (conf 0.25, iou 0.7) for
# its raw heads, which have no NMS; the tool's threshold for the others, whose NMS is inside.
LAYOUT_DEFAULTS = {
    TF_OD_API: ModelDefaults(input_size="native"),
    BOXES_LABELS_SCORES: ModelDefaults(input_size="native"),
    ULTRALYTICS: ModelDefaults(input_size="native", threshold=0.25, nms_iou=0.7),
}
LAYOUT_TITLES = {
    TF_OD_API: "TF Object Detection API outputs (detection_boxes, detection_scores, detection_classes, num_detections)",
    BOXES_LABELS_SCORES: "boxes / labels / scores (torchvision, RT-DETR, D-FINE)",
    ULTRALYTICS: "Ultralytics YOLOv8/11 detect head (cx, cy, w, h + class scores; NMS by detect)",
}
KNOWN = ("it reads the TF Object Detection API's detection_boxes/detection_scores/detection_classes/num_detections, "
         "boxes/labels/scores, or an Ultralytics YOLOv8/11 detect head with its metadata (docs/models.md)")


@dataclasses.dataclass(frozen=True)
class NetworkInput:
    """How an image reaches the network's input, and where each fact came from (`source`)."""

    name: str
    dtype: str  # "uint8", "float32" or "float16"
    order: str  # "NHWC", "NCHW" or "CHW" (torchvision: one image, no batch axis)
    batch: int | None  # 1, or None: any
    height: int | None  # None: any (the image's own)
    width: int | None
    scale: float  # the pixel values 0-255 times this (1 or 1/255)
    mean: tuple[float, ...] | None  # subtracted after the scale, per channel in the network's order
    std: tuple[float, ...] | None
    bgr: bool
    fit: str  # "letterbox" (grey `LETTERBOX_GREY`) or "stretch": an image of another size to a fixed one
    source: str
    sizes_input: str | None = None  # fed the network input's (width, height), int64 `[B, 2]`

    def describe(self) -> str:
        """`images float32 [1, 3, 640, 640] NCHW, RGB / 255, letterboxed on grey 114 (from ...)`."""
        dims = {"NHWC": ["B", "H", "W", "3"], "NCHW": ["B", "3", "H", "W"], "CHW": ["3", "H", "W"]}[self.order]
        values = {"B": self.batch, "H": self.height, "W": self.width, "3": 3}
        shape = ", ".join("?" if values[d] is None else str(values[d]) for d in dims)
        scale = "0-255" if self.scale == 1 else f"/ {round(1 / self.scale, 3):g}"
        norm = "".join(f", {word} {list(value)}" for word, value in (("minus mean", self.mean), ("over std", self.std))
                       if value is not None)
        size = (f", {'letterboxed on grey ' + str(LETTERBOX_GREY) if self.fit == 'letterbox' else 'stretched'} to "
                f"{self.width}x{self.height}" if self.height and self.width else ", at the image's own size")
        sizes = f"; {self.sizes_input} gets the input's width and height" if self.sizes_input else ""
        return (f"{self.name} {self.dtype} [{shape}] {self.order}, {'BGR' if self.bgr else 'RGB'} {scale}{norm}"
                f"{size}{sizes} ({self.source})")


@dataclasses.dataclass(frozen=True)
class OnnxSpec:
    """A recognised ONNX detector: its layout, input, the outputs it decodes and its classes."""

    layout: str
    input: NetworkInput
    outputs: tuple[str, ...]  # decoded in this order (see each layout)
    class_ids: tuple[int, ...] | None  # model class index -> COCO id; None: the model outputs COCO ids
    classes: tuple[int, ...] | None  # the COCO ids it can output; None: the COCO label map
    classes_from: str
    normalized: bool  # boxes normalized to the network input (else its pixels)
    boxes_from: str
    defaults: ModelDefaults
    facts: Mapping[str, object]  # for the sidecar's source / the manifest: producer, opsets, metadata


def recognise(graph: OnnxGraph, options: Mapping[str, object] | None = None) -> OnnxSpec:
    """The layout of `graph` (`options`: the sidecar's `onnx` object), or a one-line `ModelError`."""
    path = graph.path
    opts = dict(options or {})
    layout = opts.get("layout")
    names = {o.name for o in graph.outputs}
    if layout is None:
        if all(n in names for n in TF_OUTPUTS):
            layout = TF_OD_API
        elif all(n in names for n in BLS_OUTPUTS):
            layout = BOXES_LABELS_SCORES
        elif len(graph.outputs) == 1 and "names" in graph.metadata and "imgsz" in graph.metadata:
            layout = ULTRALYTICS
        else:
            raise ModelError(f"model {path}: an ONNX output layout detect does not know (outputs: "
                             f"{graph.outputs_text()}); {KNOWN}")
    if layout not in LAYOUTS:
        raise ModelError(f"model {path}: {SIDECAR} onnx.layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    facts: dict[str, object] = {"format": "ONNX", "layout": layout, "producer": graph.producer,
                                "opsets": dict(graph.opsets),
                                **{k: graph.metadata[k] for k in ("description", "author", "version", "license", "task",
                                                                  "stride", "imgsz") if k in graph.metadata}}
    if layout == TF_OD_API:
        spec = _tf_od_api(graph, opts)
    elif layout == BOXES_LABELS_SCORES:
        spec = _boxes_labels_scores(graph, opts)
    else:
        spec = _ultralytics(graph, opts)
    return dataclasses.replace(spec, facts={**facts, "classes_from": spec.classes_from, "boxes_from": spec.boxes_from,
                                            "input": spec.input.describe()})


def _tf_od_api(graph: OnnxGraph, opts: dict[str, object]) -> OnnxSpec:
    image = _network_input(graph, opts, fit="stretch", source="from the graph")
    return OnnxSpec(TF_OD_API, image, TF_OUTPUTS, None, None, "COCO ids (1-90) as the TF Object Detection API gives them",
                    True, "normalized [ymin, xmin, ymax, xmax], as the TF Object Detection API gives them",
                    LAYOUT_DEFAULTS[TF_OD_API], {})


def _boxes_labels_scores(graph: OnnxGraph, opts: dict[str, object]) -> OnnxSpec:
    path = graph.path
    for name, ranks in (("boxes", (2, 3)), ("labels", (1, 2)), ("scores", (1, 2))):
        out = graph.output(name)
        if out.shape is not None and len(out.shape) not in ranks:
            raise ModelError(f"model {path}: output {out} has rank {len(out.shape)}; expected "
                             f"{' or '.join(map(str, ranks))} for boxes/labels/scores")
    boxes = graph.output("boxes")
    if boxes.shape is not None and boxes.shape[-1] not in (None, 4):
        raise ModelError(f"model {path}: output {boxes}: expected 4 coordinates a box (xyxy)")
    image = _network_input(graph, opts, fit="stretch", source="from the graph")
    said = opts.get("boxes")
    if said not in (None, "pixels", "normalized"):
        raise ModelError(f"model {path}: {SIDECAR} onnx.boxes {said!r}: expected 'pixels' or 'normalized'")
    boxes_from = (f"xyxy {said}, as {SIDECAR} says" if said else
                  "xyxy in network-input pixels, as torchvision, RT-DETR and D-FINE export them "
                  f"({SIDECAR} onnx.boxes: normalized says otherwise)")
    class_ids, classes, classes_from = _label_space(graph, opts)
    return OnnxSpec(BOXES_LABELS_SCORES, image, BLS_OUTPUTS, class_ids, classes, classes_from, said == "normalized",
                    boxes_from, LAYOUT_DEFAULTS[BOXES_LABELS_SCORES], {})


def _label_space(graph: OnnxGraph, opts: dict[str, object]) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, str]:
    """boxes/labels/scores: names (sidecar, then metadata), else COCO 80 indices or COCO ids."""
    named = _names(graph, opts)
    if named is not None:
        return named
    labels = opts.get("labels")
    if labels == "coco80":
        return COCO80_IDS, COCO80_IDS, f"COCO's 80 classes numbered 0-79, as {SIDECAR} says"
    if labels not in (None, "coco91"):
        raise ModelError(f"model {graph.path}: {SIDECAR} onnx.labels {labels!r}: expected 'coco80' or 'coco91'")
    return None, None, ("COCO category ids (1-90), as torchvision, RT-DETR and D-FINE trained on COCO give them "
                        f"({SIDECAR} onnx.labels: coco80 for 0-79)")


def _ultralytics(graph: OnnxGraph, opts: dict[str, object]) -> OnnxSpec:
    path, meta = graph.path, graph.metadata
    task = meta.get("task", "detect")
    if task != "detect":
        raise ModelError(f"model {path}: an Ultralytics {task!r} model; detect reads Ultralytics detect heads only")
    if len(graph.outputs) != 1:
        raise ModelError(f"model {path}: an Ultralytics detect head has one output, this graph has "
                         f"{graph.outputs_text()}")
    named = _names(graph, opts)
    if named is None:
        raise ModelError(f"model {path}: an Ultralytics head without class names (metadata 'names' or {SIDECAR} "
                         f"onnx.names)")
    class_ids, classes, classes_from = named
    assert class_ids is not None
    out = graph.outputs[0]
    rows = 4 + len(class_ids)
    if out.shape is None or len(out.shape) != 3 or out.shape[1] not in (None, rows) or out.shape[0] not in (None, 1):
        raise ModelError(f"model {path}: output {out}; an Ultralytics detect head with {len(class_ids)} classes gives "
                         f"[1, {rows}, N] (4 box rows + one a class)")
    imgsz = _imgsz(graph)
    image = _network_input(graph, opts, fit="letterbox", source="Ultralytics' preprocessing, from the metadata",
                           size=imgsz)
    if image.order != "NCHW" or image.batch not in (None, 1):
        raise ModelError(f"model {path}: input {image.name} is {image.order} with batch {image.batch}; an Ultralytics "
                         f"export is NCHW with batch 1 (or any)")
    return OnnxSpec(ULTRALYTICS, image, (out.name,), class_ids, classes, classes_from, False,
                    "cx, cy, w, h in network-input pixels (Ultralytics), mapped back through the letterbox",
                    LAYOUT_DEFAULTS[ULTRALYTICS], {})


def _imgsz(graph: OnnxGraph) -> tuple[int, int] | None:
    """Ultralytics' `imgsz` metadata, `[640, 640]` (height, width), or one number."""
    text = graph.metadata.get("imgsz")
    if text is None:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    sides = [value, value] if isinstance(value, int) else value
    if not isinstance(sides, (list, tuple)) or len(sides) != 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) and MIN_SIDE <= s <= MAX_SIDE for s in sides):
        raise ModelError(f"model {graph.path}: metadata imgsz {text[:60]!r}: expected [height, width] of "
                         f"{MIN_SIDE}-{MAX_SIDE} pixels")
    return sides[0], sides[1]


def _names(graph: OnnxGraph, opts: dict[str, object]) -> tuple[tuple[int, ...], tuple[int, ...], str] | None:
    """Class index -> COCO id from `onnx.names` in the sidecar, else the metadata's `names`; None if neither."""
    if "names" in opts:
        raw: object = opts["names"]
        where = f"{SIDECAR} onnx.names"
    elif "names" in graph.metadata:
        text = graph.metadata["names"]
        where = "the ONNX metadata's names"
        try:
            raw = ast.literal_eval(text)  # a Python dict literal; literal_eval runs no code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ModelError(f"model {graph.path}: metadata names {text[:60]!r}... is not a dict or list of class "
                             f"names") from None
    else:
        return None
    if isinstance(raw, list):
        raw = dict(enumerate(raw))
    if not isinstance(raw, dict) or not raw or not all(isinstance(v, str) for v in raw.values()):
        raise ModelError(f"model {graph.path}: {where} is not a dict or list of class names")
    try:
        keys = sorted(int(k) for k in raw)
    except (TypeError, ValueError):
        keys = []
    if keys != list(range(len(raw))):
        raise ModelError(f"model {graph.path}: {where} must number its classes 0-{len(raw) - 1}")
    by_index = {int(k): v for k, v in raw.items()}
    ids, unknown = [], []
    for index in keys:
        try:
            found = parse_classes([by_index[index]])
        except UnknownClassError:
            found = None
        if not found or by_index[index].strip().isdigit():
            unknown.append(repr(by_index[index]))
        else:
            ids.append(next(iter(found)))
    if unknown:
        raise ModelError(f"model {graph.path}: class name{'s' if len(unknown) > 1 else ''} {', '.join(unknown[:5])}"
                         f"{' ...' if len(unknown) > 5 else ''} in {where} {'are' if len(unknown) > 1 else 'is'} not "
                         f"COCO's; detect keys classes by COCO name (rename them in {SIDECAR} onnx.names)")
    return tuple(ids), tuple(sorted(set(ids))), f"{len(ids)} names from {where}"


def _network_input(graph: OnnxGraph, opts: dict[str, object], *, fit: str, source: str,
                   size: tuple[int, int] | None = None) -> NetworkInput:
    """The image input: the graph's one rank-3/4 input with 3 channels, how to feed it, where that came from."""
    path = graph.path
    said = opts.get("input") or {}
    if not isinstance(said, dict):
        raise ModelError(f"model {path}: {SIDECAR} onnx.input is not an object")
    images = [i for i in graph.inputs if i.name != SIZES_INPUT]
    extra = [i for i in graph.inputs if i.name == SIZES_INPUT]
    if len(images) != 1:
        raise ModelError(f"model {path}: inputs {'; '.join(str(i) for i in graph.inputs)}: detect feeds one image "
                         f"input (and {SIZES_INPUT}, as RT-DETR and D-FINE take it)")
    image = images[0]
    order = str(said.get("order") or _order(image))
    if order not in ("NHWC", "NCHW", "CHW") or image.shape is None or len(image.shape) != len(order):
        raise ModelError(f"model {path}: input {image}: cannot tell where its 3 channels are (an image input is "
                         f"[B, H, W, 3], [B, 3, H, W] or [3, H, W]; {SIDECAR} onnx.input.order names it)")
    dims = dict(zip(order, image.shape))
    if dims.get("C") not in (None, 3):
        raise ModelError(f"model {path}: input {image} has {dims['C']} channels; expected 3")
    batch = 1 if order == "CHW" else dims["N"]
    if batch not in (None, 1):
        raise ModelError(f"model {path}: input {image} has its batch fixed at {batch}; detect runs models whose "
                         f"batch is 1 or any")
    height, width = dims["H"], dims["W"]
    if size is not None:
        if (height, width) not in ((None, None), size):
            raise ModelError(f"model {path}: input {image} is not the metadata's imgsz {list(size)}")
        height, width = size
    for side in (height, width):
        if side is not None and not MIN_SIDE <= side <= MAX_SIDE:
            raise ModelError(f"model {path}: input {image}: sides of {MIN_SIDE}-{MAX_SIDE} pixels expected (an "
                             f"absurd shape)")
    if image.dtype not in ("uint8", "float32", "float16"):
        raise ModelError(f"model {path}: input {image}: expected uint8, float32 or float16 pixels")
    scale = _scale(said.get("scale", 1.0 if image.dtype == "uint8" else 1 / 255), path)
    mean, std = _triple(said.get("mean"), "mean", path), _triple(said.get("std"), "std", path)
    channels = said.get("channels", "RGB")
    fit = str(said.get("fit", fit))
    if channels not in ("RGB", "BGR") or fit not in ("letterbox", "stretch"):
        raise ModelError(f"model {path}: {SIDECAR} onnx.input: channels RGB or BGR, fit letterbox or stretch expected")
    sizes = extra[0].name if extra else None
    if said:
        source = f"{source}; {', '.join(sorted(said))} from {SIDECAR}"
    elif image.dtype != "uint8" and source == "from the graph":
        source = f"{source}; RGB / 255, the convention of the exporters detect knows ({SIDECAR} onnx.input changes it)"
    return NetworkInput(image.name, image.dtype, order, batch, height, width, scale, mean, std, channels == "BGR", fit,
                        source, sizes)


def _order(image: TensorInfo) -> str:
    """NHWC, NCHW or CHW from where the graph's 3 channels sit (a uint8 input with unknown channels: NHWC,
    as tf2onnx writes the TF Object Detection API's `[?, ?, ?, 3]`)."""
    shape = image.shape or ()
    if len(shape) == 4 and shape[3] == 3 and shape[1] != 3:
        return "NHWC"
    if len(shape) == 4 and shape[1] == 3 and shape[3] != 3:
        return "NCHW"
    if len(shape) == 3 and shape[0] == 3:
        return "CHW"
    return "unknown"


def _triple(value: object, name: str, path: Path) -> tuple[float, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 3 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) or (name == "std" and 0 in value):
        raise ModelError(f"model {path}: {SIDECAR} onnx.input.{name} must be three numbers"
                         f"{' (none zero)' if name == 'std' else ''}")
    return tuple(float(v) for v in value)


def _scale(value: object, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ModelError(f"model {path}: {SIDECAR} onnx.input.scale must be a number in (0, 1] (1/255 for 0-1 "
                         f"pixels), got {value!r}")
    return float(value)
