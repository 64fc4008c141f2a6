"""Write Waymo-format segments for tests and benchmarks: v2 Parquet and v1 TFRecord."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.records import CameraFrame, FrameKey, Labels
from detect.waymo.schema import (
    BOX_CENTER_X,
    BOX_CENTER_Y,
    BOX_SIZE_X,
    BOX_SIZE_Y,
    BOX_TYPE,
    CAMERA,
    IMAGE,
    KEY_FIELDS,
    SEGMENT,
    TIMESTAMP,
)

FRAME_INTERVAL_MICROS = 100_000  # 10 Hz, as Waymo records

# The camera_image schema as Waymo's converter writes it, including columns the reader must
# never touch (pose, velocity, rolling shutter): projection is only proven if they are there.
CAMERA_IMAGE_SCHEMA = pa.schema(
    [
        *KEY_FIELDS,
        (IMAGE, pa.binary()),
        ("[CameraImageComponent].pose.transform", pa.list_(pa.float64())),
        ("[CameraImageComponent].velocity.linear_velocity.x", pa.float32()),
        ("[CameraImageComponent].velocity.linear_velocity.y", pa.float32()),
        ("[CameraImageComponent].velocity.linear_velocity.z", pa.float32()),
        ("[CameraImageComponent].velocity.angular_velocity.x", pa.float32()),
        ("[CameraImageComponent].velocity.angular_velocity.y", pa.float32()),
        ("[CameraImageComponent].velocity.angular_velocity.z", pa.float32()),
        ("[CameraImageComponent].pose_timestamp", pa.float64()),
        ("[CameraImageComponent].rolling_shutter_params.shutter", pa.float64()),
        ("[CameraImageComponent].rolling_shutter_params.camera_trigger_time", pa.float64()),
        ("[CameraImageComponent].rolling_shutter_params.camera_readout_done_time", pa.float64()),
    ]
)


def repeat_frames(
    templates: Sequence[CameraFrame],
    num_frames: int,
    *,
    segment_context_name: str | None = None,
    start_micros: int | None = None,
) -> list[CameraFrame]:
    """`num_frames` frames at 10 Hz, each holding the template cameras' JPEGs."""
    if not templates:
        raise ValueError("no template frames to repeat")
    name = segment_context_name or templates[0].segment_context_name
    start = templates[0].frame_timestamp_micros if start_micros is None else start_micros
    return [
        CameraFrame(name, start + i * FRAME_INTERVAL_MICROS, t.camera_name, tag_jpeg(t.jpeg, f"{name}/{i}/{int(t.camera_name)}"))
        for i in range(num_frames)
        for t in templates
    ]


def tag_jpeg(jpeg: bytes, tag: str) -> bytes:
    """The same picture with a JPEG comment (COM) segment after SOI, so every copy is unique.

    Without it Parquet's dictionary encoding stores a repeated image once, and a "400 MB"
    synthetic segment would weigh 2 MB and prove nothing about memory.
    """
    if not jpeg.startswith(b"\xff\xd8"):
        return jpeg
    payload = tag.encode()[:65000]
    return jpeg[:2] + b"\xff\xfe" + (len(payload) + 2).to_bytes(2, "big") + payload + jpeg[2:]


def write_camera_image_parquet(
    path: str | Path,
    frames: Iterable[CameraFrame],
    *,
    shuffle_seed: int | None = None,
    row_group_size: int | None = None,
) -> Path:
    """A v2 camera_image file; pyarrow's defaults put up to 1M rows in one row group."""
    rows = list(frames)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(rows)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # pyarrow checks page and dictionary sizes only between write batches (1,024 rows by
    # default), so a whole segment would land in one 400 MB page (or dictionary page) that any
    # reader must hold at once. Small write batches give ~1 MB pages; unique JPEGs gain nothing
    # from a dictionary.
    small_columns = [f.name for f in CAMERA_IMAGE_SCHEMA if f.name != IMAGE]
    with pq.ParquetWriter(path, CAMERA_IMAGE_SCHEMA, use_dictionary=small_columns, write_batch_size=4) as writer:
        step = row_group_size or max(1, len(rows))
        for start in range(0, max(len(rows), 1), step):
            chunk = rows[start:start + step]
            writer.write_table(_camera_image_table(chunk), row_group_size=row_group_size)
    return path


def _camera_image_table(rows: Sequence[CameraFrame]) -> pa.Table:
    n = len(rows)
    columns: dict[str, pa.Array] = {
        SEGMENT: pa.array([r.segment_context_name for r in rows], pa.string()),
        TIMESTAMP: pa.array([r.frame_timestamp_micros for r in rows], pa.int64()),
        CAMERA: pa.array([int(r.camera_name) for r in rows], pa.int8()),
        IMAGE: pa.array([r.jpeg for r in rows], pa.binary()),
    }
    for field in CAMERA_IMAGE_SCHEMA:
        if field.name not in columns:
            if pa.types.is_list(field.type):
                columns[field.name] = pa.array([[1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0, 0, 0, 0, 0, 1.0]] * n, field.type)
            else:
                columns[field.name] = pa.array([0.0] * n, field.type)
    return pa.table(columns, schema=CAMERA_IMAGE_SCHEMA)


def write_camera_box_parquet(path: str | Path, segment: str, timestamp: int,
                             boxes: Sequence[tuple[int, float, float, float, float, int]]) -> Path:
    """A v2 camera_box file: rows of (camera, center_x, center_y, size_x, size_y, type)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            SEGMENT: pa.array([segment] * len(boxes), pa.string()),
            TIMESTAMP: pa.array([timestamp] * len(boxes), pa.int64()),
            CAMERA: pa.array([b[0] for b in boxes], pa.int8()),
            "key.camera_object_id": pa.array([f"obj{i}" for i in range(len(boxes))], pa.string()),
            BOX_CENTER_X: pa.array([b[1] for b in boxes], pa.float64()),
            BOX_CENTER_Y: pa.array([b[2] for b in boxes], pa.float64()),
            BOX_SIZE_X: pa.array([b[3] for b in boxes], pa.float64()),
            BOX_SIZE_Y: pa.array([b[4] for b in boxes], pa.float64()),
            BOX_TYPE: pa.array([b[5] for b in boxes], pa.int8()),
            "[CameraBoxComponent].difficulty_level.detection": pa.array([1] * len(boxes), pa.int8()),
            "[CameraBoxComponent].difficulty_level.tracking": pa.array([1] * len(boxes), pa.int8()),
        }
    )
    pq.write_table(table, path)
    return path


def write_camera_box_from_labels(path: str | Path, labels: Mapping[FrameKey, Labels]) -> Path:
    """A v2 camera_box file holding `labels` (Waymo's boxes per image, as the readers give them)."""
    rows = [(key, box, int(kind), int(level), object_id) for key in sorted(labels, key=lambda k: k.order)
            for box, kind, level, object_id in zip(labels[key].xyxy, labels[key].types, labels[key].difficulty,
                                                   labels[key].object_ids, strict=True)]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({
        SEGMENT: pa.array([k.segment_context_name for k, *_ in rows], pa.string()),
        TIMESTAMP: pa.array([k.frame_timestamp_micros for k, *_ in rows], pa.int64()),
        CAMERA: pa.array([int(k.camera_name) for k, *_ in rows], pa.int8()),
        "key.camera_object_id": pa.array([r[4] for r in rows], pa.string()),
        BOX_CENTER_X: pa.array([float(b[0] + b[2]) / 2 for _, b, *_ in rows], pa.float64()),
        BOX_CENTER_Y: pa.array([float(b[1] + b[3]) / 2 for _, b, *_ in rows], pa.float64()),
        BOX_SIZE_X: pa.array([float(b[2] - b[0]) for _, b, *_ in rows], pa.float64()),
        BOX_SIZE_Y: pa.array([float(b[3] - b[1]) for _, b, *_ in rows], pa.float64()),
        BOX_TYPE: pa.array([r[2] for r in rows], pa.int8()),
        "[CameraBoxComponent].difficulty_level.detection": pa.array([r[3] for r in rows], pa.int8()),
    })
    pq.write_table(table, path)
    return path


def write_frames_tfrecord(
    path: str | Path,
    frames: Iterable[CameraFrame],
    *,
    shuffle_seed: int | None = None,
    camera_labels: dict[int, list] | None = None,
) -> Path:
    """A v1 segment: one `dataset_pb2.Frame` record per timestamp with its camera images.

    `camera_labels` maps a camera number to `dataset_pb2.CameraLabels.labels`-like protos copied
    into every frame (used to carry the real fixture's ground truth along).
    """
    import tensorflow as tf
    from waymo_open_dataset import dataset_pb2

    by_time: dict[int, list[CameraFrame]] = {}
    for frame in frames:
        by_time.setdefault(frame.frame_timestamp_micros, []).append(frame)
    times = sorted(by_time)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(times)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for ts in times:
            proto = dataset_pb2.Frame()
            proto.context.name = by_time[ts][0].segment_context_name
            proto.timestamp_micros = ts
            for cam in by_time[ts]:
                image = proto.images.add()
                image.name = int(cam.camera_name)
                image.image = cam.jpeg
            for camera, labels in (camera_labels or {}).items():
                entry = proto.camera_labels.add()
                entry.name = camera
                entry.labels.extend(labels)
            writer.write(proto.SerializeToString())
    return path
