"""detect: run an object detector over Waymo Open Dataset camera video and see what it saw.

The public API. Importing it never imports TensorFlow; the stages that need it import it
when they run.
"""

from detect.core.cameras import CameraName, parse_cameras
from detect.core.errors import DetectError, InputError, ModelError, OutputError, UnsupportedURIError, UsageError
from detect.core.records import CameraFrame, Detections, FrameFailure, FrameKey, FrameResult
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import SegmentSource, resolve

__version__ = "0.1.0"

__all__ = [
    "CameraFrame",
    "CameraName",
    "DetectError",
    "Detections",
    "FrameFailure",
    "FrameFilter",
    "FrameKey",
    "FrameResult",
    "InputError",
    "ModelError",
    "OutputError",
    "SegmentKeys",
    "SegmentSource",
    "UnsupportedURIError",
    "UsageError",
    "iter_frames",
    "parse_cameras",
    "read_keys",
    "resolve",
]
