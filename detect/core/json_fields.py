"""Decoding the values of a JSON record we wrote and read back (a manifest's settings): each value
checked once, by type and bounds, with a one-line `RecordError` naming its field.

A results folder is shared and may be edited, so a value read back is data, not a setting: the
types are JSON's (`true` is not a number, `3.0` is not a whole number, `1e308` is not a frame count)
and the bounds are those the command-line flag that sets the value has, so a value read back can
do no more than a user could ask for on the command line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

from detect.core.errors import RecordError

T = TypeVar("T")
MAX_TEXT = 200  # characters a recorded text may hold (a watermark is one short line)


def _shown(value: object) -> str:
    """The value as the message shows it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def whole(value: object, field: str, low: int, high: int) -> int:
    """A JSON integer from `low` to `high`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"{field}: expected a whole number, got {_shown(value)}")
    if not low <= value <= high:
        raise RecordError(f"{field}: expected {low:,} to {high:,}, got {_shown(value)}")
    return value


def number(value: object, field: str, low: float, high: float) -> float:
    """A finite JSON number from `low` to `high`, as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RecordError(f"{field}: expected a number, got {_shown(value)}")
    if not low <= value <= high:
        raise RecordError(f"{field}: expected {low:g} to {high:g}, got {_shown(value)}")
    return float(value)


def flag(value: object, field: str) -> bool:
    """A JSON `true` or `false`."""
    if not isinstance(value, bool):
        raise RecordError(f"{field}: expected true or false, got {_shown(value)}")
    return value


def choice(value: object, field: str, options: Collection[str]) -> str:
    """One of `options`."""
    if not isinstance(value, str) or value not in options:
        raise RecordError(f"{field}: expected one of {', '.join(options)}, got {_shown(value)}")
    return value


def text(value: object, field: str, limit: int = MAX_TEXT) -> str:
    """A JSON string of at most `limit` characters."""
    if not isinstance(value, str):
        raise RecordError(f"{field}: expected a text, got {_shown(value)}")
    if len(value) > limit:
        raise RecordError(f"{field}: expected at most {limit:,} characters, got {len(value):,}")
    return value


def items(value: object, field: str, limit: int) -> list[object]:
    """A JSON array of at most `limit` items."""
    if not isinstance(value, list):
        raise RecordError(f"{field}: expected a list, got {_shown(value)}")
    if len(value) > limit:
        raise RecordError(f"{field}: expected at most {limit:,} items, got {len(value):,}")
    return value


def section(value: object, field: str) -> Mapping[str, object]:
    """A JSON object."""
    if not isinstance(value, Mapping):
        raise RecordError(f"{field}: expected an object, got {_shown(value)}")
    return value


def optional(value: object, decode: Callable[[object], T]) -> T | None:
    """None for JSON `null`, else `decode(value)`."""
    return None if value is None else decode(value)


class Fields:
    """The values of one JSON object, by name: a missing key reads as its default (a record written
    before the key existed), a present one must decode."""

    def __init__(self, data: Mapping[str, object], prefix: str) -> None:
        self.data = data
        self.prefix = prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}.{key}"

    def get(self, key: str, default: T, decode: Callable[[object, str], T]) -> T:
        if key not in self.data:
            return default
        return decode(self.data[key], self.name(key))
