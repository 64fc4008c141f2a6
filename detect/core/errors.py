"""Exceptions the library raises; the CLI maps them to exit codes and one-line messages."""

from __future__ import annotations

from detect.core.tf_env import tf_error_text


class DetectError(Exception):
    """Base of every error `detect` raises on purpose. `str(err)` is a one-line user message."""


class InputError(DetectError):
    """A segment path, file or its content is unusable (missing, truncated, wrong component...)."""


class RecordError(InputError):
    """A value a results record holds (a manifest's settings) cannot be used: wrong type or out of bounds."""


class UnsupportedURIError(InputError):
    """A remote URI whose filesystem is not available in this installation."""


class ModelError(DetectError):
    """A detection model is missing, not a SavedModel, or does not meet the detector contract."""


class UsageError(DetectError):
    """Options that contradict each other or an output directory we refuse to touch."""


class OutputError(DetectError):
    """Results cannot be written (existing directory without --resume/--overwrite, disk full...)."""


class DependencyError(DetectError):
    """A package this input, model or engine needs is not installed; the message says how to install it."""


def first_line(err: BaseException) -> str:
    """The first line of an exception's message, or its type when it has none."""
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def error_text(err: BaseException) -> str:
    """One line for a manifest, a run file or the terminal: our own messages as they are, anything
    else as `Type: first line` (TensorFlow's op wrapping and Ray's task wrapping removed)."""
    err = getattr(err, "cause", None) or err  # RayTaskError wraps the real one
    if isinstance(err, DetectError):
        lines = str(err).strip().splitlines()
        return lines[0] if lines else type(err).__name__
    return f"{type(err).__name__}: {tf_error_text(err)}"
