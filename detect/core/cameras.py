"""The Waymo camera enum: numbers as the dataset stores them, names as people type them."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class CameraName(enum.IntEnum):
    """`key.camera_name` / `CameraName.Name` in the Waymo Open Dataset (0 is UNKNOWN there)."""

    FRONT = 1
    FRONT_LEFT = 2
    FRONT_RIGHT = 3
    SIDE_LEFT = 4
    SIDE_RIGHT = 5


CAMERA_NUMBERS = frozenset(int(c) for c in CameraName)  # what `key.camera_name` may hold


class UnknownCameraError(ValueError):
    """A camera given by the user is neither a Waymo camera name nor its number."""


def parse_camera(value: str | int) -> CameraName:
    """`"front_left"`, `"FRONT-LEFT"`, `"2"` or `2` -> `CameraName.FRONT_LEFT`."""
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        number = int(value)
        try:
            return CameraName(number)
        except ValueError:
            raise UnknownCameraError(
                f"unknown camera number {number}: expected 1-5 ({_choices()})"
            ) from None
    key = value.strip().upper().replace("-", "_")
    try:
        return CameraName[key]
    except KeyError:
        raise UnknownCameraError(f"unknown camera {value!r}: expected one of {_choices()}") from None


def parse_cameras(values: Iterable[str | int] | None) -> tuple[CameraName, ...] | None:
    """Parse a camera filter; comma-separated strings are split. None means every camera."""
    if values is None:
        return None
    parsed: list[CameraName] = []
    for value in values:
        parts = value.split(",") if isinstance(value, str) else [value]
        for part in parts:
            if isinstance(part, str) and not part.strip():
                continue
            camera = parse_camera(part)
            if camera not in parsed:
                parsed.append(camera)
    return tuple(sorted(parsed)) if parsed else None


def _choices() -> str:
    return ", ".join(f"{c.name} ({c.value})" for c in CameraName)
