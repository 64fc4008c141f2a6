"""Tracking: ByteTrack over one segment's detections, and its scores against Waymo's object ids."""

from detect.track.bytetrack import ByteTracker, IdAllocator
from detect.track.cameras import SegmentTracker
from detect.track.groups import CLASS_GROUP_BASE, group_keys
from detect.track.params import TrackerParams

__all__ = ["CLASS_GROUP_BASE", "ByteTracker", "IdAllocator", "SegmentTracker", "TrackerParams", "group_keys"]
