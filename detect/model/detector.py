"""The detector: a TF Object Detection API SavedModel as a callable that returns `Detections`.

Load and validate once, warm up once, then `detector(images, sizes)` -> one `Detections` per image.
Batch-1 models (zoo exports) are called once per image; dynamic-batch models get real batches.
What executes the model is a runtime (`detect.model.runtimes`): TensorFlow, or OpenVINO for the
network on a CPU; `runtime="auto"` picks. With `strategy="mirrored"` (TensorFlow) each replica
(GPU, or CPU slice, see `detect.model.devices`) gets its share.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detect.core.errors import ModelError, UsageError
from detect.core.records import Detections
from detect.core.signals import deferred_interrupts
from detect.core.tf_env import import_tensorflow
from detect.model import contract, formats, runtimes
from detect.model.coco_classes import parse_classes
from detect.model.contract import ModelInfo
from detect.model.devices import mirrored_strategy, prepare_devices
from detect.model.nms import suppress
from detect.model.runtimes import RUNTIMES, Runtime
from detect.model.runtimes.tensorflow import NAME as TENSORFLOW
from detect.model.runtimes.tensorflow import TensorFlowRuntime

# models/measure_detector.py, benchmark model, 2 CPU cores, 2 runs: batch 1 was 78-124 ms/image,
# batches 4, 8, 16 all 45-104 ms/image within the machine's noise. 4 takes the batching gain at
# the lowest latency and memory (16 full frames are 118 MB); raise it on a GPU.
DEFAULT_BATCH_SIZE = 4
STRATEGIES = ("none", "mirrored")
_WARMUP_SIZE = (320, 320)  # (height, width) when the signature does not pin the input size


class Detector:
    """An SSD-style SavedModel loaded once; `__call__` maps a uint8 batch to `Detections`.

    `threshold` keeps boxes with `score >= threshold`; `classes` (COCO names or ids) keeps only
    those classes; `nms_iou` runs class-aware NMS at that IoU (None: the model's boxes as they are).
    `strategy="mirrored"` replicates the model with `tf.distribute.MirroredStrategy` over visible GPUs,
    or over `DETECT_LOGICAL_CPUS` CPU slices when there is no GPU.
    `runtime` is one of `runtimes.RUNTIMES`: "auto", "tensorflow" or a network backend ("openvino";
    `detect.model.runtimes.choose`; None: $DETECT_RUNTIME or auto); `runtime_note` is one line when
    auto fell back to TensorFlow, for the caller to show. An ONNX model runs on OpenVINO only
    (`detect.model.onnx`): `runtime="tensorflow"` and `strategy="mirrored"` are refused for it.
    """

    def __init__(
        self,
        model_dir: str | os.PathLike,
        *,
        threshold: float = 0.5,
        classes: Iterable[str | int] | None = None,
        strategy: str = "none",
        batch_size: int = DEFAULT_BATCH_SIZE,
        nms_iou: float | None = None,
        runtime: str | None = None,
    ) -> None:
        runtime = _checked_options(strategy, batch_size, threshold, nms_iou, runtime)
        path = Path(model_dir)
        source = formats.locate(path)
        self.threshold = float(threshold)
        self.class_ids = parse_classes(classes)
        self.nms_iou = nms_iou
        self.strategy_name = strategy
        self.runtime_requested = runtime
        self.source = source
        self._tf = import_tensorflow()  # TensorFlow loads with the first model, not at import
        if source.format == "onnx":
            self._open_onnx(source, path, runtime, strategy, batch_size)
        else:
            self._open_tensorflow(source, path, runtime, strategy, batch_size)

    def _open_tensorflow(self, source: formats.ModelSource, path: Path, runtime: str, strategy: str,
                         batch_size: int) -> None:
        """A TensorFlow model: loaded, its contract checked, warmed up, then the runtime chosen."""
        prepare_devices()
        self._strategy = mirrored_strategy() if strategy == "mirrored" else None
        self.num_replicas = self._strategy.num_replicas_in_sync if self._strategy else 1
        self._model = self._load(source)
        call_style, input_name, fixed_batch, keys = self._check_contract(path)
        self._per_replica = 1 if fixed_batch == 1 else max(1, math.ceil(batch_size / self.num_replicas))
        self.batch_size = self._per_replica * self.num_replicas
        signature = self._model.signatures["serving_default"] if call_style == "signature" else None
        tensorflow = TensorFlowRuntime(self._model, signature, input_name or contract.INPUT_NAMES[0],
                                       per_replica=self._per_replica, strategy=self._strategy)
        warm, keys = self._warm_up(tensorflow, keys, path)
        chosen = self._choose_runtime(runtime, tensorflow, source, path, warm)
        self.runtime: Runtime = chosen.runtime
        self.runtime_note = chosen.note
        self.info = ModelInfo(path=path, format=source.format, call_style=call_style, input_name=input_name,
                              batch_size=fixed_batch, input_height=self._height, input_width=self._width,
                              output_keys=keys, kind=source.kind, description=source.description,
                              classes=source.classes, origin=source.origin)

    def _open_onnx(self, source: formats.ModelSource, path: Path, runtime: str, strategy: str,
                   batch_size: int) -> None:
        """An ONNX model: OpenVINO runs the whole graph (`detect.model.onnx`); there is no TensorFlow form."""
        from detect.model import onnx
        from detect.model.onnx.runtime import OnnxRuntime

        if runtime == TENSORFLOW:
            raise UsageError(f"model {path} is ONNX, which runs on OpenVINO only: runtime tensorflow (--runtime or "
                             f"${runtimes.RUNTIME_ENV}) cannot run it; use --runtime auto or openvino")
        if strategy != "none":
            raise UsageError(f"model {path} is ONNX, which runs on OpenVINO in one CPU process: --strategy {strategy} "
                             f"is TensorFlow's")
        spec = onnx.describe(source.path)
        self._strategy, self.num_replicas = None, 1
        self._height = self._width = None  # any image: the runtime fits it to the network
        self.batch_size = self._per_replica = batch_size
        self.runtime = OnnxRuntime(spec, source.path, batch_size=batch_size)
        net = spec.input
        self.runtime.run(np.zeros((batch_size, net.height or _WARMUP_SIZE[0], net.width or _WARMUP_SIZE[1], 3), np.uint8))
        self.runtime_note = None
        self.info = ModelInfo(path=path, format=source.format, call_style="onnx", input_name=net.name,
                              batch_size=net.batch, input_height=None, input_width=None, output_keys=spec.outputs,
                              kind=source.kind, description=source.description, classes=source.classes,
                              origin=source.origin)

    def _load(self, source: formats.ModelSource) -> Any:  # a SavedModel object, or a frozen graph's function
        """The model, built under the distribution strategy's scope when there is one."""
        if self._strategy is None:
            return formats.load(source)
        with self._strategy.scope():
            return formats.load(source)

    def _choose_runtime(self, requested: str, tensorflow: TensorFlowRuntime, source: formats.ModelSource, path: Path,
                        warm: np.ndarray) -> runtimes.Chosen:
        """TensorFlow, or a network backend that takes the model (`runtimes.choose`), warmed up on one replica's batch."""
        return runtimes.choose(
            requested, tensorflow, loaded=self._model, model_path=path, kind=source.kind,
            warm=warm[: self._per_replica], mirrored=self._strategy is not None,
            has_gpu=bool(self._tf.config.list_physical_devices("GPU")), checksum=lambda: formats.checksum(source.path))

    def _check_contract(self, path: Path) -> tuple[contract.CallStyle, str | None, int | None, tuple[str, ...] | None]:
        """How the model is called and what it takes: call style, input name, fixed batch (1 or None),
        output keys (None until an object call shows them); the pinned input size is kept."""
        call_style, input_name, spec, keys = contract.inspect_callable(self._model, path)
        fixed_batch, self._height, self._width = contract.input_shape(spec, path)
        if fixed_batch not in (None, 1):
            raise ModelError(f"model {path}: input batch is fixed at {fixed_batch}, expected 1 or None")
        if keys is not None:
            contract.check_outputs(keys, path)
        return call_style, input_name, fixed_batch, keys

    def _warm_up(self, tensorflow: TensorFlowRuntime, keys: tuple[str, ...] | None,
                 path: Path) -> tuple[np.ndarray, tuple[str, ...]]:
        """One batch of zeros through TensorFlow (traces the function; an object call reveals its
        output keys, checked here); the batch, for the runtime to warm up on too."""
        warm = np.zeros((self.batch_size, self._height or _WARMUP_SIZE[0], self._width or _WARMUP_SIZE[1], 3), np.uint8)
        outs = tensorflow.call_raw(warm)
        return warm, keys if keys is not None else contract.check_outputs(outs[0].keys(), path)

    def __repr__(self) -> str:
        return (
            f"Detector({str(self.info.path)!r}, {self.info.kind}, batch_size={self.batch_size}, "
            f"runtime={self.runtime.name!r}, strategy={self.strategy_name!r}, replicas={self.num_replicas}, "
            f"nms_iou={self.nms_iou})"
        )

    def __call__(
        self, images: np.ndarray, sizes: Sequence[tuple[int, int]] | None = None
    ) -> list[Detections]:
        """Detect on a uint8 `[B, H, W, 3]` batch; one `Detections` per image, in order.

        `sizes[i]` is `(width, height)` of the original image i when `images` were resized for
        the model: boxes come back in original pixels. Defaults to the array's own width/height.
        """
        images = np.asarray(images)
        if images.ndim != 4 or images.shape[3] != 3 or images.dtype != np.uint8:
            raise ValueError(
                f"images must be uint8 [batch, height, width, 3], got {images.dtype} {images.shape}"
            )
        count, height, width = images.shape[:3]
        if self._height is not None and (height, width) != (self._height, self._width):
            raise ValueError(
                f"model {self.info.path} takes {self._width}x{self._height} images, "
                f"got {width}x{height}"
            )
        if sizes is None:
            sizes = [(width, height)] * count
        elif len(sizes) != count:
            raise ValueError(f"sizes must have {count} entries (one per image), got {len(sizes)}")
        results: list[Detections] = []
        for start in range(0, count, self.batch_size):
            chunk = images[start : start + self.batch_size]
            with deferred_interrupts():  # TensorFlow can swallow a Ctrl-C (`detect.core.signals`)
                outs = self.runtime.run(chunk)
            boxes, scores, classes, nums = (outs[key] for key in contract.REQUIRED_OUTPUTS)
            for i in range(len(chunk)):
                w, h = sizes[start + i]
                found = contract.to_detections(
                    boxes[i], scores[i], classes[i], nums[i], int(w), int(h),
                    threshold=self.threshold, class_ids=self.class_ids,
                )
                results.append(suppress(found, self.nms_iou))
        return results


def _checked_options(strategy: str, batch_size: int, threshold: float, nms_iou: float | None,
                     runtime: str | None) -> str:
    """The options refused with one line before anything loads; the runtime asked for (default resolved)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}: expected one of {STRATEGIES}")
    if batch_size < 1:
        raise UsageError(f"batch size must be >= 1, got {batch_size}")
    if not 0.0 <= threshold <= 1.0:
        raise UsageError(f"score threshold must be between 0 and 1, got {threshold}")
    runtime = runtime or runtimes.default_runtime()
    if runtime not in RUNTIMES:
        raise UsageError(f"unknown runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
    if nms_iou is not None and not 0.0 < nms_iou <= 1.0:
        raise UsageError(f"NMS IoU must be between 0 (excluded) and 1, got {nms_iou}")
    return runtime
