"""The run manifest's name, statuses and the parts a run records in it: the versions it ran with, its
failures and its invalid boxes (the record itself, written and read: `results_folder.Manifest`)."""

from __future__ import annotations

import datetime as dt
import platform
from collections.abc import Iterable
from importlib import metadata

from detect.core.records import FrameFailure, FrameResult

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


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

