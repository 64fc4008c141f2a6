"""Atomic file output: write beside the target under a hidden temp name, then `os.replace`.

Readers see the old file or the whole new one, never a part. The temp file is created exclusively
and never through a link (`O_EXCL | O_NOFOLLOW`), with a new file's mode (0666 less the umask).
Used by the results writers (`detect.results`) and by the runtime cache (`detect.model.runtimes`).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path


def temp_path_for(path: Path) -> Path:
    """A hidden, unique sibling of `path` that keeps its suffix (ffmpeg picks the muxer from it)."""
    return path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")


# `temp_path_for`'s names exactly: a user's own `.notes.tmp` is never taken for one of ours.
_TEMP_NAME = re.compile(r"\..*\.[0-9a-f]{8}\.tmp(\.[A-Za-z0-9]+)?")


def is_temp_path(path: Path) -> bool:
    return _TEMP_NAME.fullmatch(path.name) is not None


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp path to write; it replaces `path` on success and is removed on error."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_path_for(final)
    try:
        yield temp
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write `data` to `path` so readers see the old file or the whole new one, never a part."""
    with atomic_path(path) as temp:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        with open(fd, "wb") as f:
            f.write(data)
    return Path(path)


def new_file_mode() -> int:
    """The mode a new file gets here: 0666 less the umask."""
    umask = os.umask(0o022)  # the only way to read it; set back at once
    os.umask(umask)
    return 0o666 & ~umask
