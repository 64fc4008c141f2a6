"""`detect redraw` against the run it replaces: a tiled run at one threshold, its redraw at another,
and a fresh tiled run at that other threshold; prints each command's wall time, the ratio, and
whether the redraw's frames, animations and table are byte-identical to the fresh run's and its
evaluation equal.

    python -m detect.tools.bench_redraw --frames 12 --out /tmp/bench_redraw

The input is the real Waymo frame (`../shared/fixtures/`) repeated `--frames` times at 10 Hz
(5 cameras each: 12 frames are the 60 images of issue 35's measurement) with its labels, each JPEG
tagged so no two images are the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from detect.tools.media import FRAME as DEFAULT_FRAME
from detect.tools.synthetic import repeat_frames, write_frames_tfrecord
from detect.waymo.readers import iter_frames

FRAME = Path(os.environ["DETECT_SHARED"]) / "fixtures" / DEFAULT_FRAME.name if "DETECT_SHARED" in os.environ \
    else DEFAULT_FRAME  # a git worktree names the shared folder, as the tests do
SEGMENT = "redraw_bench"
DRAWN = (".png", ".jpg", ".gif", ".mp4", ".parquet")


def cli(*args: str) -> float:
    """Wall seconds of one `detect` command (a process of its own, as a user runs it). The page
    cache is flushed first, so a command does not pay for writing out the one before it (a tiled
    run leaves ~3 MB of PNG an image to the kernel, written back in the next ~30 s)."""
    os.sync()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "detect.cli", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=os.environ | {"TF_CPP_MIN_LOG_LEVEL": "3"})
    return time.perf_counter() - started


def drawn_files(segment_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(segment_dir)): p.read_bytes() for p in sorted(segment_dir.rglob("*"))
            if p.is_file() and p.suffix in DRAWN and not {".detect", "report"} & set(p.parts)}


def evaluation(segment_dir: Path) -> dict[str, object]:
    data = json.loads((segment_dir / "eval.json").read_text())
    data.pop("computed_from", None)
    return data


def real_labels() -> dict[int, list]:
    """The real frame's camera labels (with their object ids), to carry into every repeated frame."""
    import tensorflow as tf
    from waymo_open_dataset import dataset_pb2

    record = next(iter(tf.data.TFRecordDataset(str(FRAME)))).numpy()
    return {c.name: list(c.labels) for c in dataset_pb2.Frame.FromString(record).camera_labels}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--tile", default="512")
    parser.add_argument("--low", default="0.3")
    parser.add_argument("--high", default="0.4")
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_redraw"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    frames = repeat_frames(list(iter_frames(str(FRAME))), args.frames, segment_context_name=SEGMENT)
    source = write_frames_tfrecord(args.out / f"{SEGMENT}.tfrecord", frames, camera_labels=real_labels())
    run = ["segment", str(source), "--tile", args.tile, "--overwrite", "--quiet"]
    first = cli(*run, "--threshold", args.low, "--out", str(args.out / "low"))
    redraw = cli("redraw", str(args.out / "low" / SEGMENT), "--threshold", args.high, "--quiet")
    fresh = cli(*run, "--threshold", args.high, "--out", str(args.out / "high"))
    a, b = args.out / "low" / SEGMENT, args.out / "high" / SEGMENT
    same = drawn_files(a) == drawn_files(b)
    print(f"{args.frames * 5} images, --tile {args.tile}: run at {args.low} {first:.1f} s; redraw at {args.high} "
          f"{redraw:.1f} s; fresh run at {args.high} {fresh:.1f} s; redraw / fresh run {redraw / fresh:.1%}")
    print(f"frames, animations and table byte-identical: {same}; eval equal: {evaluation(a) == evaluation(b)}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
