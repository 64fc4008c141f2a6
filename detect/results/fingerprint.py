"""What an evaluation was computed from, so an `eval.json` older than its segment's results shows
as stale: a fingerprint of each segment's `detections.parquet` and `ground_truth.parquet`.

A fingerprint is a file's size, `mtime_ns` and SHA-256. The hash decides whether a file changed:
a rerun that writes the same bytes changes nothing, and a results folder that was copied, zipped or
synced (every mtime new) is not stale. Size and `mtime_ns` are only a shortcut, as git's index uses
them: a file with the recorded size and `mtime_ns` is taken as unchanged without being read, so
checking a run of 1,000 segments costs stats, not gigabytes of hashing. `detect` replaces files
by rename, so a rerun always gives them a new `mtime_ns` and is hashed.

In `eval.json`: `"computed_from": {"<segment folder, relative to the eval.json's folder>":
{"detections.parquet": {"size": ..., "mtime_ns": ..., "sha256": ...}, "ground_truth.parquet": ... or
null}}`; `.` is the eval.json's own folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from detect.results.ground_truth import GROUND_TRUTH_FILE
from detect.results.table import DETECTIONS_FILE

COMPUTED_FROM = "computed_from"
SOURCE_FILES = (DETECTIONS_FILE, GROUND_TRUTH_FILE)
_CHUNK = 1 << 20

Sources = Mapping[str, "Fingerprint | None"]  # file name -> its fingerprint (None: no such file)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    size: int
    mtime_ns: int
    sha256: str

    def same_content(self, other: Fingerprint | None) -> bool:
        return other is not None and (self.size, self.sha256) == (other.size, other.sha256)

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value: object) -> Fingerprint | None:
        """A fingerprint from an eval.json (shared input: anything else is None)."""
        if not isinstance(value, dict):
            return None
        size, mtime, digest = value.get("size"), value.get("mtime_ns"), value.get("sha256")
        if not isinstance(size, int) or not isinstance(mtime, int) or isinstance(size, bool) or isinstance(mtime, bool):
            return None
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return None
        return cls(size, mtime, digest)


def fingerprint(path: Path, known: Fingerprint | None = None) -> Fingerprint | None:
    """`path`'s fingerprint (None: no such file, or not one that can be read); `known`'s hash is
    kept when size and mtime_ns match."""
    try:
        stat = os.stat(path)
        if known is not None and (known.size, known.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            return known
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:  # the reader that follows says what is wrong with the file
        return None
    return Fingerprint(stat.st_size, stat.st_mtime_ns, digest.hexdigest())


def segment_sources(directory: Path) -> dict[str, Fingerprint | None]:
    """The fingerprints of a segment's detections and labels, taken before they are read."""
    return {name: fingerprint(Path(directory) / name) for name in SOURCE_FILES}


def computed_from(segments: Iterable[tuple[Path, Sources]], base: Path) -> dict[str, object]:
    """The `computed_from` entry of an eval.json written into `base`."""
    entries = {}
    for directory, sources in segments:
        where = Path(directory).resolve()
        here = Path(base).resolve()
        name = where.relative_to(here).as_posix() if where.is_relative_to(here) else str(where)
        entries[name] = {file: (f.to_json() if f else None) for file, f in sources.items()}
    return {COMPUTED_FROM: entries}


def recorded_sources(evaluation: Mapping[str, object]) -> dict[str, dict[str, Fingerprint | None]] | None:
    """What an eval.json says it was computed from, by relative segment folder; None when it does
    not say (written before fingerprints were recorded, or edited). Absolute paths and `..` are
    left out: a results folder is checked only inside itself."""
    entries = evaluation.get(COMPUTED_FROM)
    if not isinstance(entries, dict):
        return None
    recorded: dict[str, dict[str, Fingerprint | None]] = {}
    for folder, files in entries.items():
        relative = PurePosixPath(folder)
        if relative.is_absolute() or ".." in relative.parts or not isinstance(files, dict):
            continue
        recorded[folder] = {name: Fingerprint.from_json(files.get(name)) for name in SOURCE_FILES}
    return recorded


def changed_files(recorded: Mapping[str, Sources], current: Mapping[str, Sources]) -> list[str]:
    """The files (`<folder>/<file>`, the folder left out for `.`) whose content differs between
    what an evaluation recorded and what is there now; pure."""
    changed = []
    for folder, files in recorded.items():
        now = current.get(folder, {})
        for name, then in files.items():
            present = now.get(name)
            if (then.same_content(present) if then is not None else present is None):
                continue
            changed.append(name if folder == "." else f"{folder}/{name}")
    return changed


def current_sources(base: Path, recorded: Mapping[str, Sources]) -> dict[str, dict[str, Fingerprint | None]]:
    """Fingerprints of the recorded files as they are now (hashed only when size or mtime moved)."""
    return {folder: {name: fingerprint(Path(base) / folder / name, known) for name, known in files.items()}
            for folder, files in recorded.items()}
