"""Judging a frame's detections against its labels (hits, false alarms, missed labels): one rule
that drawing, evaluation, comparison and tracking share. See `detect.judge.frame_match`."""

from detect.judge.frame_match import FALSE_ALARM, HIT, MISSED, OTHER, ErrorRules, FrameMatch, match_frame

__all__ = ["FALSE_ALARM", "HIT", "MISSED", "OTHER", "ErrorRules", "FrameMatch", "match_frame"]
