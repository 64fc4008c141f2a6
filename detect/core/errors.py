"""Exceptions the library raises; the CLI maps them to exit codes and one-line messages."""

from __future__ import annotations


class DetectError(Exception):
    """Base of every error `detect` raises on purpose. `str(err)` is a one-line user message."""


class InputError(DetectError):
    """A segment path, file or its content is unusable (missing, truncated, wrong component...)."""


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
