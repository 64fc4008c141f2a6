"""A segment's context from where its format keeps it: the v2 components beside its camera_image
file (read here), or the v1 frames' fields (gathered by the key pass)."""

from __future__ import annotations

import numpy as np

from detect.waymo.context.segment import SegmentContext
from detect.waymo.context.v2 import read_v2_context
from detect.waymo.readers import SegmentKeys
from detect.waymo.tfrecord import TFRecordKeys


def read_context(keys: SegmentKeys) -> SegmentContext:
    """Whatever the segment's source says around its images; the parts it lacks are not available
    (an empty record for a source with none), a part that is not Waymo's is an InputError."""
    segment = keys.segment_context_name
    if isinstance(keys.reader_keys, TFRecordKeys):
        return keys.reader_keys.context or SegmentContext(segment)
    frames = len(np.unique(keys.index.timestamps))
    return read_v2_context(keys.source, segment, frames)
