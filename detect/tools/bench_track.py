"""How long the tracker takes per frame: synthetic moving boxes at a detector's count, timed.

    python -m detect.tools.bench_track --boxes 29 80 --frames 300

Objects drift at random velocities over a 1920x1280 image at 10 Hz, their boxes jittered, a third of
them scored low (the second association stage works too), one in forty replaced every frame (births
and deaths). Only `ByteTracker.update` is timed; the issue cites 2.3 / 6.2 ms per frame at 29 / 80
boxes for a numpy ByteTrack.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from detect.track import ByteTracker, IdAllocator, TrackerParams


def synthetic_frames(boxes: int, frames: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per frame: `[boxes, 4]` xyxy and scores of objects moving at 10 Hz."""
    rng = np.random.default_rng(seed)
    size = np.array([1920.0, 1280.0])
    pos = rng.uniform([0, 0], size, (boxes, 2))
    vel = rng.normal(0, 6, (boxes, 2))
    wh = rng.uniform(20, 200, (boxes, 2))
    score = np.where(rng.random(boxes) < 1 / 3, rng.uniform(0.15, 0.3, boxes), rng.uniform(0.5, 0.95, boxes))
    out = []
    for _ in range(frames):
        reborn = rng.random(boxes) < 1 / 40
        pos[reborn] = rng.uniform([0, 0], size, (int(reborn.sum()), 2))
        pos = np.mod(pos + vel, size)
        centre = pos + rng.normal(0, 1.5, pos.shape)
        out.append((np.concatenate([centre - wh / 2, centre + wh / 2], 1), score.copy()))
    return out


def ms_per_frame(boxes: int, frames: int = 300, seed: int = 0, params: TrackerParams | None = None) -> float:
    """Mean wall time of one `update` (ms), over `frames` frames of `boxes` boxes."""
    data = synthetic_frames(boxes, frames, seed)
    tracker = ByteTracker(params or TrackerParams(), IdAllocator())
    start = time.perf_counter()
    for k, (xyxy, scores) in enumerate(data):
        tracker.update(k * 100_000, xyxy, scores)
    return (time.perf_counter() - start) * 1000 / frames


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, nargs="+", default=[29, 80])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs (a shared machine is noisy)")
    args = parser.parse_args(argv)
    for boxes in args.boxes:
        best = min(ms_per_frame(boxes, args.frames, seed) for seed in range(args.repeats))
        print(f"{boxes} boxes/frame: {best:.2f} ms/frame (best of {args.repeats} x {args.frames} frames)")


if __name__ == "__main__":
    main()
