"""The tracking side of `detect eval`: a segment's tracked boxes and its labels' object ids as
sequences (one per camera and Waymo type, frames in time order) for `detect.track.TrackingPool`.

A tracked box is a row of detections.parquet with a track id (the tracker's output, low-score boxes
it continued included), of a class the class map sends to the type. Labels are every label of the
type (LEVEL_2). A segment whose table has no track ids, or whose labels carry no object ids, adds
nothing: its boxes were not tracked, or there is nothing to follow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from detect.core.records import FrameKey, Labels
from detect.evaluate.segment_results import SegmentResults
from detect.model.classmap import ClassMap
from detect.results.detections_table import DetectionTable
from detect.track import TrackEvalFrame


@dataclasses.dataclass(frozen=True, eq=False)
class CameraSequence:
    """One camera's images of one Waymo type, in time order, as tracking evaluation sees them."""

    waymo_type: int
    keys: tuple[FrameKey, ...]  # one per frame
    frames: list[TrackEvalFrame]


def segment_sequences(segment: SegmentResults, class_map: ClassMap,
                      types: list[int]) -> Iterator[CameraSequence]:
    """Per camera of `segment` and Waymo type: its frames, when it has tracked boxes or labels of the type."""
    if not has_object_ids(segment.labels):
        return
    yield from image_sequences(segment.detections, segment.images, segment.labels, class_map, types)


def image_sequences(rows: DetectionTable, images: Iterable[FrameKey], labels: Mapping[FrameKey, Labels],
                    class_map: ClassMap, types: list[int]) -> Iterator[CameraSequence]:
    """`segment_sequences` over some of a segment's images (`detect compare`: the ones both sides
    processed), with `labels` for them; nothing when the table has no track ids."""
    if rows.track_ids is None or not (rows.track_ids >= 0).any():
        return
    tracked = np.flatnonzero(rows.track_ids >= 0)
    row_types = np.array([class_map.waymo_type(int(c)) or 0 for c in rows.class_ids[tracked]], np.int64)
    by_image: dict[FrameKey, list[int]] = {}
    for k, row in enumerate(tracked):
        by_image.setdefault(rows.keys[row], []).append(k)
    keys = list(images)
    for camera in sorted({k.camera_name for k in keys}):
        ordered = sorted((k for k in keys if k.camera_name == camera), key=lambda k: k.frame_timestamp_micros)
        for waymo_type in types:
            frames = []
            for key in ordered:
                image_labels = labels.get(key, Labels.empty())
                of_type = image_labels.types == waymo_type
                mine = [k for k in by_image.get(key, []) if row_types[k] == waymo_type]
                frames.append(TrackEvalFrame(
                    label_ids=tuple(i for i, t in zip(image_labels.object_ids, of_type, strict=True) if t),
                    label_xyxy=image_labels.xyxy[of_type], track_ids=rows.track_ids[tracked[mine]],
                    track_xyxy=rows.xyxy[tracked[mine]]))
            if any(len(f.label_ids) or len(f.track_ids) for f in frames):
                yield CameraSequence(waymo_type, tuple(ordered), frames)


def has_object_ids(labels: Mapping[FrameKey, Labels]) -> bool:
    """Whether any label carries an object id (without them there is nothing to follow)."""
    return any(any(image.object_ids) for image in labels.values())
