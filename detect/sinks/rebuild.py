"""`detect gif RESULTS`: rebuild the animations of every segment found under a results folder.

Each segment is locked while its animations are rebuilt, as every writer of a segment directory
is: a segment another `detect` process is writing is left out with a note (its frames are still
coming), never half-animated. A segment with a link planted where results are read or written
(frames/, frames/<CAMERA>, .detect/mosaic/<CAMERA>, ...) is refused, as a run refuses it: pictures
from outside the folder never make its animations. The temp files a killed run or rebuild left
are swept, as `--resume` sweeps them. The mosaic's caption is the segment's name as its manifest records
it, not the folder's (a renamed segment keeps its caption).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from detect.core.errors import InputError, OutputError
from detect.sinks.animations import DEFAULT_WIDTH, rebuild_animations
from detect.sinks.frames import FRAMES_DIR
from detect.sinks.layout import SegmentLock, is_marked, no_links, temp_files
from detect.sinks.results_folder import read_manifest
from detect.sinks.run_folder import find_segment_folders


@dataclasses.dataclass(frozen=True)
class Rebuilt:
    written: list[Path]
    notes: list[str]  # segments left out, one line each


def find_segment_dirs(results_dir: str | os.PathLike[str]) -> list[Path]:
    """Every segment directory at or under `results_dir` that holds a `frames/` directory, sorted
    (found as `detect eval` and `detect report` find segments: `find_segment_folders`)."""
    return find_segment_folders(Path(results_dir)).with_frames()


def recorded_name(segment_dir: Path) -> str | None:
    """The segment's name as its manifest records it (None when there is no readable one)."""
    try:  # the one reader: a FIFO, a link or a 100,000-deep manifest is no name, never a hang or a crash
        return read_manifest(segment_dir).recorded_name
    except InputError:
        return None


def rebuild_all(
    results_dir: str | os.PathLike[str],
    *,
    width: int = DEFAULT_WIDTH,
    fps: float | None = None,
    mp4: bool = False,
    workers: int | None = None,
) -> Rebuilt:
    """Rebuild every segment's animations under `results_dir`; busy segments are left out."""
    found = find_segment_folders(Path(results_dir))
    segments = found.with_frames()
    if not segments:
        raise InputError(found.nothing_found(Path(results_dir), f"{FRAMES_DIR}/ folder"))
    written: list[Path] = []
    notes: list[str] = list(found.skipped)
    failed: list[str] = []
    for segment_dir in segments:
        try:
            no_links(segment_dir)
        except OutputError as err:
            notes.append(f"{err}; left out")
            failed.append(str(err))
            continue
        try:
            lock = SegmentLock(segment_dir) if is_marked(segment_dir) else None
        except OutputError as err:
            notes.append(f"{err}; left out")
            continue
        try:  # an unreadable frame is a note; a segment without a readable one is left out with a note
            if lock is not None:
                for stale in list(temp_files(segment_dir)):
                    stale.unlink()  # half-written files of a run, redraw or rebuild that was killed
            written += rebuild_animations(segment_dir, width=width, fps=fps, mp4=mp4, workers=workers,
                                          segment_context_name=recorded_name(segment_dir), notes=notes)
        except InputError as err:
            notes.append(f"{err}; left out")
            failed.append(str(err))
        finally:
            if lock is not None:
                lock.release()
    if failed and len(failed) == len(segments):
        raise InputError(failed[0] if len(failed) == 1 else f"{failed[0]} (and {len(failed) - 1} more segment(s))")
    return Rebuilt(written, notes)
