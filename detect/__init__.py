"""detect: run an object detector over Waymo Open Dataset camera video and see what it saw.

The public API. Importing it never imports TensorFlow or Ray; the stages that need them import
them when they run.

    from detect import LocalEngine, RunSpec, run_many
    result = run_many(RunSpec(inputs=("training/camera_image/",), out=Path("results")), LocalEngine())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for type checkers; at run time each is imported on first use
    from detect.core.cameras import CameraName, parse_cameras
    from detect.core.errors import (
        DependencyError,
        DetectError,
        InputError,
        ModelError,
        OutputError,
        UnsupportedURIError,
        UsageError,
    )
    from detect.core.records import CameraFrame, Detections, FrameFailure, FrameKey, FrameResult
    from detect.engine.events import SILENT, Collect, Reporter
    from detect.engine.local import process_segment
    from detect.engine.local_engine import LocalEngine, run_segment
    from detect.engine.outcomes import SegmentOutcome, SegmentReport, Status
    from detect.engine.runner import RunResult, run_many
    from detect.engine.spec import ModelSpec, RayOptions, RunSpec, SegmentSettings
    from detect.model.detector import Detector
    from detect.render.draw import DrawStyle, draw_detections
    from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
    from detect.waymo.selection import FrameFilter
    from detect.waymo.sources import SegmentSource, resolve

# Importing `detect` (and so starting the `detect` command) stays cheap: the modules behind the
# public names load on first use, so a Ctrl-C during start-up lands where the command handles it.
_LAZY = {
    "CameraFrame": "detect.core.records",
    "CameraName": "detect.core.cameras",
    "Collect": "detect.engine.events",
    "DependencyError": "detect.core.errors",
    "DetectError": "detect.core.errors",
    "Detections": "detect.core.records",
    "Detector": "detect.model.detector",
    "DrawStyle": "detect.render.draw",
    "FrameFailure": "detect.core.records",
    "FrameFilter": "detect.waymo.selection",
    "FrameKey": "detect.core.records",
    "FrameResult": "detect.core.records",
    "InputError": "detect.core.errors",
    "LocalEngine": "detect.engine.local_engine",
    "ModelError": "detect.core.errors",
    "ModelSpec": "detect.engine.spec",
    "OutputError": "detect.core.errors",
    "RayOptions": "detect.engine.spec",
    "Reporter": "detect.engine.events",
    "RunResult": "detect.engine.runner",
    "RunSpec": "detect.engine.spec",
    "SILENT": "detect.engine.events",
    "SegmentKeys": "detect.waymo.readers",
    "SegmentOutcome": "detect.engine.outcomes",
    "SegmentReport": "detect.engine.outcomes",
    "SegmentSettings": "detect.engine.spec",
    "SegmentSource": "detect.waymo.sources",
    "Status": "detect.engine.outcomes",
    "UnsupportedURIError": "detect.core.errors",
    "UsageError": "detect.core.errors",
    "draw_detections": "detect.render.draw",
    "iter_frames": "detect.waymo.readers",
    "parse_cameras": "detect.core.cameras",
    "process_segment": "detect.engine.local",
    "read_keys": "detect.waymo.readers",
    "resolve": "detect.waymo.sources",
    "run_many": "detect.engine.runner",
    "run_segment": "detect.engine.local_engine",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'detect' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "SILENT",
    "CameraFrame",
    "CameraName",
    "Collect",
    "DependencyError",
    "DetectError",
    "Detections",
    "Detector",
    "DrawStyle",
    "FrameFailure",
    "FrameFilter",
    "FrameKey",
    "FrameResult",
    "InputError",
    "LocalEngine",
    "ModelError",
    "ModelSpec",
    "OutputError",
    "RayOptions",
    "Reporter",
    "RunResult",
    "RunSpec",
    "SegmentKeys",
    "SegmentOutcome",
    "SegmentReport",
    "SegmentSettings",
    "SegmentSource",
    "Status",
    "UnsupportedURIError",
    "UsageError",
    "draw_detections",
    "iter_frames",
    "parse_cameras",
    "process_segment",
    "read_keys",
    "resolve",
    "run_many",
    "run_segment",
]
