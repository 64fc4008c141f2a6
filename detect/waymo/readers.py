"""One entry point for both Waymo formats: keys for planning, frames for processing."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator

import pyarrow.fs as pafs

from detect.core.cameras import CameraName
from detect.core.errors import InputError
from detect.core.names import printable
from detect.core.records import CameraFrame
from detect.waymo import parquet, tfrecord
from detect.waymo.schema import sibling_component
from detect.waymo.selection import FrameFilter, KeyIndex
from detect.waymo.sources import SegmentSource, resolve_one


@dataclasses.dataclass(frozen=True)
class SegmentKeys:
    """What a segment file holds, learned from its key columns only."""

    source: SegmentSource
    segment_names: tuple[str, ...]
    index: KeyIndex
    labels: str | None  # where ground truth lives ("camera_box file ...", "camera_labels ..."), or None
    # The reader's own keys (row-group offsets, record numbers): lets iter_frames skip its key pass.
    reader_keys: object = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def segment_context_name(self) -> str:
        if len(self.segment_names) != 1:
            raise InputError(
                f"{self.source.uri}: holds {len(self.segment_names)} segments "
                f"({', '.join(printable(n, 40) for n in self.segment_names[:3])}...); expected one segment per file"
            )
        return self.segment_names[0]


def as_source(path_or_source: str | SegmentSource) -> SegmentSource:
    return path_or_source if isinstance(path_or_source, SegmentSource) else resolve_one(path_or_source)


def read_keys(path_or_source: str | SegmentSource, verified: bool = False) -> SegmentKeys:
    """`verified`: the file is one a run read whole and its fingerprint still matches
    (`detect.waymo.source_check`); a local v1 file is then read without TensorFlow, as are the
    frames `iter_frames` reads with these keys."""
    source = as_source(path_or_source)
    if source.format == "v2":
        keys: parquet.ParquetKeys | tfrecord.TFRecordKeys = parquet.read_keys(source, parquet.open_parquet(source))
        labels = _camera_box_sibling(source)
    else:
        v1_keys = tfrecord.read_keys(source, verified)
        count = v1_keys.num_camera_labels
        keys = v1_keys
        labels = f"camera_labels in the frames ({count} boxes)" if count else None
    names, index = keys.segment_names, keys.index
    if len(index) == 0:
        raise InputError(f"{source.uri}: holds no camera images")
    return SegmentKeys(source, names, index, labels, keys)


def iter_frames(
    path_or_source: str | SegmentSource,
    frame_filter: FrameFilter = FrameFilter(),
    keys: SegmentKeys | None = None,
) -> Iterator[CameraFrame]:
    """Camera images in (timestamp, camera) order, streamed in bounded memory.

    Pass the `keys` from `read_keys` when you have them: a v1 file is then read once more, not twice.
    """
    source = keys.source if keys is not None else as_source(path_or_source)
    reader = parquet if source.format == "v2" else tfrecord
    return reader.iter_frames(source, frame_filter, keys.reader_keys if keys is not None else None)


def read_images(path_or_source: str | SegmentSource, wanted: Collection[tuple[int, CameraName]]) -> Iterator[CameraFrame]:
    """The `wanted` (timestamp, camera) images of a segment file, in one pass: a v1 file is read
    once up to the last of them (no key pass), a v2 file's row groups between the first and the
    last. For a few images to draw (the report's close-ups), not for processing; images the file
    does not hold are not yielded."""
    source = as_source(path_or_source)
    keys = {(int(t), int(c)) for t, c in wanted}
    if not keys:
        return iter(())
    if source.format == "v1":
        return tfrecord.iter_wanted(source, keys)
    times = [t for t, _ in keys]
    span = FrameFilter(cameras=tuple(sorted({CameraName(c) for _, c in keys})), min_timestamp=min(times),
                       max_timestamp=max(times))
    return (f for f in parquet.iter_frames(source, span) if (f.frame_timestamp_micros, int(f.camera_name)) in keys)


def _camera_box_sibling(source: SegmentSource) -> str | None:
    sibling = sibling_component(source.path, "camera_box")
    if sibling is None:
        return None
    if source.filesystem.get_file_info(sibling).type != pafs.FileType.File:
        return None
    return f"camera_box file {sibling}"
