"""A run file read back: `run.json` at the top of a run's output (`run-shard-I-of-N.json`, one per
shard, when shards share it), what `detect run` did with each input. The runner writes it
(`write_run_record`) and reads its last one back to carry outcomes over; the report shows every one.

A run file may be edited like the rest of a results folder: one that cannot be used reads as
none (the segments' manifests still say what is complete), and an entry that is not a JSON
object is left out. Values a page shows stay JSON, checked where they are shown.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from detect.core.atomic import atomic_write_bytes
from detect.results.layout_version import RUN, stamped
from detect.results.results_folder import json_object, read_results_json, whole

RUN_FILE = "run.json"
RUN_FILES = "run*.json"  # run.json, and run-shard-I-of-N.json of a sharded run


def run_file_name(shard: tuple[int, int] | None) -> str:
    """One run file per shard, so shards sharing an output directory never write the same file."""
    return RUN_FILE if shard is None else f"run-shard-{shard[0]}-of-{shard[1]}.json"


@dataclasses.dataclass(frozen=True, eq=False)
class RunRecord:
    """One run file: its name, its inputs' entries (each a JSON object, in the file's order), its
    tally and engine, and the whole JSON object."""

    name: str
    entries: tuple[Mapping[str, object], ...]
    data: Mapping[str, object]  # the whole JSON object as written

    @classmethod
    def from_json(cls, data: Mapping[str, object], name: str) -> RunRecord:
        entries = data.get("segments")
        listed = entries if isinstance(entries, list) else []
        return cls(name, tuple(e for e in listed if isinstance(e, dict)), data)

    def to_json(self) -> dict[str, object]:
        """The run file as written: `layout_version` first, then its keys in their order."""
        return stamped(self.data)

    @property
    def tally(self) -> dict[str, int | None]:
        """`this_run`'s counts of inputs by outcome (done, done_with_failures, skipped, failed): a whole
        number, 0 when not recorded, None when edited past use."""
        this = json_object(self.data.get("this_run"))
        return {k: whole(this.get(k, 0)) for k in ("done", "done_with_failures", "skipped", "failed")}

    @property
    def engine(self) -> str | None:
        engine = self.data.get("engine")
        return engine if isinstance(engine, str) else None

    def by_input(self) -> dict[str, Mapping[str, object]]:
        """The entries that name their input (a string `path`), by that input."""
        return {path: e for e in self.entries if isinstance(path := e.get("path"), str)}

    def failed(self) -> list[Mapping[str, object]]:
        """The entries of inputs that failed."""
        return [e for e in self.entries if e.get("status") == "failed"]


def write_run_record(path: Path, record: RunRecord) -> None:
    """The run file at `path`, atomically (`RunRecord.to_json`)."""
    atomic_write_bytes(path, (json.dumps(record.to_json(), indent=2) + "\n").encode())


def read_run_record(path: Path) -> RunRecord | None:
    """The run file at `path`, or None when it is missing or cannot be used (`read_results_json`)."""
    data = read_results_json(path, RUN)
    return None if data is None else RunRecord.from_json(data, path.name)


def read_run_records(results: Path) -> list[RunRecord]:
    """Every usable run file at the top of `results`, by name (one per shard of a sharded run)."""
    read = (read_run_record(path) for path in sorted(results.glob(RUN_FILES)))
    return [record for record in read if record is not None]
