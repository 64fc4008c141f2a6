"""Import TensorFlow quietly, once, only when a stage needs it (never at `import detect`)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from types import ModuleType

# DETECT_TF_VERBOSE=1 in the environment, or `set_verbose(True)` (the CLI's --debug): TensorFlow
# then speaks as loudly as it likes.
VERBOSE_ENV = "DETECT_TF_VERBOSE"
_verbose = False


def set_verbose(verbose: bool) -> None:
    """Let TensorFlow's own start-up and log lines through (call before it is first imported)."""
    global _verbose
    _verbose = verbose


def import_tensorflow() -> ModuleType:
    """TensorFlow with its start-up chatter (CUDA probing, oneDNN notes) kept off stderr.

    TensorFlow 2.21 writes those lines through absl before any log level applies, so the only way
    to keep a user's terminal clean is to point file descriptor 2 elsewhere while it imports and
    probes its devices. Set DETECT_TF_VERBOSE=1 (or pass --debug) to see them.
    """
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    verbose = _verbose or os.environ.get(VERBOSE_ENV) == "1"
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with (contextlib.nullcontext() if verbose else _stderr_silenced()):
        import tensorflow as tf

        tf.config.list_physical_devices()
    if not verbose:
        tf.get_logger().setLevel("ERROR")
    return tf


def native_stderr_quiet() -> contextlib.AbstractContextManager[None]:
    """File descriptor 2 pointed elsewhere while native code that logs there runs (OpenVINO's
    frontends print `E0000 ... text_format.cc` lines for a file they cannot parse), unless verbose."""
    verbose = _verbose or os.environ.get(VERBOSE_ENV) == "1"
    return contextlib.nullcontext() if verbose else _fd_silenced(2)  # where C++ writes, whatever sys.stderr is


@contextlib.contextmanager
def _stderr_silenced() -> Iterator[None]:
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture, notebooks: nothing to hide
        yield
        return
    with _fd_silenced(fd):
        yield


@contextlib.contextmanager
def _fd_silenced(fd: int) -> Iterator[None]:
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()
    try:
        saved = os.dup(fd)
    except OSError:  # no such descriptor (a daemon that closed it): nothing to hide
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
        yield
    finally:
        _flush_c_streams()  # what native code left in C's stdio buffers goes to /dev/null too
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)


def tf_error_text(err: BaseException) -> str:
    """TensorFlow's error message without its `{{function_node ...}}` and `[Op:...]` wrapping."""
    text = (getattr(err, "message", "") or str(err)).strip()
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:\w+\]\s*$", "", text)
    lines = text.splitlines()
    return lines[0].strip() if lines else type(err).__name__


def _flush_c_streams() -> None:
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None).fflush(None)
