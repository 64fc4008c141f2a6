"""Whether a segment file is still the one a run read: a cheap fingerprint recorded in the manifest
and checked by `detect redraw` before it reads the images again.

The fingerprint is the file's size and a SHA-256 of its first and last MiB (with the size): the
header and, for Parquet, the footer that indexes every row group; for a TFRecord, the first and
last records with their CRCs. Hashing the whole file would read a 0.3-1 GB segment a second time
at the end of every run (1 TB over a split); two MiB cost the same for any file, local or remote.
It is a check against a file replaced or rewritten, not a proof against one forged to match. The
modification time is recorded, not compared: a copied or re-downloaded file with the same bytes
is the same file.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.fs as pafs

from detect.core.errors import InputError
from detect.waymo.sources import split_uri

SAMPLE = 1 << 20  # bytes hashed at each end


@dataclasses.dataclass(frozen=True)
class SourceFingerprint:
    size: int
    sampled_sha256: str

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value: object) -> SourceFingerprint | None:
        """The fingerprint a manifest records (shared input: anything else is None)."""
        if not isinstance(value, Mapping):
            return None
        size, digest = value.get("size"), value.get("sampled_sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            return None
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return None
        return cls(size, digest)


def take_fingerprint(uri: str) -> SourceFingerprint | None:
    """The file's fingerprint; None when it is not a file that can be read (gone, a folder)."""
    try:
        fs, path = split_uri(uri)
        info = fs.get_file_info(path)
        if info.type != pafs.FileType.File or info.size is None:
            return None
        digest = hashlib.sha256(str(info.size).encode())
        with fs.open_input_file(path) as handle:
            digest.update(handle.read(min(SAMPLE, info.size)))
            if info.size > SAMPLE:
                handle.seek(max(SAMPLE, info.size - SAMPLE))
                digest.update(handle.read())
    except (OSError, ValueError, pa.ArrowException, InputError):  # any failure reads as "cannot tell"
        return None
    return SourceFingerprint(int(info.size), digest.hexdigest())


def source_problem(uri: str, recorded: SourceFingerprint | None) -> str | None:
    """Why the file at `uri` is not the one a run read, as the end of a sentence (`is gone`, `has
    changed since the run (...)`), or None when it is the same (or the run recorded no fingerprint)."""
    try:
        fs, path = split_uri(uri)
        info = fs.get_file_info(path)
    except (OSError, ValueError, pa.ArrowException, InputError):  # a URI that no longer resolves
        return "cannot be reached"
    if info.type == pafs.FileType.NotFound:
        return "is gone"
    if info.type != pafs.FileType.File:
        return "is no longer a file"
    if recorded is None:
        return None
    now = take_fingerprint(uri)
    if now is None:
        return "cannot be read"
    if now.size != recorded.size:
        return f"has changed since the run ({recorded.size:,} bytes then, {now.size:,} now)"
    if now != recorded:
        return "has changed since the run (same size, other bytes)"
    return None
