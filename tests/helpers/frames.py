"""Crafted camera images: small solid JPEGs, and frames of them as a segment holds them."""

from __future__ import annotations

import io

from PIL import Image

from detect.core.records import CameraFrame

T0 = 1_000_000


def jpeg(width: int = 96, height: int = 64, color: tuple[int, int, int] = (200, 80, 40)) -> bytes:
    """A solid `color` JPEG of `width` x `height`."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "JPEG")
    return out.getvalue()


def frames(name: str, *images: bytes, camera: int = 1) -> list[CameraFrame]:
    """One image per frame (10 Hz) of `camera`, plus a FRONT_LEFT image so the mosaic is built."""
    out = []
    for i, image in enumerate(images):
        out.append(CameraFrame(name, T0 + i * 100_000, camera, image))
        out.append(CameraFrame(name, T0 + i * 100_000, 2, jpeg()))
    return out
