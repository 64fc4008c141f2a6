"""An ONNX detector run by OpenVINO: the whole graph, read from the file, fed and decoded here.

OpenVINO reads ONNX itself (`Core.read_model`), so nothing is converted or cached: the graph is
compiled once per input shape in this process (a dynamic graph gets the shape of each batch: one per
camera size; a fixed one its own). A graph whose batch is any number gets the detector's batches (the
last one padded); a batch-1 graph (Ultralytics' default export, torchvision's unbatched `[3, H, W]`)
gets one image a request, two requests in flight on two streams, as `runtimes/openvino.py` overlaps
its halves. `INFERENCE_PRECISION_HINT` is f32 for the reason given there (bf16 moves boxes).

Preprocessing is the layout's (`layouts.NetworkInput`): the image resized with bilinear
interpolation on pixel centres and no antialiasing (the geometry of OpenCV's `INTER_LINEAR`, which
Ultralytics uses), rounded back to bytes as OpenCV's resize returns them, letterboxed on grey 114 or
stretched, then scaled, normalized, channel-flipped and transposed as the network wants.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from detect.core.errors import ModelError
from detect.core.tf_env import import_tensorflow, native_stderr_quiet
from detect.model.onnx import decode
from detect.model.onnx.layouts import LETTERBOX_GREY, OnnxSpec
from detect.model.runtimes.openvino import DEVICE, NAME, STREAMS, import_openvino, openvino_message, version


class OnnxRuntime:
    """`run(images)` -> the four contract outputs; `describe()` for the manifest. Raises `ModelError`
    (one line naming the file) when OpenVINO cannot read, compile or run the graph."""

    name = NAME

    def __init__(self, spec: OnnxSpec, path: Path, *, batch_size: int, precision: str = "f32") -> None:
        self.spec = spec
        self.path = Path(path)
        self.batch_size = batch_size
        self.precision = precision
        self._tf = import_tensorflow()
        self._core = import_openvino().Core()
        self._version = version() or "unknown"
        found = spec.facts.get("opsets")
        opsets = ", ".join(f"{domain} {number}" for domain, number in found.items()) if isinstance(found, dict) else "?"
        with native_stderr_quiet():
            try:
                self._model = self._core.read_model(str(self.path))
            except Exception as err:  # OpenVINO's RuntimeError / OpConversionFailure, pages long
                raise ModelError(f"model {self.path}: OpenVINO {self._version} cannot read this ONNX graph (opsets "
                                 f"{opsets}): {openvino_message(err)}") from None
        self.one_by_one = spec.input.batch == 1
        self.streams = STREAMS if self.one_by_one and batch_size > 1 and (os.cpu_count() or 1) >= STREAMS else 1
        self._compiled: dict[tuple[int, ...], list[Any]] = {}

    def describe(self) -> dict[str, object]:
        return {"name": NAME, "version": self._version, "device": DEVICE, "format": "ONNX",
                "layout": self.spec.layout, "precision": self.precision,
                "hint": "THROUGHPUT" if self.streams > 1 else "LATENCY", "streams": self.streams,
                "network_batch": "one image a request" if self.one_by_one else "the detector's batch"}

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]:
        """uint8 `[n, H, W, 3]` -> detection_boxes, _scores, _classes, num_detections for those n images."""
        count = len(images)
        height, width = images.shape[1:3]
        place = decode.placement(self.spec, width, height)
        network_input = self._prepare(images, place)
        try:
            if self.one_by_one:
                results = self._one_by_one(network_input, place)
            else:
                padded = _pad(network_input, self.batch_size)
                results = [decode.to_contract(self.spec, self._infer([padded], place)[0], place, count)]
        except ModelError:
            raise
        except Exception as err:
            raise ModelError(f"model {self.path}: OpenVINO cannot run this ONNX graph: {openvino_message(err)}") from None
        merged = _merge(results)
        if len(merged["detection_scores"]) < count or len(merged["num_detections"]) < count:
            raise ModelError(f"model {self.path}: the ONNX graph gave {len(merged['detection_scores'])} rows of outputs "
                             f"for {count} images")
        return merged

    def _one_by_one(self, network_input: np.ndarray, place: decode.Placement) -> list[dict[str, np.ndarray]]:
        """Each image its own request, `streams` of them in flight."""
        batches = [network_input[i] if self.spec.input.order == "CHW" else network_input[i:i + 1]
                   for i in range(len(network_input))]
        results = []
        for start in range(0, len(batches), self.streams):
            for outputs in self._infer(batches[start:start + self.streams], place):
                results.append(decode.to_contract(self.spec, outputs, place, 1))
        return results

    def _infer(self, batches: list[np.ndarray], place: decode.Placement) -> list[dict[str, np.ndarray]]:
        """Run each batch on its own request (started together), the outputs by name."""
        requests = self._requests(batches[0].shape)
        for request, batch in zip(requests, batches):
            feeds = {self.spec.input.name: batch}
            if self.spec.input.sizes_input:
                rows = 1 if self.spec.input.order == "CHW" else len(batch)
                feeds[self.spec.input.sizes_input] = np.tile(np.array([[place.net_width, place.net_height]], np.int64),
                                                             (rows, 1))
            request.start_async(feeds)
        found = []
        for request, _ in zip(requests, batches):
            request.wait()
            found.append({name: np.array(request.get_tensor(name).data) for name in self.spec.outputs})
        return found

    def _requests(self, shape: tuple[int, ...]) -> list[Any]:
        if shape not in self._compiled:
            model = self._model.clone()
            openvino = import_openvino()
            if any(d.is_dynamic for d in model.input(self.spec.input.name).get_partial_shape()):
                shapes = {self.spec.input.name: openvino.PartialShape(list(shape))}
                if self.spec.input.sizes_input:
                    shapes[self.spec.input.sizes_input] = openvino.PartialShape(
                        [1 if self.spec.input.order == "CHW" else shape[0], 2])
                model.reshape(shapes)
            config = {"INFERENCE_PRECISION_HINT": self.precision,
                      "PERFORMANCE_HINT": "THROUGHPUT" if self.streams > 1 else "LATENCY",
                      **({"NUM_STREAMS": self.streams} if self.streams > 1 else {})}
            with native_stderr_quiet():
                try:
                    compiled = self._core.compile_model(model, DEVICE, config)
                except Exception as err:
                    raise ModelError(f"model {self.path}: OpenVINO cannot compile this ONNX graph for input "
                                     f"{list(shape)}: {openvino_message(err)}") from None
            self._compiled[shape] = [compiled.create_infer_request() for _ in range(self.streams)]
        return self._compiled[shape]

    def _prepare(self, images: np.ndarray, place: decode.Placement) -> np.ndarray:
        """uint8 NHWC images -> the network's input (resized, placed, scaled, ordered)."""
        net = self.spec.input
        pixels = images
        if not place.identity:
            resized = self._tf.image.resize(images, (place.inner_height, place.inner_width), method="bilinear")
            pixels = np.clip(np.round(resized.numpy()), 0, 255).astype(np.uint8)
            if (place.inner_width, place.inner_height) != (place.net_width, place.net_height):
                canvas = np.full((len(images), place.net_height, place.net_width, 3), LETTERBOX_GREY, np.uint8)
                canvas[:, place.top:place.top + place.inner_height, place.left:place.left + place.inner_width] = pixels
                pixels = canvas
        if net.bgr:
            pixels = pixels[..., ::-1]
        values: np.ndarray = pixels
        if net.dtype != "uint8":
            values = pixels.astype(np.float32) * np.float32(net.scale)
            if net.mean is not None:
                values = values - np.asarray(net.mean, np.float32)
            if net.std is not None:
                values = values / np.asarray(net.std, np.float32)
            values = values.astype(net.dtype)
        if net.order in ("NCHW", "CHW"):
            values = values.transpose(0, 3, 1, 2)
        return np.ascontiguousarray(values)


def _pad(batch: np.ndarray, size: int) -> np.ndarray:
    """`batch` with its last image repeated up to `size` rows (one compiled shape for every batch)."""
    if len(batch) >= size:
        return batch
    return np.concatenate([batch, np.repeat(batch[-1:], size - len(batch), axis=0)])


def _merge(results: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Contract outputs of several requests as one batch, rows padded to the longest (scores 0 past each count)."""
    rows = max(r["detection_scores"].shape[1] for r in results)

    def padded(array: np.ndarray) -> np.ndarray:
        missing = rows - array.shape[1]
        return array if not missing else np.pad(array, [(0, 0), (0, missing)] + [(0, 0)] * (array.ndim - 2))

    return {key: np.concatenate([padded(r[key]) if key != "num_detections" else r[key] for r in results])
            for key in results[0]}
