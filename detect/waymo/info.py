"""`detect info`: what a segment file holds, from its keys and one image header per camera."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from detect.core.cameras import CameraName
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE, check_size, jpeg_size
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import SegmentSource


@dataclasses.dataclass(frozen=True)
class CameraSummary:
    camera_name: CameraName
    images: int
    width: int | None
    height: int | None
    refused: str | None = None  # why images of this size are skipped (pixel or side limits), if they are


@dataclasses.dataclass(frozen=True)
class SegmentInfo:
    path: str
    format: str
    segment_context_name: str
    frames: int
    images: int
    cameras: tuple[CameraSummary, ...]
    first_timestamp_micros: int
    last_timestamp_micros: int
    frame_rate_hz: float | None
    labels: str | None

    @property
    def duration_s(self) -> float:
        return (self.last_timestamp_micros - self.first_timestamp_micros) / 1e6

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["duration_s"] = round(self.duration_s, 3)
        data["has_labels"] = self.labels is not None
        data["cameras"] = [
            {"camera_name": c.camera_name.name, "camera_number": int(c.camera_name),
             "images": c.images, "width": c.width, "height": c.height}
            for c in self.cameras
        ]
        return data


def segment_info(path_or_source: str | SegmentSource, max_pixels: int = DEFAULT_MAX_PIXELS) -> SegmentInfo:
    keys = read_keys(path_or_source)
    return summarize(keys, _first_image_sizes(keys), max_pixels)


def summarize(keys: SegmentKeys, sizes: dict[CameraName, tuple[int, int]],
              max_pixels: int = DEFAULT_MAX_PIXELS) -> SegmentInfo:
    """Pure: counts, time span and frame rate from the key index; sizes from the caller."""
    index = keys.index
    frame_times = np.unique(index.timestamps)
    cameras = []
    for number in sorted(set(index.cameras.tolist())):
        camera = CameraName(number)
        width, height = sizes.get(camera, (None, None))
        refused = _refusal(width, height, max_pixels) if width and height else None
        cameras.append(CameraSummary(camera, int(np.sum(index.cameras == number)), width, height, refused))
    return SegmentInfo(
        path=keys.source.uri,
        format="v2 Parquet (camera_image)" if keys.source.format == "v2" else "v1 TFRecord (Frame protos)",
        segment_context_name=keys.segment_context_name,
        frames=len(frame_times),
        images=len(index),
        cameras=tuple(cameras),
        first_timestamp_micros=int(frame_times[0]),
        last_timestamp_micros=int(frame_times[-1]),
        frame_rate_hz=frame_rate(frame_times),
        labels=keys.labels,
    )


def frame_rate(frame_times: np.ndarray) -> float | None:
    """Frames per second from the median interval between distinct timestamps."""
    if len(frame_times) < 2:
        return None
    interval = float(np.median(np.diff(np.sort(frame_times))))
    return round(1e6 / interval, 3) if interval > 0 else None


def _first_image_sizes(keys: SegmentKeys) -> dict[CameraName, tuple[int, int]]:
    """Read images of the first frame only (JPEG headers, not pixels) to learn each camera's size."""
    first = int(keys.index.timestamps.min())
    frames = iter_frames(keys.source, FrameFilter(min_timestamp=first, max_timestamp=first), keys)
    sizes: dict[CameraName, tuple[int, int]] = {}
    for frame in frames:
        size = jpeg_size(frame.jpeg)
        if size is not None:
            sizes[frame.camera_name] = size
    return sizes


def _refusal(width: int, height: int, max_pixels: int) -> str | None:
    if width * height > max_pixels:
        return f"over the {max_pixels:,}-pixel limit: skipped"
    if check_size(width, height, max_pixels):
        return f"each side must be {MIN_SIDE}-{MAX_SIDE} pixels: skipped"
    return None


def format_info(info: SegmentInfo) -> Iterable[str]:
    """Human-readable lines for the terminal."""
    yield f"segment   {info.segment_context_name}"
    yield f"file      {info.path}"
    yield f"format    {info.format}"
    rate = f"{info.frame_rate_hz:g} Hz" if info.frame_rate_hz else "n/a (one frame)"
    yield f"frames    {info.frames} over {info.duration_s:.1f} s, {rate}; {info.images} camera images"
    yield f"time      {info.first_timestamp_micros} .. {info.last_timestamp_micros} (frame_timestamp_micros)"
    yield f"labels    {info.labels or 'none found'}"
    yield "cameras"
    for camera in info.cameras:
        size = f"{camera.width}x{camera.height}" if camera.width else "unreadable image"
        if camera.refused:
            size += f" ({camera.refused})"
        yield f"  {camera.camera_name.name:<12} {camera.images:>5} images  {size}"
