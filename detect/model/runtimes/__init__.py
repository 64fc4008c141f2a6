"""Runtimes: what executes a loaded detector. Each loads once, runs a batch, describes itself.

- `tensorflow`: the whole model in TensorFlow; GPUs, `tf.distribute`, every model.
- `openvino`: the network in OpenVINO on the CPU, pre- and post-processing in TensorFlow
  (`openvino.py`): 1.1-1.5x TensorFlow's speed for the detector alone on a CPU (README, Performance).

`--runtime auto` (the default) picks OpenVINO on a machine without a GPU when the model converts,
TensorFlow otherwise; a model that does not convert runs on TensorFlow with one line saying why.
The choice is made once per run and recorded in the manifest; the engine never asks which.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from detect.core.errors import DependencyError, ModelError, UsageError
from detect.model.runtimes.cache import CachedNetwork, cache_folder, cached_networks

RUNTIMES = ("auto", "tensorflow", "openvino")
RUNTIME_ENV = "DETECT_RUNTIME"  # the default of --runtime (and of `Detector(runtime=None)`)


def default_runtime() -> str:
    """`$DETECT_RUNTIME` when set, else "auto"."""
    value = os.environ.get(RUNTIME_ENV, "").strip() or "auto"
    if value not in RUNTIMES:
        raise UsageError(f"{RUNTIME_ENV}={value!r}: expected one of {', '.join(RUNTIMES)}")
    return value


class Runtime(Protocol):
    name: str

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]: ...

    def describe(self) -> dict[str, object]: ...  # JSON: the manifest's model.runtime


_STUB = "a stub has no network to speed up"


def _keeps_tensorflow(requested: str, kind: str) -> bool:
    """TensorFlow on any machine: asked for, or `auto` with a stub (`_STUB`)."""
    return requested == "tensorflow" or (requested == "auto" and kind == "stub")


@dataclasses.dataclass(frozen=True)
class Chosen:
    """The runtime a detector runs on, and one line for the person when `auto` could not take the fastest."""

    runtime: Runtime
    note: str | None = None


def choose(requested: str, tensorflow: Runtime, *, loaded: Any, model_path: Path, kind: str, warm: np.ndarray,
           mirrored: bool, has_gpu: bool, checksum: Callable[[], str]) -> Chosen:
    """The runtime for `requested` (one of `RUNTIMES`, checked by the caller); see the module docstring.

    `warm` is a batch of the detector's size: OpenVINO converts (or reads from its cache) and
    compiles the network on it, so that a model it cannot take is known before any frame is read.
    """
    if _keeps_tensorflow(requested, kind) or (requested == "auto" and (mirrored or has_gpu)):
        return Chosen(tensorflow)  # GPUs and tf.distribute are TensorFlow's
    if requested == "openvino" and mirrored:
        raise UsageError("--runtime openvino runs one CPU process; --strategy mirrored needs --runtime tensorflow")
    from detect.model.runtimes import openvino

    try:
        runtime = openvino.OpenVinoRuntime(loaded, model_path, checksum(), batch_size=len(warm), warm=warm)
    except DependencyError as err:
        if requested == "openvino":
            raise
        return Chosen(tensorflow, f"note: {err}; running on TensorFlow")
    except (ModelError, OSError) as err:
        reason = str(err) if isinstance(err, ModelError) else f"its converted form cannot be cached: {err}"
        if requested == "openvino":
            raise ModelError(f"model {model_path} cannot run on OpenVINO: {reason} (--runtime tensorflow runs it)") from None
        return Chosen(tensorflow, f"note: model {model_path} cannot run on OpenVINO ({reason}); running on TensorFlow")
    return Chosen(runtime)


@dataclasses.dataclass(frozen=True)
class CpuPlan:
    """What a run on a CPU would execute a model on, known without loading it (`detect model`).

    OpenVINO still has to convert the network on the first run; a model it cannot take then
    falls back to TensorFlow with one line, which only that run can tell.
    """

    runtime: str  # "openvino" or "tensorflow"
    why: str | None = None  # why TensorFlow
    version: str | None = None  # OpenVINO's
    cache: Path | None = None  # where its converted networks for this model version are kept
    converted: tuple[CachedNetwork, ...] = ()  # already there: the next run with these shapes reads them


def cpu_plan(model_path: Path, kind: str, checksum: Callable[[], str]) -> CpuPlan:
    """`--runtime` as `$DETECT_RUNTIME` (else auto) would pick on a machine without a GPU."""
    from detect.model.runtimes import openvino

    requested = default_runtime()
    if _keeps_tensorflow(requested, kind):
        return CpuPlan("tensorflow", f"{RUNTIME_ENV}=tensorflow" if requested == "tensorflow" else _STUB)
    version = openvino.version()
    if version is None:
        return CpuPlan("tensorflow", "OpenVINO is not installed")
    folder = cache_folder(model_path, openvino.NAME, version, checksum())
    return CpuPlan("openvino", version=version, cache=folder, converted=tuple(cached_networks(folder)))
