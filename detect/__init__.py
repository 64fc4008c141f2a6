"""detect: run an object detector over Waymo Open Dataset camera video and see what it saw.

The public API. Importing it never imports TensorFlow or Ray; the stages that need them import
them when they run.

    from detect import LocalEngine, RunSpec, run_many
    result = run_many(RunSpec(inputs=("training/camera_image/",), out=Path("results")), LocalEngine())
"""

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
from detect.engine.outcomes import SegmentOutcome, SegmentReport, Status
from detect.engine.runner import LocalEngine, RunResult, run_many, run_segment
from detect.engine.spec import ModelSpec, RayOptions, RunSpec, SegmentSettings
from detect.model.detector import Detector
from detect.render.draw import DrawStyle, draw_detections
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import SegmentSource, resolve

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
