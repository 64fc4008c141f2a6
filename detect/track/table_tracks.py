"""Track ids for a segment's detections table: the tracker run over its boxes, image by image.

Tracking is a function of the finished table (every box down to the score floor, which ByteTrack's
second pass needs), so the ids depend on nothing but the boxes: a resumed run, the Ray engine and
`detect track` later all give the ids an uninterrupted local run gives. Images are taken in
(timestamp, camera) order; each camera is tracked on its own, ids are unique in the segment.
"""

from __future__ import annotations

import numpy as np

from detect.model.classmap import ClassMap
from detect.track.groups import group_keys
from detect.track.params import TrackerParams
from detect.track.segment_tracker import SegmentTracker


def track_ids(timestamps: np.ndarray, cameras: np.ndarray, class_ids: np.ndarray, scores: np.ndarray,
              xyxy: np.ndarray, class_map: ClassMap, params: TrackerParams) -> np.ndarray:
    """One id per row (int64; -1 where the tracker kept no track), the rows in any order; the rows
    of one image are tracked as one frame."""
    timestamps = np.asarray(timestamps, np.int64).reshape(-1)
    cameras = np.asarray(cameras, np.int64).reshape(-1)
    class_ids = np.asarray(class_ids, np.int64).reshape(-1)
    scores = np.asarray(scores, np.float64).reshape(-1)
    xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
    n = len(timestamps)
    if not len(cameras) == len(class_ids) == len(scores) == len(xyxy) == n:
        raise ValueError(f"expected one camera, class, score and box per row ({n}), got {len(cameras)}, "
                         f"{len(class_ids)}, {len(scores)} and {len(xyxy)}")
    out = np.full(n, -1, np.int64)
    if not n:
        return out
    groups = group_keys(class_ids, class_map)
    # by timestamp, then camera; within an image best score first (ties: by box), as the table writes
    # them: new tracks take their ids in this order, so the ids never depend on how rows were stored
    order = np.lexsort((xyxy[:, 3], xyxy[:, 2], xyxy[:, 1], xyxy[:, 0], -scores, cameras, timestamps))
    keys = np.stack([timestamps[order], cameras[order]], 1)
    starts = np.flatnonzero(np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)])
    tracker = SegmentTracker(params)
    for begin, end in zip(starts, np.r_[starts[1:], n], strict=True):
        rows = order[begin:end]
        out[rows] = tracker.update(int(cameras[rows[0]]), int(timestamps[rows[0]]), xyxy[rows], scores[rows],
                                   groups[rows])
    return out
