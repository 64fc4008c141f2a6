"""Which form a results record has: the `layout_version` of manifest.json, eval.json, run.json and
compare.json, and the one place older forms are read through.

Every record `detect` writes carries an integer `layout_version`, its first key (`stamped`). A
record without one was written before versions existed: layout 1. A reader passes what it read
through `upgraded`, one step per version (`STEPS[v - 1]` turns layout v into v + 1), so the code
downstream reads the current form only; a layout newer than this code knows is refused in one line
naming the file (a newer `detect` wrote it: reading it as an older form would guess).

Steps, one per version:
- 1 -> 2: the version is recorded. A layout-1 manifest may come from before a key was written
  (`tracking`, `counts.drawn`, `input.fingerprint`, `model.runtime`): the step writes each missing
  one as `null`, "not recorded", which is what every reader makes of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from detect.core.errors import RecordError

LAYOUT_VERSION = 2
LAYOUT_KEY = "layout_version"
MANIFEST, EVAL, RUN, COMPARE = "manifest", "eval", "run", "compare"  # the records that carry it


def stamped(record: Mapping[str, object]) -> dict[str, object]:
    """`record` as written: the current `layout_version` first, then its own keys."""
    return {LAYOUT_KEY: LAYOUT_VERSION} | {k: v for k, v in record.items() if k != LAYOUT_KEY}


def layout_of(record: Mapping[str, object], source: Path | str) -> int:
    """The record's layout (1 without one); `RecordError` naming `source` when the version is not a
    whole number from 1, or is newer than `LAYOUT_VERSION`."""
    version = record.get(LAYOUT_KEY, 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RecordError(f"{source}: {LAYOUT_KEY}: expected a whole number from 1, got {str(version)[:40]!r}")
    if version > LAYOUT_VERSION:
        raise RecordError(f"{source}: written by a newer detect ({LAYOUT_KEY} {version}; this one reads up to "
                          f"{LAYOUT_VERSION}); read it with that version")
    return version


def upgraded(record: Mapping[str, object], kind: str, source: Path | str) -> dict[str, object]:
    """`record` (a `kind` record read from `source`) in the current layout: each step from its own."""
    current = dict(record)
    for step in STEPS[layout_of(record, source) - 1:]:
        current = step(kind, current)
    return current


def _to_2(kind: str, record: dict[str, object]) -> dict[str, object]:
    if kind == MANIFEST:
        record.setdefault("tracking", None)
        for section, key in (("counts", "drawn"), ("input", "fingerprint"), ("model", "runtime")):
            value = record.get(section)
            if isinstance(value, Mapping) and key not in value:
                record[section] = {**value, key: None}
    return stamped(record)


STEPS: tuple[Callable[[str, dict[str, object]], dict[str, object]], ...] = (_to_2,)
assert len(STEPS) == LAYOUT_VERSION - 1, "one upgrade step per layout version"
