"""Runtimes: what executes a loaded detector. Each loads once, runs a batch, describes itself.

- `tensorflow`: the whole model in TensorFlow; GPUs, `tf.distribute`, every model.
- the network backends in `BACKENDS`, each the network on the CPU with TensorFlow's pre- and
  post-processing around it (`parts.py`): `openvino` (`openvino.py`), 1.1-1.5x TensorFlow's speed
  for the detector alone on a CPU (README, Performance). A new one is a module with a `BACKEND`
  (`backend.Backend`) and a line in `BACKENDS`.

`--runtime auto` (the default) picks the first backend that takes the model on a machine without a
GPU, TensorFlow otherwise; a model that does not convert runs on TensorFlow with one line saying why.
The choice is made once per run and recorded in the manifest; the engine never asks which.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from detect.core.errors import DependencyError, ModelError, UsageError
from detect.model.runtimes import openvino
from detect.model.runtimes.backend import Backend, Runtime
from detect.model.runtimes.cache import CachedNetwork, cache_folder, cached_networks
from detect.model.runtimes.tensorflow import NAME as TENSORFLOW
from detect.model.runtimes.tensorflow import TITLE as TENSORFLOW_TITLE

# The network backends, in the order `auto` tries them: one line each.
BACKENDS: tuple[Backend, ...] = (openvino.BACKEND,)
RUNTIMES = ("auto", TENSORFLOW, *(backend.name for backend in BACKENDS))
RUNTIME_ENV = "DETECT_RUNTIME"  # the default of --runtime (and of `Detector(runtime=None)`)


def title(name: str) -> str:
    """A runtime's name for people ("OpenVINO"); an unknown one (a newer run's) as it is."""
    titles = {TENSORFLOW: TENSORFLOW_TITLE, **{backend.name: backend.title for backend in BACKENDS}}
    return titles.get(name, name)


def backend_named(name: str) -> Backend:
    """The backend `--runtime NAME` asks for (one of `RUNTIMES` but auto and tensorflow)."""
    return next(backend for backend in BACKENDS if backend.name == name)


def default_runtime() -> str:
    """`$DETECT_RUNTIME` when set, else "auto"."""
    value = os.environ.get(RUNTIME_ENV, "").strip() or "auto"
    if value not in RUNTIMES:
        raise UsageError(f"{RUNTIME_ENV}={value!r}: expected one of {', '.join(RUNTIMES)}")
    return value


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

    `warm` is a batch of the detector's size: a backend converts (or reads from its cache) and
    compiles the network on it, so that a model it cannot take is known before any frame is read.
    """
    if _keeps_tensorflow(requested, kind) or (requested == "auto" and (mirrored or has_gpu)):
        return Chosen(tensorflow)  # GPUs and tf.distribute are TensorFlow's
    candidates = BACKENDS if requested == "auto" else (backend_named(requested),)
    if requested != "auto" and mirrored:
        raise UsageError(f"--runtime {requested} runs one CPU process; --strategy mirrored needs --runtime tensorflow")
    notes = []
    for backend in candidates:
        try:
            return Chosen(backend.load(loaded, model_path, checksum(), batch_size=len(warm), warm=warm))
        except DependencyError as err:
            if requested != "auto":
                raise
            notes.append(f"note: {err}; running on TensorFlow")
        except (ModelError, OSError) as err:
            reason = str(err) if isinstance(err, ModelError) else f"its converted form cannot be cached: {err}"
            if requested != "auto":
                raise ModelError(f"model {model_path} cannot run on {backend.title}: {reason} (--runtime tensorflow "
                                 f"runs it)") from None
            notes.append(f"note: model {model_path} cannot run on {backend.title} ({reason}); running on TensorFlow")
    return Chosen(tensorflow, notes[0] if notes else None)


@dataclasses.dataclass(frozen=True)
class CpuPlan:
    """What a run on a CPU would execute a model on, known without loading it (`detect model`).

    A backend still has to convert the network on the first run; a model it cannot take then
    falls back to TensorFlow with one line, which only that run can tell.
    """

    runtime: str  # a backend's name ("openvino") or "tensorflow"
    why: str | None = None  # why TensorFlow
    version: str | None = None  # the backend's
    cache: Path | None = None  # where its converted networks for this model version are kept
    converted: tuple[CachedNetwork, ...] = ()  # already there: the next run with these shapes reads them


def cpu_plan(model_path: Path, kind: str, checksum: Callable[[], str]) -> CpuPlan:
    """`--runtime` as `$DETECT_RUNTIME` (else auto) would pick on a machine without a GPU."""
    requested = default_runtime()
    if _keeps_tensorflow(requested, kind):
        return CpuPlan(TENSORFLOW, f"{RUNTIME_ENV}=tensorflow" if requested == "tensorflow" else _STUB)
    candidates = BACKENDS if requested == "auto" else (backend_named(requested),)
    for backend in candidates:
        version = backend.version()
        if version is not None:
            folder = cache_folder(model_path, backend.name, version, checksum())
            return CpuPlan(backend.name, version=version, cache=folder, converted=tuple(cached_networks(folder)))
    return CpuPlan(TENSORFLOW, f"{candidates[0].title} is not installed")


__all__ = ["BACKENDS", "RUNTIMES", "RUNTIME_ENV", "Backend", "Chosen", "CpuPlan", "Runtime", "backend_named",
           "choose", "cpu_plan", "default_runtime", "title"]
