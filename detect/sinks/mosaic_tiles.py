"""The mosaic's tiles on disk, so the animations rebuilt from a folder (`detect gif`, a resumed run,
the Ray engine, which builds them from the frames) show the mosaic the run drew.

A tile is drawn from the raw image (`detect.render.mosaic_tile`), so it cannot be made again from
the annotated frame: each one is kept beside the bookkeeping, `.detect/mosaic/<CAMERA>/<ts>.png`
(or `.jpg`, as the frames), 640 wide by default (about a tenth of its frame's bytes), with its
legend rows and the count of chips it left out in the file itself (a PNG text chunk, a JPEG comment).
"""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path

from detect.core.atomic import atomic_write_bytes
from detect.core.cameras import CameraName
from detect.core.errors import InputError
from detect.core.records import FrameKey
from detect.render.mosaic_tile import MosaicTile
from detect.render.verdicts import COLORS
from detect.sinks.frames import JPEG_QUALITY, encode_frame, normalize_frame_format, read_frame
from detect.sinks.journal import STATE_DIR

TILES_DIR = "mosaic"  # under STATE_DIR
META_KEY = "detect-mosaic"
_PNG_HEADER = 8 + 25  # the signature, then the IHDR chunk (length, type, 13 bytes, CRC)


def tile_path(segment_dir: str | os.PathLike[str], camera: CameraName, timestamp_micros: int, fmt: str = "png") -> Path:
    """`<segment_dir>/.detect/mosaic/<CAMERA>/<frame_timestamp_micros>.<fmt>`."""
    ext = normalize_frame_format(fmt)
    return Path(segment_dir) / STATE_DIR / TILES_DIR / CameraName(camera).name / f"{int(timestamp_micros)}.{ext}"


def encode_tile(tile: MosaicTile, fmt: str = "png") -> bytes:
    """The tile's image with its legend and left-out count in the file (fpng and a text chunk, or JPEG)."""
    meta = json.dumps({"legend": [list(e) for e in tile.legend], "chips_left_out": tile.chips_left_out})
    if normalize_frame_format(fmt) == "jpg":
        out = io.BytesIO()
        tile.image.convert("RGB").save(out, "JPEG", quality=JPEG_QUALITY, comment=meta.encode())
        return out.getvalue()
    png = encode_frame(tile.image, "png")
    body = b"tEXt" + META_KEY.encode() + b"\0" + meta.encode()
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body))
    return png[:_PNG_HEADER] + chunk + png[_PNG_HEADER:]


def write_tile(segment_dir: str | os.PathLike[str], key: FrameKey, tile: MosaicTile, fmt: str = "png") -> Path:
    """Encode and atomically write one image's mosaic tile; returns its path."""
    path = tile_path(segment_dir, key.camera_name, key.frame_timestamp_micros, fmt)
    return atomic_write_bytes(path, encode_tile(tile, fmt))


def read_tile(path: str | os.PathLike[str]) -> MosaicTile | None:
    """The tile kept at `path`; None when there is none or it is unreadable (the mosaic then
    shrinks the frame instead, as for folders written before tiles were kept)."""
    if not Path(path).is_file():
        return None
    try:
        image = read_frame(path)
        raw = image.info.get(META_KEY) or image.info.get("comment") or b"{}"
        meta = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        legend = tuple((None if s is None else str(s), str(t)) for s, t in meta["legend"])
        if any(s is not None and s not in COLORS for s, _ in legend):
            return None
        return MosaicTile(image, legend, int(meta["chips_left_out"]))
    except (InputError, OSError, ValueError, KeyError, TypeError):
        return None
