"""Segment names from input files are untrusted: the one rule that turns them into directory names.

A segment name (`key.segment_context_name` in v2, `context.name` in v1) comes from the file, so it
can be anything: `..`, an absolute path, 10,000 bytes, a newline. It becomes a path only through
`segment_dir_name`:

- a name of 1-128 characters from `A-Z a-z 0-9 _ -` that starts with a letter or a digit (all of
  Waymo's names, `^[0-9]+_[0-9]+_[0-9]+_[0-9]+_[0-9]+$`, and most people's own) is used as it is,
  unless it is a name the tool gives a folder of its own (`frames`, `report`, any case); no dot,
  so no segment can take the name of a file a run writes beside the segments (`run.json`,
  `index.html`, `eval.json`...);
- any other name maps to `renamed-<readable part>-<16 hex digits of its SHA-256>`: safe, stable
  across runs, and different for different names.

The name itself is never changed in the data (tables, manifests keep it as the file has it); only
`printable` shortens and escapes it for one-line messages.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME_CHARS = 128
_SAFE = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{MAX_NAME_CHARS - 1}}}")
# Folders the tool itself makes inside or beside segment directories.
RESERVED = frozenset({"frames", "report"})
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9_-]+")
_READABLE_CHARS = 40
_DIGEST_CHARS = 16
RENAMED_PREFIX = "renamed-"


def is_safe_name(name: str) -> bool:
    """True when `name` is used as its own directory name."""
    return _SAFE.fullmatch(name) is not None and name.casefold() not in RESERVED


def segment_dir_name(segment_context_name: str) -> str:
    """The directory under OUT that holds this segment's outputs (see the module docstring)."""
    if is_safe_name(segment_context_name):
        return segment_context_name
    digest = hashlib.sha256(segment_context_name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    readable = _UNSAFE_RUN.sub("_", segment_context_name).strip("_-")[:_READABLE_CHARS].strip("_-")
    return f"{RENAMED_PREFIX}{readable}-{digest}" if readable else f"{RENAMED_PREFIX}{digest}"


def printable(name: str, limit: int = 80) -> str:
    """`name` for a one-line message: control characters escaped, long names shortened."""
    text = name if name.isprintable() else name.encode("unicode_escape", "backslashreplace").decode("ascii")
    if not text:
        return "(empty name)"
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def counted(count: int, word: str, plural: str | None = None) -> str:
    """"1 box", "3 boxes", "1 frame", "2 frames": the one way a count and its noun are written."""
    return f"{count} {word if count == 1 else plural or (word + 'es' if word.endswith(('s', 'x')) else word + 's')}"
