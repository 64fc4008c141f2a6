"""Turn what the user typed (file, directory, glob, URI) into segment files with a known format."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import struct
import urllib.parse
from typing import Literal

import pyarrow as pa
import pyarrow.fs as pafs

from detect.core.errors import InputError, UnsupportedURIError, first_line
from detect.waymo.schema import CAMERA_IMAGE_COMPONENT, component_of_filename

Format = Literal["v2", "v1"]
PARQUET_SUFFIXES = (".parquet",)
TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords")
_PARQUET_MAGIC = b"PAR1"


@dataclasses.dataclass(frozen=True)
class SegmentSource:
    """One segment file: where it is, how to open it, and which Waymo format it holds."""

    uri: str
    path: str
    format: Format
    filesystem: pafs.FileSystem = dataclasses.field(repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rpartition("/")[2]

    @property
    def is_local(self) -> bool:
        return isinstance(self.filesystem, pafs.LocalFileSystem)


def is_remote(uri: str) -> bool:
    """Whether opening `uri` would go through a network filesystem (any scheme but a plain
    `file:///path`): a results folder's recorded paths are opened only when they are not."""
    if "://" not in uri:
        return False
    parts = urllib.parse.urlsplit(uri)
    return parts.scheme.lower() != "file" or bool(parts.netloc or parts.query or parts.fragment)


def absolute(uri: str) -> str:
    """A local path made absolute (what a record keeps: the folder a command ran in is not
    recorded); a URI as it is."""
    return uri if "://" in uri else _abspath(uri)


def recorded_path(source: SegmentSource) -> str:
    """How a record names a segment file: a local one by its absolute path, a remote one by its URI."""
    return source.path if source.is_local and "://" not in source.uri else source.uri


def split_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and the path inside it; plain paths are local."""
    if "://" not in uri:
        local = pafs.LocalFileSystem()
        return local, _abspath(uri)
    scheme = uri.split("://", 1)[0].lower()
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, ValueError, OSError, ImportError) as err:
        hint = {
            "gs": "pyarrow needs GCS support (pip install 'pyarrow[gcs]' or a pyarrow wheel built with GCS)",
            "s3": "pyarrow needs S3 support and credentials (AWS_* environment variables)",
        }.get(scheme, "supported schemes are local paths, file://, gs:// and s3://")
        raise UnsupportedURIError(f"{uri}: cannot open {scheme}:// here ({first_line(err)}); {hint}") from err


def resolve(uri: str) -> list[SegmentSource]:
    """Every segment file named by a file, a directory, a glob or a URI, sorted by path.

    A directory means every segment in it; a split directory holding `camera_image/` means that
    folder; v2 component files other than `camera_image` in a directory are ignored.
    """
    fs, path = split_uri(uri)
    if any(ch in path for ch in "*?["):
        return _resolve_glob(uri, fs, path)
    info = _stat(fs, path, uri)
    if info.type == pafs.FileType.Directory:
        return _resolve_directory(uri, fs, path)
    return [_source(uri, fs, path)]


def resolve_one(uri: str) -> SegmentSource:
    """Exactly one segment file; a directory with several is refused with a hint."""
    sources = resolve(uri)
    if len(sources) != 1:
        raise InputError(
            f"{uri}: holds {len(sources)} segment files; give one file, or use `detect run` for many"
        )
    return sources[0]


def _resolve_directory(uri: str, fs: pafs.FileSystem, path: str) -> list[SegmentSource]:
    nested = f"{path.rstrip('/')}/{CAMERA_IMAGE_COMPONENT}"
    if fs.get_file_info(nested).type == pafs.FileType.Directory:
        path, uri = nested, f"{uri.rstrip('/')}/{CAMERA_IMAGE_COMPONENT}"
    entries = fs.get_file_info(pafs.FileSelector(path, recursive=False))
    sources = []
    for entry in sorted(entries, key=lambda e: e.path):
        if entry.type != pafs.FileType.File or entry.base_name.startswith("."):
            continue
        if not _looks_like_segment(entry.base_name):
            continue
        component = component_of_filename(entry.base_name.rsplit(".", 1)[0])
        if component is not None and component != CAMERA_IMAGE_COMPONENT:
            continue
        sources.append(_source(_join_uri(uri, entry.base_name), fs, entry.path))
    if not sources:
        raise InputError(
            f"{uri}: no Waymo segment files here (expected *.parquet camera_image files or *.tfrecord)"
        )
    return sources


def _resolve_glob(uri: str, fs: pafs.FileSystem, path: str) -> list[SegmentSource]:
    base = path
    while any(ch in base for ch in "*?["):
        base = base.rpartition("/")[0]
    selector = pafs.FileSelector(base or "/", recursive=True, allow_not_found=True)
    matches = [
        e for e in fs.get_file_info(selector)
        if e.type == pafs.FileType.File and fnmatch.fnmatchcase(e.path, path)
    ]
    if not matches:
        raise InputError(f"{uri}: no files match this pattern")
    prefix = uri[: len(uri) - len(path)] if "://" in uri else ""
    return [_source(prefix + e.path if prefix else e.path, fs, e.path) for e in sorted(matches, key=lambda e: e.path)]


def _source(uri: str, fs: pafs.FileSystem, path: str) -> SegmentSource:
    return SegmentSource(uri=uri, path=path, format=detect_format(uri, fs, path), filesystem=fs)


def detect_format(uri: str, fs: pafs.FileSystem, path: str) -> Format:
    """By suffix first, by the first bytes otherwise."""
    lower = path.lower()
    if lower.endswith(PARQUET_SUFFIXES):
        return "v2"
    if lower.endswith(TFRECORD_SUFFIXES) or ".tfrecord" in lower:
        return "v1"
    try:
        with fs.open_input_stream(path) as stream:
            head = stream.read(12)
    except OSError as err:
        raise InputError(f"{uri}: cannot read ({first_line(err)})") from err
    if head.startswith(_PARQUET_MAGIC):
        return "v2"
    if looks_like_tfrecord(head):
        return "v1"
    raise InputError(f"{uri}: not a Waymo segment (neither Parquet nor TFRecord content)")


def looks_like_tfrecord(head: bytes) -> bool:
    """A TFRecord starts with a uint64 length and the masked CRC32C of those 8 bytes."""
    if len(head) < 12:
        return False
    (stored,) = struct.unpack("<I", head[8:12])
    return stored == masked_crc32c(head[:8])


def masked_crc32c(data: bytes) -> int:
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _looks_like_segment(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(PARQUET_SUFFIXES) or lower.endswith(TFRECORD_SUFFIXES) or ".tfrecord" in lower


def _stat(fs: pafs.FileSystem, path: str, uri: str) -> pafs.FileInfo:
    try:
        info = fs.get_file_info(path)
    except OSError as err:
        raise InputError(f"{uri}: cannot access ({first_line(err)})") from err
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"{uri}: no such file or directory")
    return info


def _join_uri(uri: str, name: str) -> str:
    return f"{uri.rstrip('/')}/{name}"


def _abspath(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))
