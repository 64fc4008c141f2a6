"""`detect gif RESULTS`: rebuild the animations of every segment found under a results folder.

Each segment is locked while its animations are rebuilt, as every writer of a segment directory
is: a segment another `detect` process is writing is left out with a note (its frames are still
coming), never half-animated. The mosaic's caption is the segment's name as its manifest records
it, not the folder's (a renamed segment keeps its caption).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from detect.core.errors import InputError, OutputError
from detect.sinks.animations import DEFAULT_WIDTH, rebuild_animations
from detect.sinks.frames import FRAMES_DIR
from detect.sinks.layout import SegmentLock, is_marked
from detect.sinks.manifest import MANIFEST_FILE


@dataclasses.dataclass(frozen=True)
class Rebuilt:
    written: list[Path]
    notes: list[str]  # segments left out, one line each


def find_segment_dirs(results_dir: str | os.PathLike[str]) -> list[Path]:
    """Every directory at or under `results_dir` that holds a `frames/` directory, sorted."""
    root = Path(results_dir)
    if not root.is_dir():
        raise InputError(f"results directory not found: {root}")
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        if FRAMES_DIR in dirnames:
            found.append(Path(dirpath))
            dirnames.clear()  # a segment's own subdirectories hold no further segments
        else:
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found)


def recorded_name(segment_dir: Path) -> str | None:
    """The segment's name as its manifest records it (None when there is no readable one)."""
    try:
        manifest = json.loads((segment_dir / MANIFEST_FILE).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    name = manifest.get("segment_context_name") if isinstance(manifest, dict) else None
    return name if isinstance(name, str) and name else None


def rebuild_all(
    results_dir: str | os.PathLike[str],
    *,
    width: int = DEFAULT_WIDTH,
    fps: float | None = None,
    mp4: bool = False,
    workers: int | None = None,
) -> Rebuilt:
    """Rebuild every segment's animations under `results_dir`; busy segments are left out."""
    segments = find_segment_dirs(results_dir)
    if not segments:
        raise InputError(f"no segment with a {FRAMES_DIR}/ directory under {results_dir}")
    written: list[Path] = []
    notes: list[str] = []
    for segment_dir in segments:
        try:
            lock = SegmentLock(segment_dir) if is_marked(segment_dir) else None
        except OutputError as err:
            notes.append(f"{err}; left out")
            continue
        try:
            written += rebuild_animations(segment_dir, width=width, fps=fps, mp4=mp4, workers=workers,
                                          segment_context_name=recorded_name(segment_dir))
        finally:
            if lock is not None:
                lock.release()
    return Rebuilt(written, notes)
