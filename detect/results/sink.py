"""The incremental writers' shared shape: `Sink` (close on success, abort on error) and `TempFileSink`
(one file under a hidden temp name, renamed into place at close). One-shot atomic writes: `detect.core.atomic`."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Any

from detect.core.atomic import temp_path_for


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
