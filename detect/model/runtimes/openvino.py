"""OpenVINO runs the network; TensorFlow keeps the pre- and post-processing it wrote.

The detector graph is frozen and split, TensorFlow keeping the parts around the network
(`parts.py`, the same for any backend); the network part becomes an OpenVINO model with a static
input shape (`openvino.convert_model` reads the TF GraphDef itself), compiled for the CPU.
`INFERENCE_PRECISION_HINT` is f32: on CPUs with bf16 units OpenVINO's default is bf16, whose
rounding moves boxes on the real Waymo frame for every model (worst IoU against TensorFlow: person
0.91, CenterNet and the bench SSD 0: boxes lost or shifted), against the IoU >= 0.98 promised.

A batch is cut in two halves, each run on its own OpenVINO stream (THROUGHPUT hint, 2 streams):
half k's network runs while TensorFlow pre-processes half k+1 or post-processes half k-1, so the
two runtimes overlap instead of taking turns, and a core taken by a render process delays one
stream instead of stalling one request split over both cores. Measured on 2 cores against one
LATENCY request for the whole batch, time per image relative to TensorFlow's, median of 3
interleaved repeats of 200 images: CenterNet with default outputs 0.93 (one request: 1.03,
slower than TensorFlow), without outputs 0.92 (0.93); the SSD bench model 0.79 (0.82) and 0.70
(0.69). Batches that do not split evenly run as one LATENCY request. Each shape is converted once
(cached, see `cache.py`) and compiled once per process.

OpenVINO is imported only through `import_openvino`, which first switches off its usage telemetry
(`openvino_telemetry`: Google Analytics look-ups from every conversion, a client id and stats
written under `~/intel`, a sender thread a forked render process can inherit mid-send and hang
on). `detect` contacts no host the user did not name and writes nothing outside OUT and its cache.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from detect.core.errors import DependencyError, DetectError, ModelError
from detect.core.tf_env import import_tensorflow, native_stderr_quiet, tf_error_text
from detect.model.contract import REQUIRED_OUTPUTS
from detect.model.runtimes.cache import COMPILED, CachedNetwork, ModelCache, model_cache
from detect.model.runtimes.parts import cached, tensorflow_parts
from detect.model.runtimes.split import NETWORK_OUTPUT_PREFIX

NAME = "openvino"
TITLE = "OpenVINO"
PRECISIONS = ("f32", "bf16")
STREAMS = 2
DEVICE = "CPU"


def version() -> str | None:
    """The installed OpenVINO's version (e.g. "2026.4.1"), or None when it is not installed."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as package_version

        return package_version("openvino")
    except PackageNotFoundError:
        return None


TELEMETRY_PACKAGE = "openvino_telemetry"


def import_openvino() -> ModuleType:
    """OpenVINO with its telemetry off (`without_telemetry`): every detect process (the CLI's, a
    Ray actor, a spawned worker) loads OpenVINO through here, so each one switches it off itself."""
    without_telemetry()
    try:
        import openvino
    except ImportError:
        raise DependencyError("OpenVINO is not installed: pip install openvino==2026.4.1 (or use --runtime "
                              "tensorflow)") from None
    return openvino


def without_telemetry() -> None:
    """Make `openvino_telemetry` unimportable in this process, before OpenVINO is first imported.

    OpenVINO's converter imports it inside `try: ... except ImportError:` and then uses its own
    do-nothing stub (`openvino/tools/ovc/telemetry_utils.py` and `convert_impl.py` in 2026.4), and
    a `None` entry in `sys.modules` is Python's documented way to make an import raise ImportError:
    no private name of OpenVINO's is touched. A forked child inherits the entry; a spawned one or a
    Ray actor imports OpenVINO through `import_openvino` too. Rejected: the package's only switches
    are its consent file `~/intel/openvino_telemetry` (writing outside OUT) and the CI markers
    `CI=true` / `TF_BUILD` / `JENKINS_URL`, which would tell every library and child that this is a
    CI job (Hypothesis, for one, changes its settings then). tests/test_runtimes.py checks a real
    conversion under a fresh HOME: no socket look-up or connection, no `~/intel`.
    """
    sys.modules[TELEMETRY_PACKAGE] = None  # type: ignore[assignment]  # `import` now raises ImportError


class OpenVinoRuntime:
    """The detector's network in OpenVINO between TensorFlow pre- and post-processing.

    `loaded` is what `formats.load` returned, `checksum` the model files' SHA-256 (the cache key),
    `batch_size` the images per call; `warm`, a batch of that size, is run once before the
    constructor returns. Raises `SplitError` when the graph has no network to take out,
    `ModelError` when OpenVINO cannot convert or compile it or its network does not run
    (`CacheError` when the cache cannot be written).

    What the cache holds is used only as checked (`cache.ModelCache`); when it still does not
    load or run (say a manifest edited to match an edited file), the cache folder is emptied and
    the model converted again, once: a cache heals instead of stopping or slowing every run.
    """

    name = NAME

    def __init__(self, loaded: Any, model_path: Path, checksum: str, *, batch_size: int,
                 precision: str = "f32", warm: np.ndarray | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self._core = import_openvino().Core()
        self._ov_version = version() or "unknown"  # an OpenVINO without package metadata (a source build)
        self._tf = import_tensorflow()
        self.batch_size = batch_size
        self.precision = precision
        # Two streams, each half the batch, when the batch splits evenly (see the module docstring).
        self.parts = STREAMS if batch_size % STREAMS == 0 and (os.cpu_count() or 1) >= STREAMS else 1
        self.hint = "THROUGHPUT" if self.parts > 1 else "LATENCY"
        self.cache = ModelCache(model_cache(model_path, NAME, self._ov_version, checksum))
        self.folder = self.cache.folder
        self._from_cache = False  # whether what failed read anything from the cache
        with self.cache.locked():
            try:
                self._open(loaded, warm)
            except Exception as err:
                if not self._from_cache:
                    raise _model_error(err) from None
                self.cache.discard()  # what the cache held does not run: convert the model again
                try:
                    self._open(loaded, warm)
                except Exception as again:
                    raise _model_error(again) from None

    def _open(self, loaded: Any, warm: np.ndarray | None) -> None:
        self._compiled: dict[tuple[tuple[int, ...], str], Any] = {}
        self.reused = self._from_cache = cached(self.cache)
        self._parts = tensorflow_parts(self._tf, self.cache, loaded)
        self.split = self._parts.split
        if warm is not None:
            self.run(warm)

    def describe(self) -> dict[str, object]:
        return {"name": NAME, "version": self._ov_version, "device": DEVICE, "hint": self.hint, "streams": self.parts,
                "precision": self.precision, "cache": str(self.folder), "reused_cache": self.reused,
                "cache_discarded": list(self.cache.discarded), "network_nodes": self.split.network_nodes,
                "postprocess_in_tensorflow": list(self.split.postprocess_ops)}

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]:
        """uint8 `[n, H, W, 3]`, n <= batch size -> the four contract outputs for those n images."""
        count = len(images)
        if count < self.batch_size:
            images = np.concatenate([images, np.repeat(images[-1:], self.batch_size - count, axis=0)])
        tf = self._tf
        parts = self.parts
        size = self.batch_size // parts
        # Part k's network runs on its own stream while TensorFlow prepares part k+1 and then
        # post-processes part k: the two runtimes overlap instead of taking turns.
        pres, requests = [], []
        for k in range(parts):
            pre = self._parts.pre(tf.constant(images[k * size:(k + 1) * size]))
            network_input = pre[0].numpy()
            request = self._requests(network_input)[k]
            request.start_async([network_input])
            pres.append(pre)
            requests.append(request)
        posts = []
        outputs = len(self.split.network_outputs)
        for pre, request in zip(pres, requests, strict=True):
            request.wait()
            network_outputs = [tf.constant(request.get_output_tensor(i).data) for i in range(outputs)]
            posts.append(self._parts.post(*pre[1:], *network_outputs))
        return {key: np.concatenate([np.asarray(post[i]) for post in posts])[:count]
                for i, key in enumerate(REQUIRED_OUTPUTS)}

    def _requests(self, network_input: np.ndarray) -> list[Any]:
        key = (tuple(network_input.shape), network_input.dtype.str)
        if key not in self._compiled:
            compiled = self._compile(network_input)
            self._compiled[key] = [compiled.create_infer_request() for _ in range(self.parts)]
        return self._compiled[key]

    def _compile(self, network_input: np.ndarray) -> Any:
        """The network for this input shape: read from the cache, else converted and cached.

        OpenVINO's C++ logs (a frontend parsing a file it cannot read) go to fd 2: silenced here
        unless DETECT_TF_VERBOSE=1 or --debug, as TensorFlow's are."""
        xml = CachedNetwork(tuple(network_input.shape), network_input.dtype.name).file(self.folder)
        names = (xml.with_suffix(".bin").name, xml.name)  # weights first: an .xml always has its .bin
        with self.cache.locked(), native_stderr_quiet():
            if self.cache.has(*names):
                self._from_cache = True
                try:
                    return self._compiled_model(self._core.read_model(str(xml)))
                except Exception:  # checked, yet OpenVINO cannot take it: converted again below
                    self.cache.discard(names)
            self.reused = False
            try:
                model = self._convert(network_input)
                with self.cache.writing(names) as private:
                    import_openvino().save_model(model, str(private / xml.name), compress_to_fp16=False)
            except ModelError:
                raise
            except Exception as err:  # OpenVINO raises RuntimeError/OpConversionFailure with long texts
                raise ModelError(f"OpenVINO cannot convert the network: {openvino_message(err)}") from None
            return self._compiled_model(model)

    def _compiled_model(self, model: Any) -> Any:
        order = [self._output_index(model, k) for k in range(len(self.split.network_outputs))]
        if order != list(range(len(order))):
            raise ModelError(f"OpenVINO reordered the network's outputs ({order})")
        config = {"PERFORMANCE_HINT": self.hint, "INFERENCE_PRECISION_HINT": self.precision,
                  "CACHE_DIR": str(self.folder / COMPILED), **({"NUM_STREAMS": self.parts} if self.parts > 1 else {})}
        try:
            compiled = self._core.compile_model(model, DEVICE, config)
        except Exception as err:
            raise ModelError(f"OpenVINO cannot compile the network: {openvino_message(err)}") from None
        self.cache.add_new(COMPILED)  # the blobs it wrote
        return compiled

    def _convert(self, network_input: np.ndarray) -> Any:
        openvino = import_openvino()
        graph = self._parts.network_graph(self._tf.as_dtype(network_input.dtype))
        return openvino.convert_model(graph, input=[openvino.PartialShape(list(network_input.shape))])

    @staticmethod
    def _output_index(model: Any, k: int) -> int:
        name = f"{NETWORK_OUTPUT_PREFIX}{k}"
        for index, output in enumerate(model.outputs):
            if any(n == name or n.startswith(f"{name}:") for n in output.get_names()):
                return index
        return k  # OpenVINO gave the Identity's name to the tensor it forwards: outputs keep their order


def _model_error(err: Exception) -> DetectError:
    """Ours as it is; anything else (TensorFlow running the parts around the network) in one line."""
    if isinstance(err, DetectError):
        return err
    return ModelError(f"OpenVINO's network does not run between TensorFlow's parts: {type(err).__name__}: "
                      f"{tf_error_text(err)}")


def openvino_message(err: BaseException) -> str:
    """OpenVINO's first useful line: not `core.errors.first_line`, because its messages open with
    `Check '...' failed at src/...` and C++ trace lines before the reason, and can run for pages."""
    lines = [line.strip().removeprefix("-- ").strip() for line in str(err).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_OPENVINO_PREAMBLE)]
    return (useful or lines or [type(err).__name__])[0][:300]


# The lines before the reason in OpenVINO's messages: where it was raised, and the frontend's headers.
_OPENVINO_PREAMBLE = ("Check ", "Traceback", "File ", "Exception from ", "FrontEnd API failed",
                      "Model wasn't fully converted", "Summary:")


@dataclasses.dataclass(frozen=True)
class OpenVinoBackend:
    """OpenVINO as a network backend (`backend.Backend`): the registry's entry."""

    name: str = NAME
    title: str = TITLE
    help: str = "openvino (the network on the CPU, 1.1-1.5x TensorFlow's speed)"

    def version(self) -> str | None:
        return version()

    def load(self, loaded: Any, model_path: Path, checksum: str, *, batch_size: int,
             warm: np.ndarray) -> OpenVinoRuntime:
        return OpenVinoRuntime(loaded, model_path, checksum, batch_size=batch_size, warm=warm)


BACKEND = OpenVinoBackend()
