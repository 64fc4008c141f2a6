"""Tracking: ByteTrack over one segment's detections, and its scores against Waymo's object ids."""

from detect.track.bytetrack import ByteTracker, IdAllocator
from detect.track.flags import TrackFlags, track_flags
from detect.track.frame_scores import FrameCounts, frame_counts, weighted_scores
from detect.track.groups import CLASS_GROUP_BASE, group_keys
from detect.track.params import TrackerParams
from detect.track.scoring import TrackingPool, TrackingScores, metric_results, score_tracks
from detect.track.segment_tracker import SegmentTracker
from detect.track.trackeval_input import FrameTracks, TooManyIds, to_trackeval

__all__ = ["CLASS_GROUP_BASE", "ByteTracker", "FrameCounts", "FrameTracks", "IdAllocator", "SegmentTracker", "TrackFlags",
           "TooManyIds", "TrackerParams", "TrackingPool", "TrackingScores", "group_keys", "metric_results", "score_tracks",
           "frame_counts", "to_trackeval", "track_flags", "weighted_scores"]
