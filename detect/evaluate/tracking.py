"""The tracking side of `detect eval`: a segment's tracked boxes and its labels' object ids as
sequences (one per camera and Waymo type, frames in time order) for `detect.track.TrackingPool`.

A tracked box is a row of detections.parquet with a track id (the tracker's output, low-score boxes
it continued included), of a class the class map sends to the type. Labels are every label of the
type (LEVEL_2). A segment whose table has no track ids, or whose labels carry no object ids, adds
nothing: its boxes were not tracked, or there is nothing to follow.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from detect.core.records import FrameKey, Labels
from detect.evaluate.results import SegmentResults
from detect.model.classmap import ClassMap
from detect.track import FrameTracks


def segment_sequences(segment: SegmentResults, class_map: ClassMap,
                      types: list[int]) -> Iterator[tuple[int, list[FrameTracks]]]:
    """(Waymo type, frames) per camera of `segment` that has tracked boxes or labels of that type."""
    rows = segment.detections
    if rows.track_ids is None or not (rows.track_ids >= 0).any() or not _has_object_ids(segment):
        return
    tracked = np.flatnonzero(rows.track_ids >= 0)
    row_types = np.array([class_map.waymo_type(int(c)) or 0 for c in rows.class_ids[tracked]], np.int64)
    by_image: dict[FrameKey, list[int]] = {}
    for k, row in enumerate(tracked):
        by_image.setdefault(rows.keys[row], []).append(k)
    for camera in sorted({k.camera_name for k in segment.images}):
        images = sorted((k for k in segment.images if k.camera_name == camera), key=lambda k: k.frame_timestamp_micros)
        for waymo_type in types:
            frames = []
            for key in images:
                labels = segment.labels.get(key, Labels.empty())
                of_type = labels.types == waymo_type
                mine = [k for k in by_image.get(key, []) if row_types[k] == waymo_type]
                frames.append(FrameTracks(
                    label_ids=tuple(i for i, t in zip(labels.object_ids, of_type, strict=True) if t),
                    label_xyxy=labels.xyxy[of_type], track_ids=rows.track_ids[tracked[mine]],
                    track_xyxy=rows.xyxy[tracked[mine]]))
            if any(len(f.label_ids) or len(f.track_ids) for f in frames):
                yield waymo_type, frames


def _has_object_ids(segment: SegmentResults) -> bool:
    return any(any(labels.object_ids) for labels in segment.labels.values())
