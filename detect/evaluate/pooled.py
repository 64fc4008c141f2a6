"""Pooled COCO evaluation in flat memory: the library matches one segment at a time; what each
detection's matching came to is kept in a few bytes, and accumulated over the whole pool at the end.

faster-coco-eval (C++ COCOeval) evaluates each (category, area range, image) on its own: with
`separate_eval=True` it hands those results back as `ImageEvaluation` objects whose state is the
matched label per IoU threshold and detection, the detections' scores and which detections and
labels are ignored. Keeping the objects themselves cost ~1.4 KB per detection row (8 of them per
detection: 4 area ranges x 2 difficulty levels); `Pool` keeps 18 bytes per detection and area
range instead (score, image rank, rank in the image, matched and ignored as bit masks over the 10
IoU thresholds), so a split's millions of rows fit where one segment's did.

`accumulate` is COCO's accumulation over those arrays (pycocotools' `COCOeval.accumulate`: detections
of every image sorted by score, ties kept in image order, cumulative true and false positives,
precision made monotone, sampled at the 101 recall thresholds). The matching stays the library's;
tests check the pooled numbers against the library's own accumulation and against pycocotools.
Library internals used (faster-coco-eval pinned at 1.8.0): `separate_eval`, `_evalImgs_cpp`
and the `ImageEvaluation` state layout (checked on every chunk).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from faster_coco_eval import COCO, COCOeval_faster

from detect.core.cameras import CameraName
from detect.evaluate.coco import CocoDataset, CocoDetection

AREA_RANGES = 4  # COCO's all, small, medium, large
MAX_DETECTIONS = 100  # per image, as COCO's AP and AR100 count them
# Per type and camera: labels (not ignored), detections at the threshold (hits and false alarms
# depend on the IoU a protocol asks: `outcomes`).
LABELS, DETECTIONS = range(2)
_CAMERAS = len(CameraName) + 1  # indexed by camera number


class Pool:
    """One difficulty level's matching results and counts, added one chunk of images at a time."""

    def __init__(self, types: Sequence[int]) -> None:
        self.types = list(types)
        cells = len(self.types) * AREA_RANGES
        self._chunks: list[list[np.ndarray]] = [[] for _ in range(cells)]  # per cell: structured arrays
        self._labels = np.zeros((cells, _CAMERAS), np.int64)  # labels not ignored, per cell and camera
        self._image_labels: list[list[np.ndarray]] = [[] for _ in range(cells)]  # per cell: (image, labels) > 0
        self.counts = np.zeros((len(self.types), _CAMERAS, 2), np.int64)
        self._iou_thresholds: np.ndarray | None = None
        self._recall_thresholds: np.ndarray | None = None
        self._image_rank: dict[int, int] = {}  # image id -> the order it came in
        self._camera_of_rank: list[int] = []

    def add(self, run: COCOeval_faster, gt: COCO, dt: COCO, cameras: dict[int, CameraName], threshold: float,
            images: Collection[int] | None = None) -> None:
        """A chunk `run`, evaluated with `separate_eval=True` and accumulated with `extra_calc=True`;
        only its `images` (COCO image ids) when given: a slice of the chunk's images. The library's
        state is read once per chunk (`chunk_states`), however many pools take it."""
        chunk = chunk_states(run, gt, dt)
        cells = len(self._chunks)
        if chunk.image_ids and len(chunk.cells) != cells:
            raise RuntimeError(f"faster-coco-eval returned {len(chunk.cells)} cells of image evaluations, expected "
                               f"{cells}: its layout changed")
        self._iou_thresholds, self._recall_thresholds = chunk.iou_thresholds, chunk.recall_thresholds
        chosen = [(j, i) for j, i in enumerate(chunk.image_ids) if images is None or i in images]
        for _, image_id in chosen:
            self._image_rank.setdefault(image_id, len(self._image_rank))
            if len(self._camera_of_rank) < len(self._image_rank):
                self._camera_of_rank.append(int(cameras[image_id]))
        for cell, states in enumerate(chunk.cells):
            parts, labeled = [], []
            for j, image_id in chosen:
                labels, found = states[j]
                self._labels[cell, int(cameras[image_id])] += labels
                if labels:
                    labeled.append((self._image_rank[image_id], labels))
                if found is None:
                    continue
                part = found.copy()
                part["image"] = self._image_rank[image_id]
                parts.append(part)
            if parts:
                self._chunks[cell].append(np.concatenate(parts))
            if labeled:
                self._image_labels[cell].append(np.array(labeled, np.int64))
        self._count(chunk, cameras, threshold, images)

    def _count(self, chunk: ChunkStates, cameras: dict[int, CameraName], threshold: float,
               images: Collection[int] | None) -> None:
        index = {t: k for k, t in enumerate(self.types)}
        for kind, (types, image_ids, counted) in ((LABELS, chunk.labels), (DETECTIONS, chunk.detections)):
            if kind == DETECTIONS:
                counted = counted >= threshold
            for waymo_type, image_id, keep in zip(types.tolist(), image_ids.tolist(), counted.tolist(), strict=True):
                if keep and waymo_type in index and (images is None or image_id in images):
                    self.counts[index[waymo_type], int(cameras[image_id]), kind] += 1

    def accumulate(self, camera: CameraName | None = None) -> dict[str, Any] | None:  # COCOeval's `eval` dict
        """COCO's accumulation over the pool (or one camera's images): `precision` [T, R, K, A, 1]
        and `recall` [T, K, A, 1], -1 where there is nothing to measure; None for an empty pool."""
        if self._iou_thresholds is None or self._recall_thresholds is None:
            return None
        camera_of = np.asarray(self._camera_of_rank)
        if camera is not None and not np.any(camera_of == int(camera)):
            return None
        id_order = self._id_order()
        thresholds, recalls = self._iou_thresholds, self._recall_thresholds
        precision = -np.ones((len(thresholds), len(recalls), len(self.types), AREA_RANGES, 1))
        recall = -np.ones((len(thresholds), len(self.types), AREA_RANGES, 1))
        for cell, chunks in enumerate(self._chunks):
            k, a = divmod(cell, AREA_RANGES)
            labels = int(self._labels[cell].sum() if camera is None else self._labels[cell, int(camera)])
            if labels == 0:
                continue
            found = np.concatenate(chunks) if chunks else np.zeros(0, _RECORD)
            if camera is not None:
                found = found[camera_of[found["image"]] == int(camera)]
            found = _in_coco_order(found, id_order)
            for t in range(len(thresholds)):
                bit = np.uint16(1 << t)
                hit = (found["matched"] & bit) != 0
                counted = (found["ignored"] & bit) == 0
                tp = np.cumsum(hit & counted, dtype=np.float64)
                fp = np.cumsum(~hit & counted, dtype=np.float64)
                recall[t, k, a, 0] = tp[-1] / labels if len(tp) else 0.0
                precision[t, :, k, a, 0] = precision_at_recalls(tp, fp, labels, recalls)
        return {"precision": precision, "recall": recall}

    def _id_order(self) -> np.ndarray:
        """Per image rank, its place in the order of the images' ids (COCO concatenates them so)."""
        ids_by_rank = self.image_ids
        id_order = np.empty(len(ids_by_rank), np.int64)
        id_order[np.argsort(ids_by_rank, kind="stable")] = np.arange(len(ids_by_rank))
        return id_order

    @property
    def image_ids(self) -> np.ndarray:
        """The COCO ids of the pool's images, by rank (the order they came in)."""
        return np.fromiter(self._image_rank, np.int64, len(self._image_rank))

    def ranked(self, k: int, t: int, area: int = 0) -> Ranked:
        """Type `k`'s counted detections of area range `area` at IoU threshold index `t`, in the
        order COCO accumulates them, with the image of each and whether it matched; and the labels
        that count, per image: what AP is computed from, for resampling images."""
        cell = k * AREA_RANGES + area
        chunks = self._chunks[cell]
        found = _in_coco_order(np.concatenate(chunks), self._id_order()) if chunks else np.zeros(0, _RECORD)
        bit = np.uint16(1 << t)
        found = found[(found["ignored"] & bit) == 0]
        labeled = np.concatenate(self._image_labels[cell]) if self._image_labels[cell] else np.zeros((0, 2), np.int64)
        return Ranked(found["image"].astype(np.int64), (found["matched"] & bit) != 0, labeled[:, 0], labeled[:, 1])

    def outcomes(self, k: int, t: int, camera: CameraName | None = None,
                 area: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
        """Type `k`'s counted detections at IoU threshold index `t` (of every area, or of area range
        `area`; one camera's or all): their scores, whether each matched a label, and the labels."""
        cell = k * AREA_RANGES + area
        chunks = self._chunks[cell]
        found = np.concatenate(chunks) if chunks else np.zeros(0, _RECORD)
        labels = self._labels[cell]
        if camera is not None:
            found = found[np.asarray(self._camera_of_rank, np.int64)[found["image"]] == int(camera)] if len(found) else found
            labels = labels[int(camera)]
        bit = np.uint16(1 << t)
        found = found[(found["ignored"] & bit) == 0]
        return found["score"].copy(), (found["matched"] & bit) != 0, int(labels.sum())

    def type_counts(self, camera: CameraName | None = None) -> np.ndarray:
        """`[types, 2]`: labels and detections at the threshold, for every camera or one."""
        return self.counts.sum(axis=1) if camera is None else self.counts[:, int(camera)]

    @property
    def recall_thresholds(self) -> list[float]:
        return [] if self._recall_thresholds is None else [float(v) for v in self._recall_thresholds]


@dataclasses.dataclass(frozen=True, eq=False)
class Ranked:
    """One type's counted detections in accumulation order (the image rank of each, matched or not)
    and its labels that count (image ranks, how many on each)."""

    image: np.ndarray
    hit: np.ndarray
    label_image: np.ndarray
    label_count: np.ndarray


def _in_coco_order(found: np.ndarray, id_order: np.ndarray) -> np.ndarray:
    """Score first; ties in image-id order, then in the image's own order, as COCO's stable sort leaves them."""
    return found[np.lexsort((found["position"], id_order[found["image"]], -found["score"]))]


def precision_at_recalls(tp: np.ndarray, fp: np.ndarray, labels: float, recalls: np.ndarray) -> np.ndarray:
    """COCO's precision at each of `recalls` (pycocotools' `accumulate`), from the cumulative true
    and false positives of detections in score order and the number of labels: precision made
    monotone from the right, read at the first detection reaching each recall, 0 past the last.
    The one accumulation of AP: `detect eval` (through `Pool`) and `detect compare` (weighted
    per frame for its bootstrap) both call it."""
    sampled = np.zeros(len(recalls))
    if not len(tp):
        return sampled
    seen = tp + fp
    precision = np.divide(tp, seen, out=np.zeros_like(tp), where=seen > 0)  # as the library's C++ (no epsilon)
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    where = np.searchsorted(tp / labels, recalls, side="left")
    valid = where < len(precision)
    sampled[valid] = precision[where[valid]]
    return sampled


@dataclasses.dataclass(frozen=True, eq=False)
class ChunkStates:
    """What the library's run of one chunk came to, read once: per cell (type x area range) and
    image, the labels it counts and its detections as records (the image rank left to each pool);
    each label's type, image and whether it counts (not a crowd), each detection's type, image and
    score."""

    image_ids: list[int]
    iou_thresholds: np.ndarray
    recall_thresholds: np.ndarray
    cells: list[list[tuple[int, np.ndarray | None]]]
    labels: tuple[np.ndarray, np.ndarray, np.ndarray]
    detections: tuple[np.ndarray, np.ndarray, np.ndarray]


_STATES: weakref.WeakKeyDictionary[COCOeval_faster, ChunkStates] = weakref.WeakKeyDictionary()


def chunk_states(run: COCOeval_faster, gt: COCO, dt: COCO) -> ChunkStates:
    """`run`'s `ChunkStates` (kept while the run lives: every pool that takes the chunk reads them)."""
    found = _STATES.get(run)
    if found is None:
        found = _STATES[run] = _read_states(run, gt, dt)
    return found


def _read_states(run: COCOeval_faster, gt: COCO, dt: COCO) -> ChunkStates:
    image_ids = [int(i) for i in run.params.imgIds]
    results = run._evalImgs_cpp
    n = len(image_ids)
    if n and len(results) % n:
        raise RuntimeError(f"faster-coco-eval returned {len(results)} image evaluations for {n} images: its layout "
                           "changed")
    iou_thresholds = np.asarray(run.params.iouThrs, np.float64)
    thresholds = len(iou_thresholds)
    bits = (1 << np.arange(thresholds, dtype=np.uint16))[:, None]
    cells: list[list[tuple[int, np.ndarray | None]]] = []
    for cell in range(len(results) // n):
        states: list[tuple[int, np.ndarray | None]] = []
        for j in range(n):
            state = results[cell * n + j].__getstate__()
            matches, scores, label_ignored, ignored = state[0], state[2], state[3], state[4]
            detections = len(scores)
            if len(matches) != thresholds * detections or len(ignored) != thresholds * detections:
                raise RuntimeError("faster-coco-eval's ImageEvaluation state changed its layout")
            labels = len(label_ignored) - int(np.count_nonzero(label_ignored))
            if not detections:
                states.append((labels, None))
                continue
            part = np.zeros(min(detections, MAX_DETECTIONS), _RECORD)
            keep = len(part)
            part["score"] = scores[:keep]
            part["position"] = np.arange(keep)
            matched = (np.asarray(matches).reshape(thresholds, detections)[:, :keep] != 0)
            skipped = np.asarray(ignored, bool).reshape(thresholds, detections)[:, :keep]
            part["matched"] = (matched * bits).sum(axis=0)
            part["ignored"] = (skipped * bits).sum(axis=0)
            states.append((labels, part))
        cells.append(states)
    truth, found = list(gt.anns.values()), list(dt.anns.values())
    return ChunkStates(
        image_ids, iou_thresholds, np.asarray(run.params.recThrs, np.float64), cells,
        (np.array([a["category_id"] for a in truth], np.int64), np.array([a["image_id"] for a in truth], np.int64),
         np.array([not a["iscrowd"] for a in truth], bool)),
        (np.array([a["category_id"] for a in found], np.int64), np.array([a["image_id"] for a in found], np.int64),
         np.array([a["score"] for a in found], np.float64)))


_RECORD = np.dtype([("score", np.float64), ("image", np.int32), ("position", np.int16), ("matched", np.uint16),
                    ("ignored", np.uint16)])


def evaluate_chunk(gt: CocoDataset, dts: list[CocoDetection], types: Sequence[int],
                   prepare: Callable[[COCOeval_faster, COCO], None] | None = None) -> tuple[COCOeval_faster, COCO, COCO]:
    """One chunk matched by the library: its run (per-image results kept, per area range) and its
    COCO objects. The library's per-detection match flags (`tp`, `gt_id`) are not read: they merge
    every area range's matching, so a detection that matched a real label can carry a crowd's id
    (the per-image matching is `detect.core.matching`). `prepare` sets the run and the detections
    up before the matching (the range slices' area ranges)."""
    with contextlib.redirect_stdout(io.StringIO()):  # the library reports its progress on stdout
        gt_coco = COCO(gt)
        dt_coco = gt_coco.loadRes([dict(d) for d in dts]) if dts else COCO({**gt, "annotations": []})
        run = COCOeval_faster(gt_coco, dt_coco, "bbox", print_function=lambda *a, **k: None, extra_calc=True,
                              separate_eval=True)
        run.params.catIds = list(types)
        if prepare is not None:
            prepare(run, dt_coco)
        run.evaluate()
        run.accumulate()  # the chunk's own
    return run, gt_coco, dt_coco
