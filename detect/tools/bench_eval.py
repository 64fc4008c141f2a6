"""How long `detect eval` takes on a segment of Waymo's size: synthetic results, timed.

    python -m detect.tools.bench_eval --images 1000 --boxes 100     # ~a real segment's worth
    python -m detect.tools.bench_eval --segments 10                  # a run of 1M detection rows, pooled
    python -m detect.tools.bench_eval --context                      # with ranges and conditions: the slices

Writes a results directory (detections.parquet, ground_truth.parquet, journal, manifest) with
`--boxes` detections and `--labels` labels per image, then times `detect eval` on it in a fresh
process and reports its wall and CPU time and peak RSS. `--context` fills the tables' context
columns (every box a range of 2-120 m, each image Day or Night), so eval computes its slices;
without it the columns are null and the slices "not available" (eval as before them).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult, Labels
from detect.results import box_context, journal
from detect.results.ground_truth import GROUND_TRUTH_FILE, write_ground_truth
from detect.results.table import DETECTIONS_FILE, write_table
from detect.waymo.schema import TIMESTAMP

SEGMENT = "1000000000000000000_0000_000_0000_000"
CLASSES = np.array([1, 2, 3, 4, 6, 8])  # person, bicycle, car, motorcycle, bus, truck


def make_results(directory: Path, images: int, boxes: int, labels: int, seed: int = 0, segment: str = SEGMENT,
                 context: bool = False) -> None:
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True)
    keys = [FrameKey(segment, 1_500_000_000_000_000 + (i // 5) * 100_000, CameraName(i % 5 + 1)) for i in range(images)]
    truth, results = {}, []
    for key in keys:
        xy = rng.uniform([0, 0], [1800, 1150], (labels, 2))
        wh = rng.uniform(10, 300, (labels, 2))
        truth[key] = Labels(np.hstack([xy, xy + wh]), rng.choice([1, 2, 4], labels), rng.choice([1, 2], labels),
                            tuple(f"o{i}" for i in range(labels)))
        near = np.hstack([xy, xy + wh])[rng.integers(0, labels, boxes // 2)] + rng.normal(0, 8, (boxes // 2, 4))
        far_xy = rng.uniform([0, 0], [1800, 1150], (boxes - len(near), 2))
        far = np.hstack([far_xy, far_xy + rng.uniform(10, 300, (len(far_xy), 2))])
        xyxy = np.clip(np.vstack([near, far]), 0, [1920, 1280, 1920, 1280]).astype(np.float32)
        xyxy[:, 2:] = np.maximum(xyxy[:, 2:], xyxy[:, :2] + 1)
        scores = np.sort(rng.uniform(0.05, 1.0, boxes))[::-1].astype(np.float32)
        classes = rng.choice(CLASSES, boxes)
        results.append(FrameResult(key, 1920, 1280, Detections(xyxy, scores, classes, tuple(str(c) for c in classes))))
    write_table(directory / DETECTIONS_FILE, results)
    write_ground_truth(directory / GROUND_TRUTH_FILE, truth, keys)
    if context:
        for name in (DETECTIONS_FILE, GROUND_TRUTH_FILE):
            _add_context(directory / name, rng)
    with journal.Journal(directory) as log:
        for result in results:
            log.append(result)
    (directory / "manifest.json").write_text(json.dumps({"segment_context_name": segment,
                                                        "settings": {"draw": {"threshold": 0.5}},
                                                        "model": {"kind": "real", "knows_classes": "COCO label map"}}))


def _add_context(path: Path, rng: np.random.Generator) -> None:
    """A table's context columns filled: ranges of 2-120 m, each image (timestamp) Day or Night."""
    table = pq.read_table(path)
    night = (table.column(TIMESTAMP).to_numpy() // 100_000) % 2 == 1
    columns = box_context.null_columns(table.num_rows)
    columns[box_context.RANGE] = pa.array(rng.uniform(2, 120, table.num_rows).astype(np.float32))
    columns[box_context.RANGE_SOURCE] = pa.array(["ground_plane"] * table.num_rows)
    columns["time_of_day"] = pa.array(np.where(night, "Night", "Day").tolist())
    pq.write_table(box_context.with_context(table, columns), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_eval", description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--boxes", type=int, default=100, help="detections per image")
    parser.add_argument("--labels", type=int, default=20, help="labels per image")
    parser.add_argument("--segments", type=int, default=1, help="segments of a run, evaluated pooled")
    parser.add_argument("--context", action="store_true", help="ranges and conditions in the tables: eval's slices")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        if args.segments == 1:
            directory = Path(scratch) / SEGMENT
            make_results(directory, args.images, args.boxes, args.labels, context=args.context)
        else:
            directory = Path(scratch) / "run"
            for n in range(args.segments):
                name = f"{n + 1:019d}_0000_000_0000_000"
                make_results(directory / name, args.images, args.boxes, args.labels, seed=n, segment=name,
                             context=args.context)
        probe = ("import resource, sys; from detect.cli import main; code = main(['eval', sys.argv[1], '--quiet']); "
                 "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024); sys.exit(code)")
        start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-c", probe, str(directory)], capture_output=True, text=True)
        seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        print(f"detect eval: {args.segments} segment(s) of {args.images} images, {args.boxes} detections and "
              f"{args.labels} labels each ({args.segments * args.images * args.boxes:,} detection rows): "
              f"{seconds:.1f} s wall, {cpu:.1f} s CPU (process start and imports included), "
              f"peak RSS {done.stdout.strip()} MB{', with context (slices)' if args.context else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
