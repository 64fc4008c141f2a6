"""Stream camera images out of a Waymo v1 segment (TFRecord of `dataset_pb2.Frame` protos)."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from detect.core.cameras import CameraName
from detect.core.errors import DependencyError, InputError, UnsupportedURIError
from detect.core.records import CameraFrame, Labels, valid_label_rows
from detect.core.signals import deferred_interrupts
from detect.core.tf_env import import_tensorflow, tf_error_text
from detect.waymo.context.segment import SegmentContext
from detect.waymo.context.v1 import V1ContextBuilder
from detect.waymo.selection import FrameFilter, KeyIndex, in_order, select
from detect.waymo.sources import SegmentSource

# Frames (records) held back while restoring timestamp order in an unsorted file.
REORDER_CAPACITY = 16
# A Waymo v1 frame (five camera JPEGs, lidar range images) is a few MB; a record claiming more than
# this is a corrupt length, not a frame to read into memory.
MAX_RECORD = 256 << 20


@dataclasses.dataclass(frozen=True)
class TFRecordKeys:
    """Per camera image: timestamp, camera and record number; per file: names and label count."""

    segment_names: tuple[str, ...]
    index: KeyIndex
    num_records: int
    num_camera_labels: int
    # `camera_labels` by (frame_timestamp_micros, camera), read in the same pass (they are small).
    labels: dict[tuple[int, int], Labels] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    labels_dropped: int = 0  # label rows refused by `valid_label_rows` (NaN or negative boxes, unknown types)
    # What the frames say around their images (stats, calibrations, 3D labels), read in the same pass.
    context: SegmentContext | None = dataclasses.field(default=None, repr=False, compare=False)
    verified: bool = False  # read without TensorFlow (`_records`): iter_frames reads the same way


def read_keys(source: SegmentSource, verified: bool = False) -> TFRecordKeys:
    """One pass over the records, keeping keys only (the images are dropped right away). `verified`:
    the file is one a run read whole and its fingerprint still matches (`_records`)."""
    timestamps: list[int] = []
    cameras: list[int] = []
    records: list[int] = []
    names: set[str] = set()
    labels = 0
    by_image: dict[tuple[int, int], Labels] = {}
    dropped = 0
    count = 0
    context = V1ContextBuilder()
    for record_number, frame in _records(source, verified):
        names.add(segment_name(frame, source, record_number))
        try:
            context.add(frame)
        except ValueError as err:
            raise InputError(f"{source.uri}: record {record_number}: {err}") from None
        labels += sum(len(camera.labels) for camera in frame.camera_labels)
        for camera in frame.camera_labels:
            key = (int(frame.timestamp_micros), int(camera.name))
            if camera.labels and key not in by_image:  # a repeated frame keeps its first labels
                by_image[key], bad = _labels(camera.labels)
                dropped += bad
        for image in frame.images:
            timestamps.append(frame.timestamp_micros)
            cameras.append(image.name)
            records.append(record_number)
        count += 1
    if count == 0:
        size = source.filesystem.get_file_info(source.path).size or 0
        what = "not a TFRecord (no complete record in" if size else "empty TFRecord ("
        raise InputError(f"{source.uri}: {what} {size} bytes)")
    unknown = sorted(set(cameras) - {int(c) for c in CameraName})
    if unknown:
        raise InputError(f"{source.uri}: unknown camera name value(s) {unknown}; expected 1-5")
    index = KeyIndex(
        timestamps=np.asarray(timestamps, dtype=np.int64),
        cameras=np.asarray(cameras, dtype=np.int64),
        positions=np.asarray(records, dtype=np.int64),
    )
    segments = tuple(sorted(names))
    return TFRecordKeys(segments, index, count, labels, by_image, dropped, verified=verified,
                        context=context.build(segments[0] if len(segments) == 1 else ""))


def _labels(labels: Any) -> tuple[Labels, int]:
    """`CameraLabels.labels` (box center and length/width in pixels) as `Labels`, and how many
    rows `valid_label_rows` refused."""
    values = {
        "cx": np.array([label.box.center_x for label in labels], np.float64),
        "cy": np.array([label.box.center_y for label in labels], np.float64),
        "size_x": np.array([label.box.length for label in labels], np.float64),
        "size_y": np.array([label.box.width for label in labels], np.float64),
        "type": np.array([label.type for label in labels], np.float64),
        "difficulty": np.array([label.detection_difficulty_level for label in labels], np.float64),
    }
    ok = valid_label_rows(values)
    ids = [str(label.id) for label in labels]
    kept = Labels.from_centers(values["cx"][ok], values["cy"][ok], values["size_x"][ok], values["size_y"][ok],
                               values["type"][ok].astype(np.int8), values["difficulty"][ok].astype(np.int8),
                               tuple(i for i, good in zip(ids, ok, strict=True) if good))
    return kept, int(len(ok) - ok.sum())


def iter_frames(source: SegmentSource, frame_filter: FrameFilter = FrameFilter(),
                keys: TFRecordKeys | None = None) -> Iterator[CameraFrame]:
    """Camera images in (timestamp, camera) order."""
    keys = keys or read_keys(source)
    rows = select(keys.index, frame_filter)
    wanted_cameras: dict[int, set[int]] = {}
    record_order: list[int] = []
    for row in rows.tolist():
        record = int(keys.index.positions[row])
        if record not in wanted_cameras:
            wanted_cameras[record] = set()
            record_order.append(record)
        wanted_cameras[record].add(int(keys.index.cameras[row]))

    def scan(wanted: set[int]) -> Iterator[tuple[int, list[CameraFrame]]]:
        last = max(wanted)
        for record_number, frame in _records(source, keys.verified):
            if record_number in wanted:
                chosen = wanted_cameras[record_number]
                first: dict[int, Any] = {}  # a camera repeated inside one record: its first image (the rest are duplicates)
                for im in frame.images:
                    if im.name in chosen:
                        first.setdefault(im.name, im)
                images = [first[name] for name in sorted(first)]
                yield record_number, [
                    CameraFrame(segment_name(frame, source, record_number), frame.timestamp_micros, im.name, im.image)
                    for im in images
                ]
            if record_number >= last:
                return

    for camera_frames in in_order(record_order, scan, REORDER_CAPACITY):
        yield from camera_frames


def iter_wanted(source: SegmentSource, wanted: Collection[tuple[int, int]]) -> Iterator[CameraFrame]:
    """The wanted (timestamp, camera number) images in file order, in one pass without the key pass
    (`iter_frames` makes one first) that stops after the last: a few images for pictures. A local
    file is read without TensorFlow (`_local_frames`): importing it would take longer than the read."""
    left = set(wanted)
    if not left:
        return
    for record_number, frame in _records(source, verified=True):  # a few images: no TensorFlow import for them
        for image in frame.images:
            key = (int(frame.timestamp_micros), int(image.name))
            if key in left:
                left.discard(key)
                yield CameraFrame(segment_name(frame, source, record_number), frame.timestamp_micros, image.name,
                                  image.image)
        if not left:
            return


def _records(source: SegmentSource, verified: bool) -> Iterator[tuple[int, Any]]:
    """A verified local file (one a run read whole, its fingerprint checked since: `detect redraw`)
    is read directly, without TensorFlow (importing it takes seconds, and its reader is slower than
    the parsing); any other through TensorFlow, which checks each record's CRC and reads any
    filesystem it knows."""
    return _local_frames(source) if verified and source.is_local else _frames(source)


def _local_frames(source: SegmentSource) -> Iterator[tuple[int, Any]]:
    """(record number, parsed Frame) of a local TFRecord read directly, without TensorFlow. A record
    is an 8-byte little-endian length, its 4-byte CRC, the data and the data's CRC; the CRCs are not
    checked (the callers read back a file a run read whole, checked by its fingerprint first), but a
    record cut short, or a length no Waymo frame has, is an InputError, as the proto that does not parse."""
    dataset_pb2 = waymo_protos(source.uri)
    try:
        with open(source.path, "rb") as handle:
            record_number = 0
            while header := handle.read(12):
                (length,) = struct.unpack("<Q", header[:8]) if len(header) == 12 else (-1,)
                if not 0 <= length <= MAX_RECORD:
                    raise InputError(f"{source.uri}: truncated or corrupt TFRecord at record {record_number}")
                data = handle.read(length)
                if len(data) < length or len(handle.read(4)) < 4:
                    raise InputError(f"{source.uri}: truncated or corrupt TFRecord at record {record_number}")
                try:
                    frame = dataset_pb2.Frame.FromString(data)
                except DecodeError as err:
                    raise InputError(f"{source.uri}: record {record_number} is not a Waymo Frame proto ({err})") from err
                yield record_number, frame
                record_number += 1
    except OSError as err:
        raise InputError(f"{source.uri}: cannot read TFRecord ({err.strerror or err})") from err


def _frames(source: SegmentSource) -> Iterator[tuple[int, Any]]:
    """(record number, parsed Frame) with file errors turned into one-line InputErrors."""
    tf = import_tensorflow()
    dataset_pb2 = waymo_protos(source.uri)

    location = source.path if source.is_local else source.uri
    try:
        dataset = tf.data.TFRecordDataset(location, buffer_size=8 << 20)
        iterator = iter(dataset)
    except (tf.errors.OpError, ValueError) as err:
        raise _file_error(source, err) from err
    record_number = 0
    while True:
        try:
            with deferred_interrupts():  # TensorFlow can swallow a Ctrl-C (`detect.core.signals`)
                record = next(iterator)
        except StopIteration:
            return
        except tf.errors.DataLossError as err:
            raise InputError(
                f"{source.uri}: truncated or corrupt TFRecord at record {record_number} ({tf_error_text(err)})"
            ) from err
        except tf.errors.OpError as err:
            raise _file_error(source, err) from err
        try:
            frame = dataset_pb2.Frame.FromString(record.numpy())
        except DecodeError as err:
            raise InputError(f"{source.uri}: record {record_number} is not a Waymo Frame proto ({err})") from err
        yield record_number, frame
        record_number += 1


def segment_name(frame: Any, source: SegmentSource, record_number: int) -> str:
    """`context.name` as text; the protobuf runtime hands back bytes when they are not UTF-8."""
    name = frame.context.name
    if isinstance(name, bytes):
        raise InputError(f"{source.uri}: record {record_number}: context.name is not UTF-8 text ({name[:40]!r})")
    return str(name)


PROTOS_HINT = "pip install --no-deps waymo-open-dataset-tf-2-12-0==1.6.7"


def waymo_protos(uri: str):
    """Waymo's generated `dataset_pb2`, or a one-line DependencyError saying how to install it."""
    try:
        from waymo_open_dataset import dataset_pb2
    except ImportError:
        raise DependencyError(
            f"{uri}: reading v1 TFRecords needs Waymo's protos, which are not installed: {PROTOS_HINT} "
            f"(--no-deps: the package pins an old TensorFlow; only its protos are used)"
        ) from None
    return dataset_pb2


def _file_error(source: SegmentSource, err: Exception) -> InputError:
    message = tf_error_text(err)
    if "not implemented" in message.lower() or "scheme" in message.lower():
        return UnsupportedURIError(f"{source.uri}: TensorFlow cannot open this filesystem here ({message})")
    return InputError(f"{source.uri}: cannot read TFRecord ({message})")
