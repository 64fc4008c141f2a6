"""`tracking.parquet`: every tracked box of an evaluated run, with the label it stands for and the
ID switches and fragmentations it made (`detect.track.track_flags`: TrackEval's CLEAR matching at
the protocol's IoU, replayed box by box, so the flags sum to eval.json's counts).

Written beside matches.parquet, segment by segment as the evaluation goes (flat memory), and renamed
into place only when the evaluation finished. The columns are in docs/tracking.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.atomic import atomic_path
from detect.core.matching import Protocol
from detect.core.records import WaymoType
from detect.evaluate.tracking import CameraSequence
from detect.track import track_flags
from detect.waymo.schema import CAMERA, KEY_FIELDS, OBJECT_ID, SEGMENT, TIMESTAMP

TRACKING_SCHEMA = pa.schema([
    *KEY_FIELDS,
    ("type", pa.int8()),
    ("type_name", pa.string()),
    ("track_id", pa.int64()),
    (OBJECT_ID, pa.string()),  # the label the box matched (null: none, or a label without a usable id)
    ("iou", pa.float32()),  # with that label (null: none)
    ("id_switch", pa.bool_()),
    ("fragmentation", pa.bool_()),
    ("previous_track_id", pa.int64()),  # on a switch: the label's track id before (null elsewhere)
    ("xmin", pa.float32()),
    ("ymin", pa.float32()),
    ("xmax", pa.float32()),
    ("ymax", pa.float32()),
    ("iou_threshold", pa.float32()),
])


def tracking_table(sequences: Iterable[CameraSequence], protocol: Protocol) -> pa.Table:
    """The rows of `sequences` (one camera and type each): per frame in time order, its tracked boxes."""
    parts = []
    for sequence in sequences:
        iou = protocol.iou(sequence.waymo_type)
        flags = track_flags(sequence.frames, iou)
        keys = [sequence.keys[f] for f in flags.frame.tolist()]
        boxes = np.concatenate([np.zeros((0, 4)), *(f.track_xyxy[f.track_ids >= 0] for f in sequence.frames)])
        kept = np.concatenate([np.zeros(0, bool), *(f.track_ids >= 0 for f in sequence.frames)])
        n = int(np.count_nonzero(kept))
        parts.append(pa.table({
            SEGMENT: pa.array([k.segment_context_name for k in keys], pa.string()).filter(pa.array(kept)),
            TIMESTAMP: pa.array([k.frame_timestamp_micros for k in keys], pa.int64()).filter(pa.array(kept)),
            CAMERA: pa.array([int(k.camera_name) for k in keys], pa.int8()).filter(pa.array(kept)),
            "type": pa.array(np.full(n, sequence.waymo_type, np.int8)),
            "type_name": pa.array([WaymoType(sequence.waymo_type).name] * n, pa.string()),
            "track_id": pa.array(flags.track_id[kept], pa.int64()),
            OBJECT_ID: pa.array(flags.label_id[kept].tolist(), pa.string()),
            "iou": pa.array(flags.iou[kept], pa.float32(), mask=np.isnan(flags.iou[kept])),
            "id_switch": pa.array(flags.switch[kept], pa.bool_()),
            "fragmentation": pa.array(flags.fragment[kept], pa.bool_()),
            "previous_track_id": pa.array(flags.previous[kept], pa.int64(), mask=flags.previous[kept] < 0),
            **{name: pa.array(boxes[:, i], pa.float32()) for i, name in enumerate(("xmin", "ymin", "xmax", "ymax"))},
            "iou_threshold": pa.array(np.full(n, iou, np.float32)),
        }, schema=TRACKING_SCHEMA))
    return pa.concat_tables([TRACKING_SCHEMA.empty_table(), *parts])


class TrackingWriter:
    """`tracking.parquet`, written segment by segment and renamed into place when the evaluation
    finished; when no segment had tracked boxes against labeled ids, there is no file (an earlier
    evaluation's is removed: it described other tracks)."""

    def __init__(self, path: Path, protocol: Protocol) -> None:
        self.path, self.protocol = Path(path), protocol
        self._target: contextlib.AbstractContextManager[Path] | None = None
        self._writer: pq.ParquetWriter | None = None
        self.rows = 0

    def __enter__(self) -> TrackingWriter:
        return self

    def write(self, sequences: Iterable[CameraSequence]) -> None:
        table = tracking_table(sequences, self.protocol)
        if not len(table):
            return
        if self._writer is None:
            self._target = atomic_path(self.path)
            self._writer = pq.ParquetWriter(self._target.__enter__(), TRACKING_SCHEMA)
        self._writer.write_table(table)
        self.rows += len(table)

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._writer is not None and self._target is not None:
            self._writer.close()
            self._target.__exit__(kind, error, trace)
        elif kind is None and self.path.is_file() and not self.path.is_symlink():
            self.path.unlink()
