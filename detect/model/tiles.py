"""Tiled inference: the model over overlapping full-resolution tiles as well as the whole image,
the boxes merged, so that far (small) objects are seen at the size the model was trained on.

Layout: tiles of `size` pixels (narrower where the image is), spread evenly so that neighbours
overlap by at least `overlap` of a tile, the last one flush with the image's edge; an image no
larger than one tile is not tiled (tiled == untiled). Merge: a tile box within `EDGE` pixels of a
tile border that lies inside the image is dropped (the object is cut there; a neighbouring tile or
the whole image holds it whole), the rest are shifted into image pixels, and class-aware NMS at
`nms_iou` (0.5) merges them with the whole image's boxes. SAHI's greedy IOS merge was measured on
the real frame and lost AP everywhere (it grows boxes into unions of neighbours), so it is not used.

`TiledDetector` wraps a detector: it takes full-resolution frames, cuts their tiles as views and
copies (and resizes) only one model batch of them at a time, so a 7680x4320 image's ~200 tiles
never exist as copies together.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from detect.core import json_fields as jf
from detect.core.boxes import class_aware_nms
from detect.core.errors import UsageError
from detect.core.records import Detections
from detect.model.inputs import FitSize, InputSize

# Pixels: a box this close to a tile border inside the image is a cut object. Measured on the real
# frame (COCO CenterNet, --tile 512): 4 px left fragments of large pedestrians (PEDESTRIAN AP50
# 0.499, large 0.74); 6-12 px drop them (0.58, large 0.91); 8 was best for VEHICLE (0.493).
EDGE = 8
TILE_NMS_IOU = 0.5  # measured on the real frame (issue table): 0.5 merged tiles best
MIN_TILE, MAX_TILE = 64, 4096

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive) in image pixels


class Detects(Protocol):
    batch_size: int

    def __call__(self, images: np.ndarray, sizes: Sequence[tuple[int, int]] | None = None) -> list[Detections]: ...


@dataclasses.dataclass(frozen=True)
class TileSpec:
    """`--tile SIZE --tile-overlap OVERLAP`."""

    size: int
    overlap: float = 0.2
    nms_iou: float = TILE_NMS_IOU

    def __post_init__(self) -> None:
        if not MIN_TILE <= int(self.size) <= MAX_TILE:
            raise UsageError(f"--tile {self.size}: a tile must be {MIN_TILE}-{MAX_TILE} pixels")
        if not 0.0 <= float(self.overlap) < 0.9:
            raise UsageError(f"--tile-overlap {self.overlap}: must be at least 0 and below 0.9")

    def to_json(self) -> dict[str, object]:
        return {"size": self.size, "overlap": self.overlap, "nms_iou": self.nms_iou, "edge_px": EDGE}

    @classmethod
    def from_json(cls, value: object, field: str) -> TileSpec:
        """The tiles `to_json` recorded at `field` (`RecordError` naming the value that is not usable)."""
        f = jf.Fields(jf.section(value, field), field)
        return cls(size=f.get("size", 0, lambda v, name: jf.whole(v, name, MIN_TILE, MAX_TILE)),
                   overlap=f.get("overlap", 0.2, lambda v, name: jf.number(v, name, 0.0, 0.9)),
                   nms_iou=f.get("nms_iou", TILE_NMS_IOU, lambda v, name: jf.number(v, name, 0.01, 1.0)))


def tile_layout(width: int, height: int, spec: TileSpec) -> list[Box]:
    """The tiles of a `width` x `height` image, row by row; [] when it fits in one tile."""
    if width <= spec.size and height <= spec.size:
        return []
    xs = _starts(width, spec)
    ys = _starts(height, spec)
    tw, th = min(spec.size, width), min(spec.size, height)
    return [(x, y, x + tw, y + th) for y in ys for x in xs]


def _starts(length: int, spec: TileSpec) -> list[int]:
    if length <= spec.size:
        return [0]
    step = spec.size * (1.0 - spec.overlap)
    count = math.ceil((length - spec.size) / step) + 1
    return [round(i * (length - spec.size) / (count - 1)) for i in range(count)]


def shift_tile_boxes(found: Detections, tile: Box, width: int, height: int) -> Detections:
    """A tile's boxes in image pixels, without those cut by a tile border inside the image."""
    x0, y0, x1, y1 = tile
    boxes = found.xyxy.astype(np.float64)
    cut = np.zeros(len(found), bool)
    if x0 > 0:
        cut |= boxes[:, 0] <= EDGE
    if y0 > 0:
        cut |= boxes[:, 1] <= EDGE
    if x1 < width:
        cut |= boxes[:, 2] >= (x1 - x0) - EDGE
    if y1 < height:
        cut |= boxes[:, 3] >= (y1 - y0) - EDGE
    kept = found.select(np.flatnonzero(~cut))
    return dataclasses.replace(kept, xyxy=(kept.xyxy + np.array([x0, y0, x0, y0], np.float32)).astype(np.float32))


def merge(whole: Detections, tiles: list[Detections], nms_iou: float) -> Detections:
    """The whole image's boxes and the tiles' (already in image pixels), class-aware NMS, best first."""
    parts = [whole, *tiles]
    xyxy = np.concatenate([p.xyxy for p in parts]).reshape(-1, 4)
    scores = np.concatenate([p.scores for p in parts])
    class_ids = np.concatenate([p.class_ids for p in parts]).astype(np.int32)
    labels = tuple(label for p in parts for label in p.labels)
    keep = class_aware_nms(xyxy, scores, class_ids, nms_iou) if len(scores) else np.zeros(0, np.int64)
    return Detections(xyxy[keep], scores[keep], class_ids[keep], tuple(labels[i] for i in keep),
                      invalid=sum(p.invalid for p in parts))


class TiledDetector:
    """A detector over full-resolution frames: each frame whole (resized to `input_size`, or as
    it is for None) and its tiles (each resized the same way, except for a `fit:WxH` size: tiles
    run at their own full resolution, which is what they are cut for; fitting a 512 tile into
    960x640 would scale it up to 640x640 for 1.6x the time), merged."""

    def __init__(self, detector: Detects, spec: TileSpec, input_size: InputSize, resize: Resize) -> None:
        self.detector, self.spec, self.input_size, self.resize = detector, spec, input_size, resize
        self.batch_size = detector.batch_size
        self.tiles_run = 0  # how many tiles went through the model (for the summary's cost)

    def __call__(self, images: np.ndarray, sizes: Sequence[tuple[int, int]] | None = None) -> list[Detections]:
        images = np.asarray(images)
        count, height, width = images.shape[:3]
        whole = self.detector(self._model_input(images), [(width, height)] * count)
        layout = tile_layout(width, height, self.spec)
        if not layout:
            return whole
        tw, th = layout[0][2] - layout[0][0], layout[0][3] - layout[0][1]
        merged = []
        for i in range(count):
            found: list[Detections] = []
            for start in range(0, len(layout), self.batch_size):
                chunk = layout[start:start + self.batch_size]
                crops = np.stack([images[i, y0:y1, x0:x1] for x0, y0, x1, y1 in chunk])  # one batch's copies
                tiles = crops if isinstance(self.input_size, FitSize) else self._model_input(crops)
                results = self.detector(tiles, [(tw, th)] * len(chunk))
                found += [shift_tile_boxes(r, tile, width, height) for r, tile in zip(results, chunk, strict=True)]
                self.tiles_run += len(chunk)
            merged.append(merge(whole[i], found, self.spec.nms_iou))
        return merged

    def _model_input(self, images: np.ndarray) -> np.ndarray:
        return images if self.input_size is None else self.resize(images, self.input_size)


class Resize(Protocol):
    def __call__(self, images: np.ndarray, size: tuple[int, int] | FitSize) -> np.ndarray: ...
