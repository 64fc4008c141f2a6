"""A segment's output directory: where it is, who may write it, and what `--overwrite` may delete.

Every directory a segment writes is `OUT/<segment_dir_name(name)>`, resolved and proven to lie
under OUT (a symlink planted at that name is refused). One process at a time writes it: an
exclusive `flock` on `.detect/lock`, released by the kernel when the process dies. `--overwrite`
deletes only files this tool writes (frames, mosaic tiles, animations, table, manifest, bookkeeping), only in a
directory that carries its marker (`.detect/settings.json`), and never follows a symlink.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from detect.core.atomic import is_temp_path
from detect.core.cameras import CameraName
from detect.core.errors import OutputError
from detect.core.names import segment_dir_name
from detect.results.frames import FRAME_FORMATS, FRAMES_DIR
from detect.results.ground_truth import GROUND_TRUTH_FILE
from detect.results.journal import JOURNAL as JOURNAL_FILE
from detect.results.journal import SETTINGS as SETTINGS_FILE
from detect.results.journal import STATE_DIR
from detect.results.manifest import MANIFEST_FILE
from detect.results.mosaic_tiles import TILES_DIR
from detect.results.table import DETECTIONS_FILE

LOCK_FILE = "lock"
FRAME_SUFFIXES = tuple(f".{f}" for f in FRAME_FORMATS)
# Top-level files a run writes (the animations' names are the cameras' and the mosaic's).
_ANIMATION_STEMS = frozenset([c.name for c in CameraName] + ["mosaic"])
# What `detect eval` writes (into a segment directory it evaluates on its own, or a run's top). In a
# segment directory they describe its old outputs, so --overwrite removes them too.
EVAL_FILE, MATCHES_FILE, PR_CURVES_FILE = "eval.json", "matches.parquet", "pr_curves.png"
THRESHOLDS_FILE, TRACKING_FILE, IMAGES_FILE = "thresholds.png", "tracking.parquet", "images.parquet"
RANGE_BANDS_FILE = "range_bands.png"  # AP50 and recall by range band, when the results have ranges
_TOP_FILES = frozenset({DETECTIONS_FILE, MANIFEST_FILE, GROUND_TRUTH_FILE, EVAL_FILE, MATCHES_FILE, PR_CURVES_FILE,
                        THRESHOLDS_FILE, TRACKING_FILE, IMAGES_FILE, RANGE_BANDS_FILE})


def contained(root: Path, path: Path) -> Path:
    """`path` if, resolved, it lies strictly under `root` resolved; OutputError otherwise."""
    base = Path(root).resolve()
    target = Path(path).resolve()
    if target == base or not target.is_relative_to(base):
        raise OutputError(f"{path}: resolves to {target}, outside the output directory {base}; refusing to write there")
    return Path(path)


def segment_dir(root: Path, segment_context_name: str) -> Path:
    """`root/<safe name>`, checked to stay under `root` (see `detect.core.names`), with none of the
    folders and bookkeeping files the tool writes in it being a symlink that could lead out."""
    return no_links(contained(root, Path(root) / segment_dir_name(segment_context_name)))


def no_links(directory: Path) -> Path:
    """`directory`, refused (OutputError) when a folder or bookkeeping file detect writes or reads
    in it (frames/, frames/<CAMERA>, .detect/, .detect/mosaic/<CAMERA>, ...) is a symlink that
    could lead out: what a run, `detect redraw` and `detect gif` write there, and read back, stays
    in the folder."""
    for relative in _OWN_PATHS:
        if (directory / relative).is_symlink():
            raise OutputError(f"{directory / relative} is a symlink: detect writes only real folders and files under "
                              f"--out; remove it or choose another --out")
    return directory


def real_folder(path: Path) -> Path:
    """`path` as a real folder (made if missing): a symlink there, or a file, is refused, so
    nothing is written through a link planted in a results folder."""
    if path.is_symlink():
        raise OutputError(f"{path} is a symlink: detect writes only real folders and files; remove it")
    path.mkdir(exist_ok=True)
    if not path.is_dir():
        raise OutputError(f"{path} is not a folder; remove it")
    return path


def real_file(path: Path) -> Path:
    """`path` for a file about to be replaced: refused when it, or its folder, is a symlink."""
    for place in (path, path.parent):
        if place.is_symlink():
            raise OutputError(f"{place} is a symlink: detect writes only real folders and files; remove it")
    return path


# What the tool creates inside a segment directory and then writes into or appends to.
_TILES = f"{STATE_DIR}/{TILES_DIR}"  # the mosaic's tiles (`detect.results.mosaic_tiles`)
_OWN_PATHS = (STATE_DIR, f"{STATE_DIR}/{LOCK_FILE}", f"{STATE_DIR}/{SETTINGS_FILE}", f"{STATE_DIR}/{JOURNAL_FILE}",
              FRAMES_DIR, *(f"{FRAMES_DIR}/{c.name}" for c in CameraName), "report",
              _TILES, *(f"{_TILES}/{c.name}" for c in CameraName))


def is_marked(directory: Path) -> bool:
    """True when `directory` carries this tool's marker (it wrote there before)."""
    return (directory / STATE_DIR / SETTINGS_FILE).is_file()


def has_content(directory: Path) -> bool:
    """Anything in `directory` besides an empty state folder or its lock file."""
    if not directory.is_dir():
        return False
    for entry in directory.iterdir():
        if entry.name != STATE_DIR or entry.is_symlink() or not entry.is_dir():
            return True
        if any(p.name != LOCK_FILE for p in entry.iterdir()):
            return True
    return False


class ExclusiveLock:
    """An exclusive `flock` on `path` for the life of this object (or the process: the kernel
    releases it when the process dies, even by `kill -9`); the holder's pid is written in the file."""

    def __init__(self, path: Path, busy: str, where: Path) -> None:
        """`busy` is the refusal, with `{who}` for the holder; `where` names the folder in errors."""
        self._fd: int | None = None  # set first: a lock that could not be created has nothing to release
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as err:
            raise OutputError(f"{where}: cannot create the output directory ({err.strerror or err})") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(self._fd)
            os.close(self._fd)
            self._fd = None
            who = f"another detect process (pid {holder})" if holder else "another detect process"
            raise OutputError(busy.replace("{who}", who)) from None
        try:
            os.ftruncate(self._fd, 0)
            os.write(self._fd, str(os.getpid()).encode())
        except OSError:
            self.release()
            raise

    def release(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is None:
            return
        self._fd = None
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        with contextlib.suppress(OSError):
            os.close(fd)

    def __enter__(self) -> ExclusiveLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()


class SegmentLock(ExclusiveLock):
    """One process at a time writes a segment directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        super().__init__(self.directory / STATE_DIR / LOCK_FILE,
                         f"{self.directory} is being written by {{who}}; wait for it to finish or choose another --out",
                         self.directory)


class RunLock(ExclusiveLock):
    """One `detect run` at a time keeps a run file (one per shard: shards of one run run side by side)."""

    def __init__(self, root: Path, run_file: str) -> None:
        super().__init__(Path(root) / STATE_DIR / f"{run_file}.lock",
                         f"{root} is busy: {{who}} is running there and keeps {run_file}; wait for it to finish, "
                         f"or give this run another --out", Path(root))


def clear_outputs(directory: Path) -> int:
    """Delete what a run of this tool wrote in `directory` (`--overwrite`); the number of files.

    Refuses a directory without the marker. Files it does not know (a user's notes) stay.
    """
    if not is_marked(directory):
        raise OutputError(
            f"{directory} exists but was not written by detect (no {STATE_DIR}/{SETTINGS_FILE}); "
            f"refusing to delete anything in it: move it away or choose another --out"
        )
    removed = 0
    for path in owned_files(directory):
        path.unlink()
        removed += 1
    for folder in (FRAMES_DIR, _TILES):
        for sub in _real_dirs(directory / folder):
            _rmdir_if_empty(sub)
        _rmdir_if_empty(directory / folder)
    return removed


def owned_files(directory: Path) -> Iterator[Path]:
    """Files in `directory` that this tool writes, found without following any symlink."""
    for entry in _entries(directory):
        if entry.is_file(follow_symlinks=False) and (entry.name in _TOP_FILES or is_temp_path(Path(entry.path))
                                                      or _is_animation(entry.name)):
            yield Path(entry.path)
    for entry in _entries(directory / STATE_DIR):
        if entry.is_file(follow_symlinks=False) and (entry.name in (SETTINGS_FILE, JOURNAL_FILE)
                                                      or is_temp_path(Path(entry.path))):
            yield Path(entry.path)
    for camera_dir in [*_real_dirs(directory / FRAMES_DIR), *_real_dirs(directory / _TILES)]:
        for entry in _entries(camera_dir):
            if entry.is_file(follow_symlinks=False) and (_is_frame(entry.name) or is_temp_path(Path(entry.path))):
                yield Path(entry.path)


def has_pictures(directory: Path) -> bool:
    """Whether `directory` holds frames or animations a run drew (found without following links)."""
    frames = directory / FRAMES_DIR
    return any(_is_animation(p.name) or (p.parent.parent == frames and _is_frame(p.name)) for p in owned_files(directory))


def temp_files(directory: Path) -> Iterator[Path]:
    """Half-written files a killed run left behind (hidden temp names), without following symlinks."""
    return (p for p in owned_files(directory) if is_temp_path(p))


def _is_animation(name: str) -> bool:
    stem, _, suffix = name.rpartition(".")
    return suffix in ("gif", "mp4") and stem in _ANIMATION_STEMS


def _is_frame(name: str) -> bool:
    stem, dot, suffix = name.rpartition(".")
    return bool(dot) and f".{suffix}" in FRAME_SUFFIXES and stem.lstrip("-").isdigit()


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    if directory.is_symlink() or not directory.is_dir():
        return []
    with os.scandir(directory) as it:
        return list(it)


def _real_dirs(directory: Path) -> list[Path]:
    return [Path(e.path) for e in _entries(directory)
            if e.is_dir(follow_symlinks=False) and e.name in CameraName.__members__]


def _rmdir_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        if directory.is_dir() and not directory.is_symlink():
            directory.rmdir()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
