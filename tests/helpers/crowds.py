"""Crafted crowded scenes: a street crowd like MOT17's and a driving scene with far cars, each with
labels and detections (hits, false alarms, misses), on a grey photo-like ground."""

from __future__ import annotations

import numpy as np

from detect.core.records import Detections, Labels, WaymoType

PERSON, CAR = 1, 3


def ground(width: int, height: int, seed: int = 0) -> np.ndarray:
    """A grey gradient with noise: no pixel near a chip's color."""
    rng = np.random.default_rng(seed)
    y = np.linspace(60, 190, height)[:, None]
    grey = np.clip(y + rng.normal(0, 12, (height, width)), 0, 255).astype(np.uint8)
    return np.repeat(grey[:, :, None], 3, 2)


def _scene(boxes: np.ndarray, types: np.ndarray, classes: np.ndarray, labels: tuple[str, ...], seed: int,
           found: float, false_alarms: int, width: int, height: int) -> tuple[Detections, Labels]:
    rng = np.random.default_rng(seed)
    n = len(boxes)
    hit = rng.random(n) < found
    size = boxes[:, 2:] - boxes[:, :2]
    shifted = boxes[hit] + np.tile(size[hit] * rng.uniform(-0.06, 0.06, (hit.sum(), 2)), 2)
    fa_size = size[rng.integers(0, n, false_alarms)] * rng.uniform(0.6, 1.2, (false_alarms, 1))
    fa_x = rng.uniform(0, width - fa_size[:, 0])
    fa_y = rng.uniform(height * 0.35, height - fa_size[:, 1])
    fas = np.stack([fa_x, fa_y, fa_x + fa_size[:, 0], fa_y + fa_size[:, 1]], 1)
    xyxy = np.concatenate([shifted, fas]).astype(np.float32)
    scores = np.concatenate([rng.uniform(0.35, 0.95, hit.sum()), rng.uniform(0.3, 0.6, false_alarms)])
    cls = np.concatenate([classes[hit], rng.choice(classes, false_alarms)]).astype(np.int32)
    names = tuple(labels[int(np.flatnonzero(classes == c)[0])] for c in cls)
    return (Detections(xyxy, scores, cls, names),
            Labels(boxes.astype(np.float32), types, np.ones(n), tuple(f"obj{i}" for i in range(n))))


def street_crowd(seed: int = 0) -> tuple[np.ndarray, Detections, Labels]:
    """A 1920x1080 pedestrian street: 26 people from far (80 px tall) to near (420 px), many side by
    side; 70% found, 6 false alarms."""
    width, height = 1920, 1080
    rng = np.random.default_rng(seed)
    n = 26
    bottom = rng.uniform(520, 1060, n)
    tall = 80 + (bottom - 520) / 540 * 340
    x0 = rng.uniform(0, width - 0.4 * tall)
    boxes = np.stack([x0, bottom - tall, x0 + 0.4 * tall, bottom], 1)
    detections, labels = _scene(boxes, np.full(n, int(WaymoType.PEDESTRIAN)), np.full(n, PERSON), ("person",) * n,
                                seed + 1, 0.7, 6, width, height)
    return ground(width, height, seed), detections, labels


def driving_scene(seed: int = 0) -> tuple[np.ndarray, Detections, Labels]:
    """A 1920x1280 street ahead, as busy as the real Waymo frame's busiest camera (a dozen chips): a
    row of eight far cars (25-70 px) at the horizon, three near cars and four pedestrians; half of
    them found, 3 false alarms."""
    width, height = 1920, 1280
    rng = np.random.default_rng(seed)
    far_w = rng.uniform(25, 70, 8)
    far_x = np.cumsum(far_w * rng.uniform(1.0, 1.6, 8)) + 300
    far = np.stack([far_x, 640 - far_w * 0.7, far_x + far_w, np.full(8, 640.0)], 1)
    near_w = rng.uniform(300, 600, 3)
    near_x = np.array([0, 700, 1400.0])
    near = np.stack([near_x, 900 - near_w * 0.6, np.minimum(near_x + near_w, width - 1), np.full(3, 900.0)], 1)
    walk_h = rng.uniform(120, 300, 4)
    walk_x = rng.uniform(0, width - 120, 4)
    walkers = np.stack([walk_x, 1000 - walk_h, walk_x + walk_h * 0.4, np.full(4, 1000.0)], 1)
    boxes = np.concatenate([far, near, walkers])
    types = np.array([int(WaymoType.VEHICLE)] * 11 + [int(WaymoType.PEDESTRIAN)] * 4)
    classes = np.array([CAR] * 11 + [PERSON] * 4)
    detections, labels = _scene(boxes, types, classes, ("car",) * 11 + ("person",) * 4, seed + 1, 0.5, 3, width,
                                height)
    return ground(width, height, seed), detections, labels
