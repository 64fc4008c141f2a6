"""A crafted detections table to track: two cars crossing one camera, a person on another, a faint box."""

from __future__ import annotations

import numpy as np

from detect.track import TrackerParams

PARAMS = TrackerParams.for_threshold(0.3)
CAR, TRUCK, PERSON, BENCH = 3, 8, 1, 15


def moving_boxes(frames: int = 12):
    """Two cars crossing camera 1 (one called a truck on frame 5), a person on camera 2, a faint box."""
    rows = []
    for f in range(frames):
        ts = 1_000_000 + f * 100_000
        rows.append((ts, 1, CAR, 0.9, (100 + 12 * f, 300, 220 + 12 * f, 380)))
        rows.append((ts, 1, TRUCK if f == 5 else CAR, 0.8, (900 - 12 * f, 310, 1020 - 12 * f, 400)))
        rows.append((ts, 2, PERSON, 0.7, (400, 200 + 5 * f, 450, 320 + 5 * f)))
        rows.append((ts, 2, BENCH, 0.1, (10, 10, 40, 40)))  # below the low score: never tracked
    ts, cam, cls, score, box = zip(*rows, strict=True)
    return np.array(ts), np.array(cam), np.array(cls), np.array(score), np.array(box, float)
