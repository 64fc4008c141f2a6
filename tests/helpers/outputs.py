"""What a run wrote, to compare two runs: every output file's bytes, and the detections table."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def output_bytes(directory: Path) -> dict[str, bytes]:
    """Every file a segment's run wrote, by relative path (bookkeeping under .detect/ and the manifest aside)."""
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and ".detect" not in p.parts and p.name != "manifest.json"}


def table(segment_dir: Path) -> pa.Table:
    """The segment's detections.parquet."""
    return pq.read_table(segment_dir / "detections.parquet")
