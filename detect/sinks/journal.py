"""An append-only record of finished frames: what makes `--resume` exact after a crash or kill.

A frame is appended only after its annotated image is safely on disk (atomic rename), so every
line names a frame whose outputs are complete. A kill mid-line leaves a torn last line, which
`load` drops (and `Journal` truncates) so that frame is simply done again.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np

from detect.core.atomic import atomic_write_bytes
from detect.core.cameras import CameraName
from detect.core.errors import OutputError, first_line
from detect.core.files import JSON_LIMIT, UnreadableFileError, open_regular, read_regular
from detect.core.records import Detections, FrameKey, FrameResult

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1
STATE_DIR = ".detect"
JOURNAL = "journal.jsonl"
SETTINGS = "settings.json"


def journal_path(segment_dir: Path) -> Path:
    return segment_dir / STATE_DIR / JOURNAL


def encode(result: FrameResult) -> str:
    d = result.detections
    return json.dumps(
        {
            "t": result.key.frame_timestamp_micros,
            "c": int(result.key.camera_name),
            "w": result.width,
            "h": result.height,
            # float32 -> Python float is exact and JSON round-trips it: a resumed table matches.
            "b": [[float(v) for v in box] for box in d.xyxy],
            "s": [float(v) for v in d.scores],
            "k": [int(v) for v in d.class_ids],
            "l": list(d.labels),
            **({"x": d.invalid} if d.invalid else {}),  # absent when 0: older journals read the same
        },
        separators=(",", ":"),
    )


def decode(line: str, segment: str) -> FrameResult:
    """One journal line as the frame it records; ValueError (or KeyError, TypeError) for a line no
    run wrote (torn by a kill, or edited: a number that does not fit its column, a class id below 0,
    a camera Waymo does not have)."""
    data = json.loads(line)
    arrays = (np.asarray(data["b"], np.float32).reshape(-1, 4), np.asarray(data["s"], np.float32),
              np.asarray([_whole(c, (0, INT32_MAX), "class id") for c in data["k"]], np.int32))
    for array in arrays:
        array.flags.writeable = False  # `load` hands the same frames to every reader of an unchanged file
    detections = Detections(*arrays, tuple(data["l"]), invalid=int(data.get("x", 0)))
    # an edited line: no Waymo key (int64) holds a timestamp past int64
    key = FrameKey(segment, _whole(data["t"], (INT64_MIN, INT64_MAX), "timestamp"),
                   CameraName(_whole(data["c"], (0, INT32_MAX), "camera")))
    return FrameResult(key, _whole(data["w"], (0, INT32_MAX), "width"), _whole(data["h"], (0, INT32_MAX), "height"),
                       detections)


def _whole(value: object, bounds: tuple[int, int], what: str) -> int:
    """`value` as an int within `bounds` (a JSON number: 7 or 7.0); ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} {value!r} is not a number")
    number = int(value)  # OverflowError for infinity, ValueError for NaN
    if number != value or not bounds[0] <= number <= bounds[1]:
        raise ValueError(f"{what} {value!r} is outside {bounds[0]} to {bounds[1]}")
    return number


# The last journal read, by the identity of the file read (device, inode, size, modification time)
# and the segment: `detect redraw` reads one journal, then its evaluation and its report do (51 MB
# for a 1,000-image tiled segment, ~1.1 s to parse each time). A file appended to, replaced or
# touched since is parsed again.
_last: tuple[tuple[int, int, int, int, str], dict[FrameKey, FrameResult], int, bool] | None = None
_last_lock = threading.Lock()


def load(segment_dir: Path, segment: str) -> tuple[dict[FrameKey, FrameResult], int]:
    """Finished frames by key (a dict of the caller's own), and the byte length of the intact part
    of the file: up to a torn last line, or to the first entry that cannot be read (`decode`), which
    a resumed run does again. A journal that is a link, a FIFO or a folder raises
    `UnreadableFileError` (never followed or waited on)."""
    results, intact, _ = _load(segment_dir, segment)
    return results, intact


def finished(segment_dir: Path, segment: str) -> dict[FrameKey, FrameResult] | None:
    """Every frame the journal records, for readers of finished results (eval, redraw, the report);
    None when one of its entries cannot be read (an edited journal: they read the folder as one
    without a journal, whichever entry it is). A torn last line (a run still writing) is left out."""
    results, _, damaged = _load(segment_dir, segment)
    return None if damaged else results


def _load(segment_dir: Path, segment: str) -> tuple[dict[FrameKey, FrameResult], int, bool]:
    global _last
    path = journal_path(segment_dir)
    results: dict[FrameKey, FrameResult] = {}
    if not path.exists() and not path.is_symlink():
        return results, 0, False
    intact, damaged = 0, False
    with os.fdopen(open_regular(path, follow_links=False), "rb") as handle:
        info = os.fstat(handle.fileno())
        identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, segment)
        with _last_lock:
            if _last is not None and _last[0] == identity:
                return dict(_last[1]), _last[2], _last[3]
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            try:
                result = decode(raw.decode(), segment)
            except (ValueError, KeyError, TypeError, ArithmeticError):
                damaged = True
                break
            results[result.key] = result
            intact += len(raw)
    with _last_lock:
        _last = (identity, results, intact, damaged)
    return dict(results), intact, damaged


class Journal:
    """Append finished frames, one line each, flushed so a SIGKILL loses at most the frame in hand."""

    def __init__(self, segment_dir: Path, intact_bytes: int = 0) -> None:
        path = journal_path(segment_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size != intact_bytes:
            with path.open("r+b") as torn:
                torn.truncate(intact_bytes)
        self._handle = path.open("ab")

    def append(self, result: FrameResult) -> None:
        self._handle.write(encode(result).encode() + b"\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def save_settings(segment_dir: Path, settings: dict) -> None:
    """Atomically: a kill never leaves a half-written settings file."""
    atomic_write_bytes(segment_dir / STATE_DIR / SETTINGS, json.dumps(settings, indent=2, sort_keys=True).encode())


def load_settings(segment_dir: Path) -> dict | None:
    """The settings an earlier run recorded; None when there are none. An unreadable, empty or
    corrupt file raises: it must never let a resume go ahead unchecked."""
    path = segment_dir / STATE_DIR / SETTINGS
    if not path.exists():
        return None
    try:  # a link or a FIFO in its place is refused, never followed or waited on
        data = json.loads(read_regular(path, limit=JSON_LIMIT, follow_links=False))
    except (OSError, ValueError, UnreadableFileError) as err:
        why = getattr(err, "strerror", None) or first_line(err)
        reason = "is empty" if path.is_file() and path.stat().st_size == 0 else f"is unreadable ({why})"
        raise OutputError(f"{path} {reason}: cannot check the earlier run's settings; use --overwrite to start again") from None
    if not isinstance(data, dict):
        raise OutputError(f"{path} is corrupt (not a JSON object): cannot check the earlier run's settings; "
                          f"use --overwrite to start again")
    return data


def differences(old: dict, new: dict) -> list[str]:
    """Human-readable differences between two settings dicts, for the resume refusal."""
    keys = sorted(set(old) | set(new))
    return [f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in keys if old.get(k) != new.get(k)]


__all__ = ["Journal", "differences", "finished", "journal_path", "load", "load_settings", "save_settings"]

