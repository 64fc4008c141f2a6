"""Annotated frames on disk: `frames/<CAMERA>/<frame_timestamp_micros>.png|jpg`, written atomically."""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import fpng
import numpy as np
from PIL import Image

from detect.core.atomic import atomic_write_bytes, is_temp_path
from detect.core.cameras import CameraName
from detect.core.errors import UsageError, first_line
from detect.core.files import UnreadableFileError, read_regular
from detect.core.records import FrameKey
from detect.waymo.images import check_size, jpeg_size

FRAMES_DIR = "frames"
FRAME_FORMATS = ("png", "jpg")
JPEG_QUALITY = 90
# bytes: a 1920x1280 annotated PNG is ~3-5 MB; an incompressible frame at the pixel limit is ~50 MB
FRAME_LIMIT = 64 * 1024 * 1024


def normalize_frame_format(fmt: str) -> str:
    """`png`, `jpg` (or `jpeg`), any case -> `png` / `jpg`."""
    value = fmt.strip().lower()
    value = "jpg" if value == "jpeg" else value
    if value not in FRAME_FORMATS:
        raise UsageError(f"unknown frame format {fmt!r}: expected one of {', '.join(FRAME_FORMATS)}")
    return value


def frame_path(
    segment_dir: str | os.PathLike[str], camera: CameraName, timestamp_micros: int, fmt: str = "png"
) -> Path:
    """`<segment_dir>/frames/<CAMERA>/<frame_timestamp_micros>.<fmt>`."""
    ext = normalize_frame_format(fmt)
    return Path(segment_dir) / FRAMES_DIR / CameraName(camera).name / f"{int(timestamp_micros)}.{ext}"


def encode_frame(
    image: Image.Image | np.ndarray, fmt: str = "png", *, jpeg_quality: int = JPEG_QUALITY
) -> bytes:
    """PNG through fpng (lossless, ~15 ms at 1920x1280) or JPEG through Pillow."""
    fmt = normalize_frame_format(fmt)
    if fmt == "png":
        if isinstance(image, np.ndarray):
            return fpng.from_ndarray(np.ascontiguousarray(image))
        return fpng.from_pil(image if image.mode in ("RGB", "RGBA") else image.convert("RGB"))
    pil = Image.fromarray(image) if isinstance(image, np.ndarray) else image
    out = io.BytesIO()
    pil.convert("RGB").save(out, "JPEG", quality=jpeg_quality)
    return out.getvalue()


def write_frame(
    segment_dir: str | os.PathLike[str],
    key: FrameKey,
    image: Image.Image | np.ndarray,
    fmt: str = "png",
    *,
    jpeg_quality: int = JPEG_QUALITY,
) -> Path:
    """Encode and atomically write one annotated frame; returns its path."""
    path = frame_path(segment_dir, key.camera_name, key.frame_timestamp_micros, fmt)
    return atomic_write_bytes(path, encode_frame(image, fmt, jpeg_quality=jpeg_quality))


def read_frame(path: str | os.PathLike[str]) -> Image.Image:
    """A frame of a results folder, decoded to RGB; `UnreadableFileError` (one line naming it) when
    it is not a regular file (a link, a FIFO), is larger than `FRAME_LIMIT`, claims a size
    `check_size` refuses in its header, or does not decode (truncated)."""
    data = read_regular(Path(path), limit=FRAME_LIMIT, follow_links=False)
    size = jpeg_size(data)
    if size is None:
        raise UnreadableFileError(f"{path} is not a picture, or its header claims more pixels than are decoded")
    refused = check_size(*size, flag=None)
    if refused:
        raise UnreadableFileError(f"{path}: {refused}")
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            return im if im.mode == "RGB" else im.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise UnreadableFileError(f"{path} does not decode: {first_line(err)}") from None


@dataclasses.dataclass(frozen=True)
class FrameFile:
    """One annotated frame found on disk."""

    frame_timestamp_micros: int
    camera_name: CameraName
    path: Path


def list_frames(segment_dir: str | os.PathLike[str]) -> list[FrameFile]:
    """Every annotated frame under `segment_dir/frames/`, in (timestamp, camera) order.

    Unknown directories, temp files and non-frame names are skipped; when both a PNG and a JPEG
    exist for one image, the PNG (lossless) wins.
    """
    root = Path(segment_dir) / FRAMES_DIR
    found: dict[tuple[int, CameraName], Path] = {}
    if not root.is_dir():
        return []
    for camera_dir in root.iterdir():
        if not camera_dir.is_dir() or camera_dir.name not in CameraName.__members__:
            continue
        camera = CameraName[camera_dir.name]
        for path in camera_dir.iterdir():
            ext = path.suffix.lower().lstrip(".")
            if is_temp_path(path) or ext not in FRAME_FORMATS or not path.stem.isdigit():
                continue
            key = (int(path.stem), camera)
            if key not in found or ext == "png":
                found[key] = path
    return [FrameFile(ts, cam, found[(ts, cam)]) for ts, cam in sorted(found)]
