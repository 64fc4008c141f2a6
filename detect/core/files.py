"""Reading files we did not write ourselves: regular files only, bounded, JSON strict.

Every file `detect` reads back (a manifest, a model's sidecar, a TF.js `model.json`, a class map,
a cache's facts, a frame of a results folder) may have been edited, replaced by a link or a FIFO,
or crafted. One place decides what is refused, so that every reader fails the same way: with an
`UnreadableFileError` whose message is one line naming the file and what is wrong with it.

- Only regular files are read: a FIFO or a device would block or never end (`/dev/zero`), a folder
  is not a file. The file is opened non-blocking and checked with `fstat` on the open descriptor,
  so a FIFO swapped in after a check cannot block the read.
- `follow_links=False` refuses a symbolic link (in a results folder a link could pull in a file
  from anywhere on the machine); a model's own files may be links (a shared model folder).
- JSON is strict: NaN, Infinity and numbers that overflow a float are refused (they are not JSON,
  and one NaN makes a mean or a sort silently wrong), and so is nesting deeper than Python's
  parser can follow (a 100,000-deep array raises RecursionError inside `json.loads`).
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from detect.core.errors import InputError

JSON_LIMIT = 64 * 1024 * 1024  # bytes: our biggest JSON (a TF.js model.json) is a few hundred KB


class UnreadableFileError(InputError):
    """A file is not a regular file, too large, or not what its reader expects; one line naming it."""


def open_regular(path: Path, *, follow_links: bool = True) -> int:
    """An open read-only descriptor of `path`, which must be a regular file (the caller closes it)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if not follow_links and Path(path).is_symlink():
            raise UnreadableFileError(f"{path} is a symbolic link; only regular files are read here") from None
        raise UnreadableFileError(f"{path} cannot be read: {err.strerror or err}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise UnreadableFileError(f"{path} is {kind}; only regular files are read here")
    return fd


def read_regular(path: Path, *, limit: int, follow_links: bool = True) -> bytes:
    """The bytes of the regular file `path`, refused when it holds more than `limit` bytes."""
    fd = open_regular(path, follow_links=follow_links)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise UnreadableFileError(f"{path} is {size:,} bytes, more than the {limit:,} expected of it")
        chunks, total = [], 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as err:
                raise UnreadableFileError(f"{path} cannot be read: {err.strerror or err}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # the file grew while we read it
                raise UnreadableFileError(f"{path} holds more than the {limit:,} bytes expected of it")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} does not fit a float")
    return value


def parse_json(data: bytes | str, source: str) -> Any:
    """Strict JSON (see the module docstring); `source` names where it came from in the error."""
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise UnreadableFileError(f"{source} is nested too deeply to be read") from None
    except UnicodeDecodeError:
        raise UnreadableFileError(f"{source} is not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise UnreadableFileError(f"{source} is not valid JSON ({err.msg}, line {err.lineno} column {err.colno})") from None
    except ValueError as err:
        raise UnreadableFileError(f"{source} is not valid JSON ({err})") from None


def read_json(path: Path, *, limit: int = JSON_LIMIT, follow_links: bool = True) -> Any:
    """The JSON value in the regular file `path` (strict; see the module docstring)."""
    return parse_json(read_regular(path, limit=limit, follow_links=follow_links), str(path))


def read_json_object(path: Path, *, limit: int = JSON_LIMIT,  # parsed JSON: the caller checks what it takes
                     follow_links: bool = True) -> dict[str, Any]:
    """`read_json`, which must be a JSON object."""
    data = read_json(path, limit=limit, follow_links=follow_links)
    if not isinstance(data, dict):
        raise UnreadableFileError(f"{path} holds a JSON {type(data).__name__}, not an object")
    return data
