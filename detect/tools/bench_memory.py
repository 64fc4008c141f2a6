"""`make bench`'s memory runs: peak RSS of fresh processes (the pipeline on a small and a 5x larger
segment; the v2 reader alone), so one process's history does not count."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from detect.tools.bench_rows import MemoryRuns, ReaderPeak

ROOT = Path(__file__).resolve().parents[2]


_PEAK_RSS_PROBE = """
import sys
from pathlib import Path
out, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if kind == "segment":
    from detect.cli import main
    code = main(args)
else:
    from detect.waymo.readers import iter_frames
    code = 0 if sum(1 for _ in iter_frames(args[0])) and "tensorflow" not in sys.modules else 1
# VmHWM belongs to this process image alone; getrusage's ru_maxrss would also count the parent's
# memory at fork time, which Linux carries across exec.
peak = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]
Path(out).write_text(peak[0] if peak else "")
sys.exit(code)
"""


def _peak_rss_mb(kind: str, args: list[str], scratch: Path) -> float:
    scratch.mkdir(parents=True, exist_ok=True)
    report = scratch / f"peak_rss_{kind}.txt"
    proc = subprocess.run([sys.executable, "-c", _PEAK_RSS_PROBE, str(report), kind, *args], cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {' '.join(args)} exited with {proc.returncode}")
    return int(report.read_text()) / 1024


def peak_rss_mb(segment: Path, model: Path, out: Path) -> float:
    """Peak RSS of a fresh `detect segment` process with default outputs."""
    return _peak_rss_mb("segment", ["segment", str(segment), "--model", str(model), "--out", str(out),
                                    "--overwrite", "--quiet"], out)


def reader_peak_rss_mb(segment: Path, scratch: Path) -> float:
    """Peak RSS of a fresh process streaming every image of `segment` through the v2 reader
    (TensorFlow not imported): what the reader itself costs, whatever the file size."""
    return _peak_rss_mb("reader", [str(segment)], scratch)


def _row_groups(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_row_groups


def memory(args: argparse.Namespace, segments: dict[int, Path], model: Path) -> MemoryRuns:
    """Peak RSS of fresh processes: the pipeline on a small and a 5x larger segment, the reader."""
    small = peak_rss_mb(segments[args.images], model, args.out / "rss")
    big = peak_rss_mb(segments[args.big_images], model, args.out / "rss")
    big_file = segments[args.big_images]
    reader = ReaderPeak(file=big_file.name, file_mb=big_file.stat().st_size / 1e6, row_groups=_row_groups(big_file),
                        peak_rss_mb=reader_peak_rss_mb(big_file, args.out / "rss"))
    return MemoryRuns(images=args.images, small_mb=small, big_images=args.big_images, big_mb=big, reader=reader)
