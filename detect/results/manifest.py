"""The run manifest: what went in, what came out, what failed, how long each stage took."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import platform
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from detect.core.atomic import atomic_write_bytes
from detect.core.records import FrameFailure, FrameResult
from detect.results.layout_version import stamped

MANIFEST_FILE = "manifest.json"
COMPLETE = "complete"
COMPLETE_WITH_FAILURES = "complete_with_failures"
FAILED = "failed"

_PACKAGES = ("waymo-detect", "tensorflow", "pyarrow", "numpy", "pillow", "fpng", "imageio", "imageio-ffmpeg")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def failure_json(failure: FrameFailure) -> dict[str, object]:
    return {
        "key.frame_timestamp_micros": failure.key.frame_timestamp_micros,
        "key.camera_name": int(failure.key.camera_name),
        "camera": failure.key.camera_name.name,
        "stage": failure.stage,
        "error": failure.error,
    }


def invalid_boxes(results: Iterable[FrameResult]) -> list[dict[str, object]]:
    """Per image, how many rows the model emitted that were dropped as invalid (only images with some)."""
    rows = [r for r in results if r.detections.invalid]
    rows.sort(key=lambda r: (r.key.frame_timestamp_micros, int(r.key.camera_name)))
    return [{"key.frame_timestamp_micros": r.key.frame_timestamp_micros, "key.camera_name": int(r.key.camera_name),
             "camera": r.key.camera_name.name, "invalid_boxes": r.detections.invalid} for r in rows]


def write_manifest(path: Path, manifest: dict[str, object]) -> None:
    """manifest.json, atomically, in the current layout (`layout_version` first)."""
    atomic_write_bytes(path, (json.dumps(stamped(manifest), indent=2, default=_default) + "\n").encode())


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return str(value)
