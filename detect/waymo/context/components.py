"""A v2 component beside a segment's camera_image file, read within bounds: its file size, its rows
and their decoded bytes checked from the footer before any row is read, only the columns asked for
(their types checked), its text read as dictionaries and its longest value checked, only the
segment's rows kept. Anything else is one InputError naming the file."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from detect.core.errors import InputError, first_line
from detect.waymo.schema import SEGMENT, sibling_component
from detect.waymo.sources import SegmentSource

Kind = Literal["text", "whole", "number", "numbers"]
_EXPECTED = {"text": "text", "whole": "whole numbers", "number": "numbers", "numbers": "lists of numbers"}

# Waymo's per-segment components read here are 10 KB-5 MB (lidar_box, projected_lidar_box); a file
# or a decoded column set past these is not one segment's context.
MAX_FILE_BYTES = 256 << 20
MAX_DECODED_BYTES = 512 << 20
# Rows a frame may add (a busy frame has a few hundred 3D labels, each projected into 1-3 cameras),
# and the rows any file may hold whatever its frames.
ROWS_PER_FRAME = 4_000
MIN_ROWS = 100_000
MAX_TEXT_BYTES = 256  # an id (Waymo's: 22 characters), a segment name, a condition ("Dawn/Dusk")


@dataclasses.dataclass(frozen=True)
class ComponentFile:
    """Where a segment's `component` file is (`uri`), and its filesystem and path there."""

    component: str
    uri: str
    path: str
    filesystem: pafs.FileSystem = dataclasses.field(repr=False, compare=False)


def find_sibling(source: SegmentSource, component: str) -> ComponentFile | None:
    """The segment's `component` file beside its camera_image file, when there is one (a regular
    file: a folder or a FIFO of that name is none)."""
    sibling = sibling_component(source.path, component)
    if sibling is None:
        return None
    try:
        info = source.filesystem.get_file_info(sibling)
    except (OSError, ValueError, pa.ArrowException):
        return None
    if info.type != pafs.FileType.File:
        return None
    prefix = source.uri[: len(source.uri) - len(source.path)] if "://" in source.uri else ""
    return ComponentFile(component, prefix + sibling, sibling, source.filesystem)


def read_component(file: ComponentFile, columns: Mapping[str, Kind], segment: str, frames: int) -> pa.Table:
    """The `columns` (all required, `SEGMENT` among them) of the segment's rows, text columns as
    dictionaries; refused when the file is not this component, or larger than `frames` frames make."""
    uri, what = file.uri, file.component
    texts = [name for name, kind in columns.items() if kind == "text"]
    try:
        size = file.filesystem.get_file_info(file.path).size or 0
        if size > MAX_FILE_BYTES:
            raise InputError(f"{uri}: {size:,} bytes, more than a {what} component of one segment "
                             f"({MAX_FILE_BYTES:,} at most); not read")
        handle = file.filesystem.open_input_file(file.path)
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{uri}: not a readable {what} Parquet file ({first_line(err)})") from None
    with handle:
        try:
            parquet = pq.ParquetFile(handle, read_dictionary=texts)
        except (pa.ArrowException, OSError, ValueError) as err:
            raise InputError(f"{uri}: not a readable {what} Parquet file ({first_line(err)})") from None
        _check_footer(uri, what, parquet, columns, frames)
        try:
            table = parquet.read(columns=list(columns), use_threads=False)
        except (pa.ArrowException, OSError, ValueError) as err:
            raise InputError(f"{uri}: cannot read the {what} rows ({first_line(err)})") from None
    for name in texts:
        longest = _longest(table.column(name))
        if longest > MAX_TEXT_BYTES:
            raise InputError(f"{uri}: column {name} holds a value of {longest:,} bytes, "
                             f"expected at most {MAX_TEXT_BYTES}: not a {what} component")
    for name in columns:
        if table.column(name).null_count:
            raise InputError(f"{uri}: column {name} holds null values: not a {what} component")
    return table.filter(pc.equal(table.column(SEGMENT), segment))


def _check_footer(uri: str, what: str, parquet: pq.ParquetFile, columns: Mapping[str, Kind], frames: int) -> None:
    """The columns and their types, the rows and their decoded bytes, from the footer alone."""
    schema = parquet.schema_arrow
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise InputError(f"{uri}: not a {what} component (no column {', '.join(missing)})")
    for name, kind in columns.items():
        if not _is(kind, schema.field(name).type):
            raise InputError(f"{uri}: column {name} holds {schema.field(name).type}, expected {_EXPECTED[kind]}: "
                             f"not a {what} component")
    rows, cap = parquet.metadata.num_rows, MIN_ROWS + ROWS_PER_FRAME * frames
    if rows > cap:
        raise InputError(f"{uri}: holds {rows:,} rows, far more than {frames:,} frame(s) can ({cap:,} at most); "
                         "not read")
    decoded = _decoded_bytes(parquet.metadata, columns)
    if decoded > MAX_DECODED_BYTES:
        raise InputError(f"{uri}: its columns decode to {decoded:,} bytes, more than a {what} component of one "
                         f"segment ({MAX_DECODED_BYTES:,} at most); not read")


def _is(kind: Kind, arrow: pa.DataType) -> bool:
    if pa.types.is_dictionary(arrow):  # a text column read as a dictionary
        arrow = arrow.value_type
    if kind == "text":
        return pa.types.is_string(arrow) or pa.types.is_large_string(arrow)
    if kind == "whole":
        return pa.types.is_integer(arrow)
    if kind == "number":
        return pa.types.is_integer(arrow) or pa.types.is_floating(arrow)
    lists = pa.types.is_list(arrow) or pa.types.is_large_list(arrow) or pa.types.is_fixed_size_list(arrow)
    return lists and (pa.types.is_floating(arrow.value_type) or pa.types.is_integer(arrow.value_type))


def _decoded_bytes(metadata: pq.FileMetaData, columns: Mapping[str, Kind]) -> int:
    """The uncompressed bytes the footer states for the chunks of `columns` (a list's chunk is named
    by its column and the list's inner path)."""
    total = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            path = chunk.path_in_schema
            if any(path == name or path.startswith(name + ".") for name in columns):
                total += max(chunk.total_uncompressed_size, 0)
    return total


def _longest(column: pa.ChunkedArray) -> int:
    """The longest text value's bytes (read from the dictionaries: the rows are never expanded)."""
    longest = 0
    for chunk in column.chunks:
        values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
        if len(values):
            longest = max(longest, int(pc.max(pc.binary_length(values)).as_py() or 0))
    return longest
