"""What a runtime is, and what a network backend beside TensorFlow provides (the registry's entries).

A `Runtime` runs a uint8 batch to the four contract outputs and describes itself for the manifest.
A `Backend` is a runtime for the network on a CPU (OpenVINO today): its name (`--runtime`'s
choice, the manifest's `model.runtime.name`, its cache folder), its name for people, its installed
version, and `load`, which converts the network (or reads it from the cache), compiles it and
returns the `Runtime` whose `run` infers. A second backend is one module with a `BACKEND` and one
line in `detect.model.runtimes.BACKENDS`; the CLI's choices, `auto`, `detect model` and the run
summary read the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np


class Runtime(Protocol):
    name: str

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]: ...

    def describe(self) -> dict[str, object]: ...  # JSON: the manifest's model.runtime


class Backend(Protocol):
    @property
    def name(self) -> str: ...  # "openvino": --runtime's choice, the manifest's model.runtime.name

    @property
    def title(self) -> str: ...  # "OpenVINO": in messages and the run summary

    @property
    def help(self) -> str: ...  # its entry in --runtime's help: what it runs, how fast

    def version(self) -> str | None: ...  # the installed version; None when it is not installed

    def load(self, loaded: Any, model_path: Path, checksum: str, *, batch_size: int, warm: np.ndarray) -> Runtime:
        """The network of `loaded` (what `formats.load` returned) converted or read from the cache,
        compiled and run once on `warm`. Raises DependencyError when the backend is not installed,
        ModelError when it cannot take the model, OSError when its cache cannot be written."""
        ...
