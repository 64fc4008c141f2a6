"""Atomic file output: write beside the target under a hidden temp name, then `os.replace`."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any


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
        with open(temp, "wb") as f:
            f.write(data)
    return Path(path)


class Sink:
    """Context-manager protocol shared by the incremental writers: `close()` when the block
    succeeds, `abort()` (drop the unfinished file) when it raises."""

    def close(self) -> Any:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class TempFileSink(Sink):
    """A `Sink` that writes one file under a hidden temp name and renames it into place at
    `close()`; on error or `abort()` the temp file goes and the final path is never touched.

    Subclasses write to `self._temp`, count `self.frame_count`, and implement `_finish()` (write
    the file's tail; False when nothing was ever written) and `_discard()` (release what is open).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.frame_count = 0
        self._temp = temp_path_for(self.path)
        self._closed = False

    def close(self) -> Path | None:
        """Finish and rename the file; None (and no file) if nothing was written."""
        if self._closed:
            return self.path if self.frame_count else None
        try:
            if not self._finish():
                self.abort()
                return None
            os.replace(self._temp, self.path)
            self._closed = True
            return self.path
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop everything written so far; the final path is not touched."""
        self._closed = True
        self._discard()
        self._temp.unlink(missing_ok=True)
        self.frame_count = 0

    def _finish(self) -> bool:
        raise NotImplementedError

    def _discard(self) -> None:
        raise NotImplementedError
