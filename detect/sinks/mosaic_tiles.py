"""The mosaic's tiles on disk, so the animations rebuilt from a folder (`detect gif`, a resumed run,
the Ray engine, which builds them from the frames) show the mosaic the run drew.

A tile is drawn from the raw image (`detect.render.mosaic_tile`), so it cannot be made again from
the annotated frame: each one is kept beside the bookkeeping, `.detect/mosaic/<CAMERA>/<ts>.jpg`,
with its legend rows and the count of chips it left out in the file (a JPEG comment). JPEG at the
frames' quality: 85 kB a 640-wide tile, where fpng's lossless PNG took 450 kB (15% on top of a PNG
frame); a run that keeps its tiles builds its own mosaic from the tile as kept (decoded again), so
the mosaic rebuilt from the folder is byte for byte the run's.

A tile read back must be its image's (`kept_tile`): its comment names the camera and timestamp it
was drawn for (a tile moved to another image's name is not used), and its size is its frame's
shrunk to the tile's width (a tile of another size, or of another camera's shape, is not used);
the mosaic then shows the frame shrunk, as for a folder written before tiles were kept. Tiles
written before their comment named the image are checked by their size alone.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from PIL import Image

from detect.core.atomic import atomic_write_bytes
from detect.core.cameras import CameraName
from detect.core.errors import InputError
from detect.core.records import FrameKey
from detect.render.mosaic_tile import MosaicTile, shrunk_size
from detect.render.verdicts import COLORS
from detect.sinks.frames import JPEG_QUALITY, read_frame
from detect.sinks.journal import STATE_DIR

TILES_DIR = "mosaic"  # under STATE_DIR
TILE_SUFFIX = ".jpg"


def tile_path(segment_dir: str | os.PathLike[str], camera: CameraName, timestamp_micros: int) -> Path:
    """`<segment_dir>/.detect/mosaic/<CAMERA>/<frame_timestamp_micros>.jpg`."""
    return Path(segment_dir) / STATE_DIR / TILES_DIR / CameraName(camera).name / f"{int(timestamp_micros)}{TILE_SUFFIX}"


def encode_tile(tile: MosaicTile, key: FrameKey | None = None) -> bytes:
    """The tile as a JPEG with its legend, left-out count and image (camera, timestamp) in the file's comment."""
    named = {} if key is None else {"camera": key.camera_name.name, "frame_timestamp_micros": key.frame_timestamp_micros}
    meta = json.dumps({"legend": [list(e) for e in tile.legend], "chips_left_out": tile.chips_left_out, **named})
    out = io.BytesIO()
    tile.image.convert("RGB").save(out, "JPEG", quality=JPEG_QUALITY, comment=meta.encode())
    return out.getvalue()


def decode_tile(image: Image.Image) -> MosaicTile:
    """The tile in a decoded tile file; ValueError when its comment is not a tile's."""
    raw = image.info.get("comment", b"")
    try:
        meta = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        legend = tuple((None if s is None else str(s), str(t)) for s, t in meta["legend"])
        left_out = int(meta["chips_left_out"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"not a mosaic tile's comment: {err}") from None
    if any(s is not None and s not in COLORS for s, _ in legend):
        raise ValueError("a mosaic tile's legend names an unknown state")
    return MosaicTile(image if image.mode == "RGB" else image.convert("RGB"), legend, left_out)


def write_tile(segment_dir: str | os.PathLike[str], key: FrameKey, tile: MosaicTile, *,
               read_back: bool = True) -> MosaicTile | None:
    """Encode and atomically write one image's mosaic tile; returns the tile as kept (decoded), for
    a mosaic composed now; None with `read_back=False` (no mosaic now: the decode is skipped)."""
    data = encode_tile(tile, key)
    atomic_write_bytes(tile_path(segment_dir, key.camera_name, key.frame_timestamp_micros), data)
    if not read_back:
        return None
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return decode_tile(image)


def kept_tile(segment_dir: str | os.PathLike[str], key: FrameKey,
              frame_size: tuple[int, int]) -> tuple[MosaicTile | None, str | None]:
    """The tile kept for the image `key`, whose annotated frame is `frame_size` (width, height): (the
    tile, None); (None, None) when none is kept or it cannot be read (as `read_tile`); (None, why)
    when the file there is not this image's tile (the module's docstring)."""
    path = tile_path(segment_dir, key.camera_name, key.frame_timestamp_micros)
    tile = read_tile(path)
    if tile is None:
        return None, None
    named = _named_image(tile.image.info.get("comment", b""))
    if named is not None and named != (key.camera_name.name, key.frame_timestamp_micros):
        return None, f"{path} is the mosaic tile of {named[0]} {named[1]}, not of this image"
    width, height = tile.image.size
    if width > frame_size[0] or (width, height) != shrunk_size(*frame_size, width):
        expected = shrunk_size(*frame_size, min(width, frame_size[0]))
        return None, (f"{path} is {width}x{height}, not the {expected[0]}x{expected[1]} of its "
                      f"{frame_size[0]}x{frame_size[1]} frame shrunk")
    return tile, None


def _named_image(raw: object) -> tuple[str, int] | None:
    """The (camera, timestamp) a tile's comment names; None when it names none (written before)."""
    try:
        meta = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
        camera, timestamp = meta["camera"], meta["frame_timestamp_micros"]
    except (ValueError, KeyError, TypeError):
        return None
    return (camera, timestamp) if isinstance(camera, str) and isinstance(timestamp, int) else ("?", -1)


def read_tile(path: str | os.PathLike[str]) -> MosaicTile | None:
    """The tile kept at `path`; None when there is none or it is unreadable (the mosaic then
    shrinks the frame instead, as for folders written before tiles were kept)."""
    if not Path(path).is_file():
        return None
    try:
        return decode_tile(read_frame(path))
    except (InputError, OSError, ValueError):
        return None
