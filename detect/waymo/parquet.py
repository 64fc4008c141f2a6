"""Stream camera images out of a Waymo v2 `camera_image` Parquet file in bounded memory."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.records import CameraFrame
from detect.waymo.schema import (
    CAMERA,
    CAMERA_IMAGE_COMPONENT,
    IMAGE,
    KEY_COLUMNS,
    REQUIRED_IMAGE_COLUMNS,
    SEGMENT,
    TIMESTAMP,
    components_in,
    type_kind,
)
from detect.waymo.selection import FrameFilter, KeyIndex, in_order, select
from detect.waymo.sources import SegmentSource

# pyarrow reads column chunks through a buffered stream of this size instead of whole: a
# single-row-group file of 1 GB never lands in memory at once.
READ_BUFFER_BYTES = 4 << 20
ROWS_PER_BATCH = 4
# Images held back while restoring (timestamp, camera) order in an unsorted file.
REORDER_CAPACITY = 128


@dataclasses.dataclass(frozen=True)
class ParquetKeys:
    """The key columns of a camera_image file and where its row groups start."""

    segment_names: tuple[str, ...]
    index: KeyIndex
    row_group_starts: np.ndarray


def open_parquet(source: SegmentSource) -> pq.ParquetFile:
    """Open for streaming and check it is a camera_image component with Waymo's column types."""
    try:
        handle = source.filesystem.open_input_file(source.path)
        parquet = pq.ParquetFile(handle, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
    except (pa.ArrowException, OSError, ValueError) as err:  # ValueError: undecodable names in the metadata
        raise InputError(f"{source.uri}: not a readable Parquet file ({first_line(err)})") from err
    check_schema(source.uri, parquet.schema_arrow)
    return parquet


def check_schema(uri: str, schema: pa.Schema) -> None:
    names = schema.names
    if IMAGE not in names:
        found = components_in(names)
        what = f"a {', '.join(found)} component file" if found else "not a Waymo component file"
        raise InputError(
            f"{uri}: is {what}; expected a {CAMERA_IMAGE_COMPONENT} component "
            f"(column {IMAGE!r} missing)"
        )
    missing = [c for c in REQUIRED_IMAGE_COLUMNS if c not in names]
    if missing:
        raise InputError(f"{uri}: camera_image file without column(s) {', '.join(missing)}")
    for column, kinds in REQUIRED_IMAGE_COLUMNS.items():
        actual = schema.field(column).type
        if type_kind(actual) not in kinds:
            raise InputError(
                f"{uri}: column {column!r} has type {actual}, expected {' or '.join(kinds)}"
            )


def read_keys(source: SegmentSource, parquet: pq.ParquetFile) -> ParquetKeys:
    """Only the three small key columns: enough to sort, filter and count without any image."""
    try:
        table = parquet.read(columns=list(KEY_COLUMNS))
    except (pa.ArrowException, OSError, ValueError) as err:  # ValueError: undecodable names in the metadata
        raise InputError(f"{source.uri}: cannot read key columns ({first_line(err)})") from err
    if table.column(SEGMENT).null_count or table.column(TIMESTAMP).null_count or table.column(CAMERA).null_count:
        raise InputError(f"{source.uri}: key columns hold null values")
    cameras = table.column(CAMERA).to_numpy()
    unknown = sorted(set(cameras.tolist()) - {int(c) for c in CameraName})
    if unknown:
        raise InputError(f"{source.uri}: unknown {CAMERA} value(s) {unknown}; expected 1-5")
    sizes = [parquet.metadata.row_group(i).num_rows for i in range(parquet.metadata.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = table.num_rows
    index = KeyIndex(
        timestamps=table.column(TIMESTAMP).to_numpy().astype(np.int64),
        cameras=table.column(CAMERA).to_numpy().astype(np.int64),
        positions=np.arange(n, dtype=np.int64),
    )
    try:
        names = tuple(sorted(set(table.column(SEGMENT).to_pylist())))
    except UnicodeDecodeError:
        raise InputError(f"{source.uri}: column {SEGMENT} holds bytes that are not UTF-8 text") from None
    return ParquetKeys(names, index, starts)


def iter_frames(source: SegmentSource, frame_filter: FrameFilter = FrameFilter(),
                keys: ParquetKeys | None = None) -> Iterator[CameraFrame]:
    """Camera images in (timestamp, camera) order, reading only the row groups that hold them."""
    parquet = open_parquet(source)
    keys = keys or read_keys(source, parquet)
    rows = select(keys.index, frame_filter)
    yield from in_order(rows.tolist(), lambda wanted: _scan(source, parquet, keys, wanted), REORDER_CAPACITY)


def _scan(source: SegmentSource, parquet: pq.ParquetFile, keys: ParquetKeys,
          wanted: set[int]) -> Iterator[tuple[int, CameraFrame]]:
    starts = keys.row_group_starts
    wanted_sorted = np.fromiter(wanted, dtype=np.int64)
    groups = sorted(set(np.searchsorted(starts, wanted_sorted, side="right") - 1))
    columns = [SEGMENT, TIMESTAMP, CAMERA, IMAGE]
    for group in groups:
        position = int(starts[group])
        try:
            batches = parquet.iter_batches(batch_size=ROWS_PER_BATCH, row_groups=[group], columns=columns, use_threads=False)
            for batch in batches:
                image_column = batch.column(3)
                for i in range(batch.num_rows):
                    if position in wanted:
                        yield position, CameraFrame(
                            segment_context_name=batch.column(0)[i].as_py(),
                            frame_timestamp_micros=batch.column(1)[i].as_py(),
                            camera_name=batch.column(2)[i].as_py(),
                            jpeg=image_column[i].as_py() or b"",
                        )
                    position += 1
        except (pa.ArrowException, OSError, ValueError) as err:
            raise InputError(f"{source.uri}: cannot read row group {group} ({first_line(err)})") from err
