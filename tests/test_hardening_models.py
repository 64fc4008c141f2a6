"""Hostile model files and settings (issue 31): every one ends with correct output or one line
naming the file and what is wrong with it; nothing hangs, nothing outside the model is read."""

from __future__ import annotations

import tracemalloc

import numpy as np

from detect.model.nms import class_aware_nms


def _spread_boxes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    xy = rng.uniform(0, 4000, (n, 2))
    return np.concatenate([xy, xy + 10], 1).astype(np.float32), rng.uniform(0, 1, n).astype(np.float32), rng.integers(1, 3, n)


def _nms_peak_bytes(n: int) -> int:
    xyxy, scores, classes = _spread_boxes(n)
    tracemalloc.start()
    try:
        class_aware_nms(xyxy, scores, classes, 0.5)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_tile_merge_nms_memory_grows_with_the_boxes_not_their_square():
    # --tile 64 --tile-overlap 0.89 on a 480x320 image gives ~11,600 tile boxes; a dense N x N
    # float64 IoU matrix of them is 1 GB (8.2 GB peak RSS measured), one row is 93 KB.
    small, large = _nms_peak_bytes(3000), _nms_peak_bytes(12000)
    # (measured: 1.4 MB and 1.3 MB peak; the dense version's would be 72 MB and 1.15 GB)
    assert large < 8 * small  # 4x the boxes: at most ~4x the memory, where a square gives 16x
    assert large < 12000 * 1000  # about a KB per box, not 12,000 float64s per box
