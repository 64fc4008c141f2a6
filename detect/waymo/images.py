"""Camera image headers are untrusted: their sizes, and the limits checked before any decoding."""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

# Image headers are untrusted: a JPEG of a few hundred bytes can claim 13000x13000 pixels (a
# "decompression bomb", 500 MB decoded). Sizes are read from the header and checked before any
# pixel is decoded. Waymo's largest camera is 1920x1280 (2.5 MP); the default limit is ~6.8x that.
DEFAULT_MAX_PIXELS = 4096 * 4096
# Below 16 pixels a side there is nothing to detect or draw; above 16,384 the GIF and H.264
# encoders refuse the frame. Neither is a camera image.
MIN_SIDE, MAX_SIDE = 16, 16384


def check_size(width: int, height: int, max_pixels: int = DEFAULT_MAX_PIXELS, flag: str | None = "--max-pixels") -> str | None:
    """Why an image of this (header) size is refused, or None when it may be decoded; `flag` names
    the option that moves the limit (None where the command has none: reading back a results folder)."""
    if width * height > max_pixels:
        return (f"image is {width}x{height} ({width * height:,} pixels), over the limit of {max_pixels:,}"
                f"{f' ({flag})' if flag else ''}; not decoded")
    if min(width, height) < MIN_SIDE or max(width, height) > MAX_SIDE:
        return f"image is {width}x{height}: each side must be {MIN_SIDE}-{MAX_SIDE} pixels; not decoded"
    return None


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int] | None:
    """A PNG's (width, height) from its IHDR chunk (big-endian, at offset 16), None when `data` is
    not a PNG: read before Pillow, which refuses a header past twice its pixel limit as a bomb
    without saying how large the image claims to be."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """From the header only: Pillow does not decode pixels to open an image (a PNG's size is read
    from its IHDR, so a huge one is `check_size`'s "image is WxH", not an unreadable picture)."""
    size = png_size(data)
    if size is not None:
        return size
    try:
        with warnings.catch_warnings():  # a huge header is reported by us, not by Pillow's bomb warning
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                return image.size
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError, ValueError):
        return None
