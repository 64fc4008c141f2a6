"""Where the segments of a results folder are: one finder for `detect eval`, `detect report`,
`detect export` and `detect gif`, so every command sees the same segments in a run folder.

A segment folder is a directory holding a `manifest.json` or a `frames/` folder (what `detect
segment` writes); the search does not look inside one. It looks up to `MAX_DEPTH` levels below the
folder given (a run, a split or shard folder above it, the segments), skips hidden folders (`.detect`,
`.git`), never follows a symlink, and stops after `MAX_FOLDERS` folders: a results folder is shared
input, and a mistyped path (`detect eval /`) must end in seconds with a word, not walk a disk.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from detect.core.errors import InputError
from detect.results.frames import FRAMES_DIR
from detect.results.manifest import MANIFEST_FILE

# Levels below the folder given: run/split/shard/segment is 3; one more for a folder holding runs.
MAX_DEPTH = 4
# A run of a whole dataset is ~2,000 segment folders; the walk does not enter them.
MAX_FOLDERS = 100_000


@dataclasses.dataclass(frozen=True)
class SegmentFolders:
    """The segment folders found, sorted, and one line for each place left out and why."""

    folders: list[Path]
    skipped: list[str]

    def with_manifest(self) -> list[Path]:
        """The folders holding a manifest (what eval and report read)."""
        return [f for f in self.folders if (f / MANIFEST_FILE).is_file()]

    def nothing_found(self, results: Path, what: str = MANIFEST_FILE) -> str:
        """Why a command has nothing to read under `results`: one line."""
        why = f"; {self.skipped[0]}" if self.skipped else ""
        return f"{results}: no segment results here (no folder with a {what} up to {MAX_DEPTH} levels down{why})"

    def with_frames(self) -> list[Path]:
        """The folders holding annotated frames (what `detect gif` rebuilds from)."""
        return [f for f in self.folders if (f / FRAMES_DIR).is_dir()]


def find_segment_folders(results: Path, max_depth: int = MAX_DEPTH, max_folders: int = MAX_FOLDERS) -> SegmentFolders:
    """Every segment folder at or under `results` (see the module docstring); InputError when
    `results` is not a folder."""
    root = Path(results)
    if not root.is_dir():
        raise InputError(f"{root}: no such results directory")
    if _is_segment(root):  # the folder given is followed even when it is a link: the user named it
        return SegmentFolders([root], [])
    found: list[Path] = []
    skipped: list[str] = []
    level, visited, deeper = [root], 0, False
    for depth in range(1, max_depth + 1):
        below: list[Path] = []
        for folder in level:
            for entry in _subfolders(folder, skipped):
                visited += 1
                if visited > max_folders:
                    skipped.append(f"{root}: stopped looking for segments after {max_folders:,} folders; "
                                   f"give the run folder itself")
                    return SegmentFolders(sorted(found), skipped)
                path = Path(entry.path)
                if entry.is_symlink():
                    if _is_segment(path):
                        skipped.append(f"{path}: a symlink, not followed; left out")
                elif _is_segment(path):
                    link = path / MANIFEST_FILE
                    if link.is_symlink():
                        skipped.append(f"{link}: a symlink, not followed; left out")
                    else:
                        found.append(path)
                elif depth < max_depth:
                    below.append(path)
                else:
                    deeper = deeper or any(True for _ in _subfolders(path, []))
        level = below
    if deeper and not found:
        skipped.append(f"{root}: looked for segments {max_depth} levels deep, no further")
    return SegmentFolders(sorted(found), skipped)


def _is_segment(path: Path) -> bool:
    return (path / MANIFEST_FILE).exists() or (path / MANIFEST_FILE).is_symlink() or (path / FRAMES_DIR).is_dir()


def _subfolders(folder: Path, skipped: list[str]) -> list[os.DirEntry[str]]:
    """The non-hidden folders (and links to folders) in `folder`, sorted; an unreadable one is noted."""
    try:
        with os.scandir(folder) as entries:
            return sorted((e for e in entries if not e.name.startswith(".") and e.is_dir()), key=lambda e: e.name)
    except OSError as err:
        skipped.append(f"{folder}: cannot be read ({err.strerror or err}); left out")
        return []
