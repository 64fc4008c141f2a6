"""The render stage alone: median ms of `render_pixels` (draw the frame and the mosaic tile, write
them when frames are on, prepare the animation frame) per camera of a finished segment, with
the boxes and labels its run recorded, at its drawing threshold.

    python -m detect.tools.bench_render RESULTS/<segment> [--source FILE] [--repeats 20] [--frames]

Only public calls, so the same command run against an older checkout (PYTHONPATH) gives the
"before" of a change to the render stage; alternate the two in one session, as the machines here
are shared and noisy.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from detect.engine.spec import SegmentJob, SegmentSettings
from detect.engine.stages import render_pixels
from detect.render.draw import DrawStyle
from detect.results.ground_truth import read_ground_truth
from detect.results.results_folder import finished_frames, read_manifest
from detect.waymo.camera_labels import label_types
from detect.waymo.readers import iter_frames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_render", description=__doc__.splitlines()[0])
    parser.add_argument("segment", type=Path, help="a finished segment folder (with ground_truth.parquet)")
    parser.add_argument("--source", help="its input file (default: the one its manifest names)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--frames", action="store_true", help="also write the frames (as a default run does)")
    args = parser.parse_args(argv)
    manifest = read_manifest(args.segment)
    results = finished_frames(args.segment, manifest.segment_context_name)
    labels = read_ground_truth(args.segment / "ground_truth.parquet")[0]
    settings = SegmentSettings(write_frames=args.frames, style=DrawStyle(threshold=manifest.threshold))
    job = SegmentJob.judged(settings, label_types(labels.values()), None)
    source = args.source or manifest.input_path
    if source is None:
        parser.error(f"{args.segment}: its manifest names no input; pass --source")
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for frame in iter_frames(source):
            if frame.key not in results:
                continue
            image = np.asarray(Image.open(io.BytesIO(frame.jpeg)).convert("RGB"))
            for _ in range(args.repeats):
                canvas = image.copy()
                start = time.perf_counter()
                render_pixels(canvas, frame.key, results[frame.key].detections, Path(scratch), job, labels.get(frame.key))
                times.setdefault(frame.key.camera_name.name, []).append((time.perf_counter() - start) * 1000)
    medians = {camera: statistics.median(ms) for camera, ms in times.items()}
    print(" ".join(f"{camera} {ms:.1f}" for camera, ms in medians.items()),
          f"| mean of the medians {statistics.mean(medians.values()):.1f} ms an image")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
