"""What flags may hold: bounds, and parsers of their values."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

# Upper bounds on flags that size memory or threads: a typo must not ask for 28 GB. 256 full
# 1920x1280 frames are 1.9 GB; 64 drawing threads keep a 64-core box busy.
MAX_BATCH_SIZE = 256
# Bootstrap resamples: 1,000 took 0.08 s per type for 120 frames with 2,000 boxes on one core, so
# 100,000 is minutes at most for a run; 10^8 was hours and 10^12 asked numpy for 7.28 TiB.
MAX_BOOTSTRAP = 100_000
N = TypeVar("N", int, float)
AUTO_GT = "auto"  # `--gt` without a path: the labels beside the input
FRAME_FORMATS = ("png", "jpg")


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    return _bounded(_int, low, high, f"{low:,}", f"{high:,}")


def bounded_float(low: float, high: float) -> Callable[[str], float]:
    return _bounded(_float, low, high, f"{low:g}", f"{high:g}")


def _bounded(number: Callable[[str], N], low: N, high: N, low_text: str, high_text: str) -> Callable[[str], N]:
    def parse(text: str) -> N:
        value = number(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low_text} and {high_text}, got {text}")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _float(text: str) -> float:
    """A finite number (NaN and infinities are refused: no flag means them)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def nms_iou(text: str) -> float | str:
    if text.strip().lower() in ("off", "none", "0"):
        return "off"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or 'off': {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 (excluded) and 1, or 'off', got {text}")
    return value


def unit_float(text: str) -> float:
    value = _float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def frame_format(text: str) -> str:
    """`--frame-format`: png or jpg, in any case; jpeg is jpg (the files are named .jpg)."""
    lowered = text.lower()
    return "jpg" if lowered == "jpeg" else lowered


SLICE_DIMENSIONS = ("range", "time_of_day", "location", "weather")  # eval.json's `slices`


def slice_dimensions(text: str) -> tuple[str, ...]:
    """`--by range,time_of_day`: some of the slice dimensions, comma-separated, each once."""
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",")))
    unknown = [n for n in names if n not in SLICE_DIMENSIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected some of {','.join(SLICE_DIMENSIONS)} (comma-separated), "
                                         f"got {text!r}")
    return names
