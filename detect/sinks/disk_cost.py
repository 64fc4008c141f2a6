"""What a run's outputs will take on disk, known before it starts: bytes per camera image by output
kind (measured, `BYTES_PER_IMAGE`) times the images it will process (`count_images`).

Counting the images reads no image. A v2 camera_image file says its row count, one row an image, in
its Parquet footer (one small read, also remote: 64 ms for a 79 MB file of 200 images, on a busy
machine); with cameras or frames chosen, its two small key columns say which rows are kept. A v1
TFRecord has no index, but each record starts with its length: hopping from header to header
counted a 395 MB file of 200 frames in 0.4 ms, where parsing it (`read_keys`, which the engine does
once anyway) took 1.3 s, both from the page cache. A remote v1 file is counted from its size
(`V1_BYTES_PER_FRAME`), rounded up: an estimate.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np
import pyarrow.parquet as pq

from detect.core.cameras import CameraName
from detect.waymo.schema import CAMERA, TIMESTAMP
from detect.waymo.selection import FrameFilter, KeyIndex, select
from detect.waymo.sources import SegmentSource

# The --gif-width the animation sizes were measured at (the default); others scale with the area.
ANIMATION_WIDTH = 640
# Bytes per camera image, from the real frame (3 images 1920x1280, 2 at 1920x886) drawn by the default
# COCO CenterNet at its defaults: `python -m detect.tools.disk_sizes` (2026-11-25). "png" and "jpg"
# count each frame's mosaic tile (a 72 kB JPEG, kept with the frames since the mosaic is drawn for
# its shown size: measured as the difference before/after, the same day); "gif" and "mp4"
# are the camera animations' share of one image, "mosaic_gif" the mosaic's share of its timestamp
# (the MP4s, mosaic.mp4 included, are key frames: an upper bound for a video's frames); "tables"
# is detections, ground truth and manifest, a one-frame upper bound.
BYTES_PER_IMAGE = {
    "png": 3_024_688,
    "jpg": 513_527,
    "gif": 98_754,
    "mosaic_gif": 110_220,
    "mp4": 52_808,
    "tables": 5_720,
}
CAMERAS = len(CameraName)
# A v1 frame record holds the 5 JPEGs and the lidar returns: 3.5-6.5 MB in real segments (0.7-1.3 GB
# for ~199 frames); the smallest counts the most frames, so a remote file's estimate errs high.
V1_BYTES_PER_FRAME = 3_500_000
MAX_RECORDS = 1_000_000  # a header walk that finds more stops and estimates from the size
_HEADER = struct.Struct("<QI")  # record length, its masked CRC; then the data and the data's CRC


@dataclasses.dataclass(frozen=True)
class ImageCount:
    """How many camera images a run of one file will process, and whether that was counted."""

    images: int
    counted: bool  # False: estimated from the file's size


def count_images(source: SegmentSource, frame_filter: FrameFilter = FrameFilter()) -> ImageCount:
    """The images of `source` the filter keeps, without reading an image (see the module docstring)."""
    if source.format == "v2":
        return ImageCount(_count_rows(source, frame_filter), True)
    # A v1 frame holds each camera's image (Waymo's hold all five): frames times cameras.
    walked = _count_records(source) if source.is_local else None
    frames = walked if walked is not None else math.ceil(_size(source) / V1_BYTES_PER_FRAME)
    frames = max(0, frames - frame_filter.first_frame)
    if frame_filter.max_frames is not None:
        frames = min(frames, frame_filter.max_frames)
    return ImageCount(frames * (len(frame_filter.cameras) if frame_filter.cameras else CAMERAS), walked is not None)


def _count_rows(source: SegmentSource, frame_filter: FrameFilter) -> int:
    """A v2 file's images: one a row, as its footer counts them; with cameras or a frame range
    chosen, the rows its two small key columns select (a one-camera file has a fifth of the rows a
    five-camera one of as many frames has: rows are not frames times five)."""
    with source.filesystem.open_input_file(source.path) as handle:
        parquet = pq.ParquetFile(handle)
        if frame_filter == FrameFilter():
            return parquet.metadata.num_rows
        keys = parquet.read(columns=[TIMESTAMP, CAMERA])
    timestamps = keys.column(TIMESTAMP).to_numpy(zero_copy_only=False).astype(np.int64)
    index = KeyIndex(timestamps, keys.column(CAMERA).to_numpy(zero_copy_only=False).astype(np.int64),
                     np.arange(len(timestamps), dtype=np.int64))
    return len(select(index, frame_filter))


def _size(source: SegmentSource) -> int:
    return source.filesystem.get_file_info(source.path).size or 0


def _count_records(source: SegmentSource) -> int | None:
    """The records of a TFRecord file from their headers; None when they do not add up to its size."""
    size = _size(source)
    records, offset = 0, 0
    with source.filesystem.open_input_file(source.path) as handle:
        while offset < size:
            header = handle.read_at(_HEADER.size, offset)
            if len(header) < _HEADER.size or records >= MAX_RECORDS:
                return None
            length, _ = _HEADER.unpack(header)
            offset += _HEADER.size + length + 4
            records += 1
    return records if offset == size else None


def output_bytes(images: int, *, frames: str | None, gif: bool, mp4: bool, gif_width: int = ANIMATION_WIDTH,
                 mosaic: bool = True) -> dict[str, int]:
    """Bytes by output kind for `images` camera images: annotated frames in `frames` ("png", "jpg",
    None for none), the camera animations and their mosaic (with 2+ cameras), and the tables."""
    scale = (gif_width / ANIMATION_WIDTH) ** 2
    kinds = {
        f"{frames.upper()} frames" if frames else "": BYTES_PER_IMAGE[frames] if frames else 0,
        "GIFs": round(scale * (BYTES_PER_IMAGE["gif"] + (BYTES_PER_IMAGE["mosaic_gif"] if mosaic else 0))) if gif else 0,
        "MP4s": round(scale * BYTES_PER_IMAGE["mp4"]) if mp4 else 0,
        "tables": BYTES_PER_IMAGE["tables"],
    }
    return {kind: per_image * images for kind, per_image in kinds.items() if kind and per_image}


def human_bytes(count: float) -> str:
    """1.2 GB, 340 MB, 12 kB (decimal units, as `df -H` and file managers show them)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}" if count < 10 * size else f"{count / size:.0f} {unit}"
    return f"{int(count)} B"
