"""Per-image counts of HOTA, MOTA and IDF1: summed once over every image they give TrackEval's pooled
values; with bootstrap weights, the scores of the resampled images."""

from __future__ import annotations

import numpy as np
import pytest

from detect.track import TrackEvalFrame, metric_results
from detect.track.frame_scores import FrameCounts, frame_counts, weighted_scores


def random_sequence(rng: np.random.Generator, steps: int, objects: int) -> list[TrackEvalFrame]:
    """Objects drifting right, seen most of the time; a noisy tracker that misses, adds false boxes and
    swaps ids now and then (duplicate and empty label ids included)."""
    start = rng.uniform(50, 800, (objects, 2))
    frames = []
    ids = np.arange(objects) + 10
    for t in range(steps):
        seen = rng.random(objects) < 0.85
        centre = start + [6.0 * t, 0.0]
        labels = np.concatenate([centre - 20, centre + 20], 1)[seen]
        names = tuple(f"o{k}" if k != 1 else "" for k in np.flatnonzero(seen))
        if rng.random() < 0.2:
            ids = rng.permutation(ids)  # a swap of ids between objects
        found = rng.random(objects) < 0.8
        boxes = np.concatenate([centre - 20, centre + 20], 1)[found] + rng.normal(0, 4, (int(found.sum()), 4))
        tracks = ids[found]
        extra = rng.integers(0, 3)
        boxes = np.concatenate([boxes, rng.uniform(0, 900, (extra, 2)).repeat(2, 1) + [0, 0, 30, 30]])
        tracks = np.concatenate([tracks, 100 + t * 3 + np.arange(extra)])
        frames.append(TrackEvalFrame(names, labels, tracks, boxes))
    return frames


@pytest.mark.parametrize("iou", [0.5, 0.7])
def test_summed_once_the_counts_give_trackevals_pooled_scores(iou):
    rng = np.random.default_rng(3)
    sequences = [random_sequence(rng, steps, objects) for steps, objects in ((12, 5), (7, 3), (20, 8))]
    sequences.append([TrackEvalFrame((), np.zeros((0, 4)), np.array([1]), np.array([[0, 0, 9, 9]]))] * 3)  # no labels
    sequences.append([TrackEvalFrame(("z",), np.array([[0, 0, 9, 9]]), np.zeros(0, np.int64), np.zeros((0, 4)))] * 2)
    theirs = metric_results(sequences, iou)
    counts = FrameCounts.concat([frame_counts(frames, iou) for frames in sequences])
    hota, mota, idf1 = weighted_scores(counts)
    assert hota == pytest.approx(float(np.mean(theirs["HOTA"]["HOTA"])), abs=1e-9)
    assert mota == pytest.approx(float(theirs["CLEAR"]["MOTA"]), abs=1e-9)
    assert idf1 == pytest.approx(float(theirs["Identity"]["IDF1"]), abs=1e-9)
    assert counts.id_switches.sum() == theirs["CLEAR"]["IDSW"] > 0
    assert len(counts) == 12 + 7 + 20 + 3 + 2


def test_weights_count_images_as_often_as_a_resample_draws_them():
    rng = np.random.default_rng(5)
    counts = frame_counts(random_sequence(rng, 10, 4), 0.5)
    weights = np.array([2, 0, 1, 1, 3, 0, 0, 1, 2, 0], np.float64)
    doubled = FrameCounts.concat([counts, counts])
    assert weighted_scores(counts, weights) == pytest.approx(weighted_scores(doubled, np.tile(weights, 2) / 2))
    assert weighted_scores(counts, 2 * np.ones(10)) == pytest.approx(weighted_scores(counts))
    assert weighted_scores(counts, weights) != pytest.approx(weighted_scores(counts))


def test_images_without_matches_lower_mota_and_idf1_by_their_boxes():
    box = np.array([[0.0, 0.0, 10.0, 10.0]])
    frames = [TrackEvalFrame(("a",), box, np.array([1]), box), TrackEvalFrame(("a",), box, np.array([1]), box + 100)]
    counts = frame_counts(frames, 0.5)
    # the first image alone: detection and identity perfect; HOTA keeps the association score the whole
    # sequence gave the pair (a, 1): one shared image of two each, 1 / (2 + 2 - 1)
    assert weighted_scores(counts, np.array([1.0, 0.0])) == pytest.approx((np.sqrt(1 / 3), 1.0, 1.0))
    hota, mota, idf1 = weighted_scores(counts)
    assert (mota, idf1) == pytest.approx((0.0, 0.5)) and hota < 1
