"""Per-camera and mosaic animations (GIF, optionally MP4) from annotated frames.

Two entry points share one path, so they write the same bytes from the same frames:
- the pipeline: `prepare_animation_frame` in worker threads (downscale, quantize, encode), then
  `AnimationSet.add` in (timestamp, camera) order in one thread (cheap: writes blocks, composes
  the mosaic when the timestamp changes);
- `detect gif`: `rebuild_animations` / `rebuild_all` read the frames back from `frames/`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import os
from pathlib import Path

import numpy as np
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.core.names import printable
from detect.core.records import FrameKey
from detect.render.draw import to_canvas
from detect.render.mosaic import MIN_TILE_WIDTH, MosaicLayout, compose_mosaic, letterbox, mosaic_layout
from detect.render.mosaic_tile import MosaicTile, downscale_to_width, merged_legend
from detect.render.verdicts import LegendEntry
from detect.sinks.frames import FRAMES_DIR, list_frames, read_frame
from detect.sinks.gif import GifFrame, GifWriter, encode_gif_frame
from detect.sinks.mosaic_tiles import kept_tile
from detect.sinks.mp4 import Mp4Writer
from detect.sinks.sink import Sink

DEFAULT_WIDTH = 640
MOSAIC = "mosaic"


def mosaic_tile_width(width: int) -> int:
    """The mosaic's tiles are as wide as the camera animations' frames (3 x 640 = 1920 by default),
    drawn for the size the mosaic is shown at (`detect.render.mosaic_tile`)."""
    return max(MIN_TILE_WIDTH, width)


@dataclasses.dataclass(frozen=True)
class AnimationFrame:
    """One annotated camera image made ready for the animations (small; built off the main thread)."""

    key: FrameKey
    image: Image.Image = dataclasses.field(repr=False)  # RGB, `width` wide, for MP4
    gif: GifFrame | None = dataclasses.field(repr=False)  # quantized + encoded GIF block (None: no GIFs)
    tile: Image.Image = dataclasses.field(repr=False)  # mosaic tile
    legend: tuple[LegendEntry, ...] = ()  # what the mosaic's legend says for this image
    chips_left_out: int = 0  # chips the tile had no room for

    def __reduce__(self) -> tuple[object, ...]:
        """Sent from a render process with its pictures as arrays (`packed`)."""
        return _unpacked_frame, (self.key, packed(self.image), self.gif, packed(self.tile), self.legend,
                                 self.chips_left_out)


Packed = tuple[np.ndarray, str, dict] | Image.Image


def packed(image: Image.Image) -> Packed:
    """A picture to send to another process: its pixels as an array, its mode and info (a process
    pickles an array ~3x faster than Pillow's own pickling of the image, and unpickles it ~5x);
    modes an array cannot hold whole (a palette) are sent as they are."""
    if image.mode not in ("RGB", "L"):
        return image
    return np.asarray(image), image.mode, dict(image.info)


def unpacked(picture: Packed) -> Image.Image:
    """The picture `packed` sent: the same pixels, mode and info."""
    if isinstance(picture, Image.Image):
        return picture
    array, mode, info = picture
    image = Image.fromarray(array, mode=mode)
    image.info.update(info)
    return image


def _unpacked_frame(key: FrameKey, image: Packed, gif: GifFrame | None, tile: Packed,
                    legend: tuple[LegendEntry, ...], chips_left_out: int) -> AnimationFrame:
    return AnimationFrame(key, unpacked(image), gif, unpacked(tile), legend, chips_left_out)


def prepare_animation_frame(
    annotated: Image.Image | np.ndarray, key: FrameKey, width: int = DEFAULT_WIDTH, *, gif: bool = True,
    tile: MosaicTile | None = None,
) -> AnimationFrame:
    """Downscale, quantize and GIF-encode one annotated frame; pure, thread-safe. `tile`: the
    image drawn for the mosaic (`detect.render.mosaic_tile`); without, the mosaic tile is the
    animation's frame shrunk (frames of folders written before the mosaic had tiles of its own)."""
    if isinstance(annotated, np.ndarray):
        annotated = to_canvas(annotated)
    elif annotated.mode != "RGB":
        annotated = annotated.convert("RGB")
    small = downscale_to_width(annotated, width)
    encoded = encode_gif_frame(small) if gif else None
    if tile is None:
        return AnimationFrame(key, small, encoded, downscale_to_width(small, mosaic_tile_width(width)))
    image = tile.image if tile.image.mode == "RGB" else tile.image.convert("RGB")
    return AnimationFrame(key, small, encoded, downscale_to_width(image, mosaic_tile_width(width)), tile.legend,
                          tile.chips_left_out)


class AnimationSet(Sink):
    """Ordered sink of `AnimationFrame`s -> `<CAMERA>.gif`, `mosaic.gif` (2+ cameras), and MP4s.

    Feed frames in (timestamp, camera) order from one thread. Files are written incrementally under
    temp names and renamed at `close()`; on error (or `abort()`) no partial file is left.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        *,
        fps: float | None = None,
        mp4: bool = False,
        mosaic: bool = True,
        gif: bool = True,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        # Composing and encoding a mosaic frame costs ~15 ms, once per timestamp: in one thread that
        # caps a many-core run near 350 images/s, so an executor (the render workers) does it, ahead.
        self._executor = executor
        self._mosaics: collections.deque[tuple[concurrent.futures.Future[MosaicFrame], int]] = collections.deque()
        self.fps = fps
        self.mp4 = mp4
        self.gif = gif
        # Pass False when only one camera is selected: saves composing mosaics that close() drops.
        self.mosaic = mosaic
        self._gifs: dict[str, GifWriter] = {}
        self._mp4s: dict[str, Mp4Writer] = {}
        self._last: tuple[int, int] | None = None
        self._cameras: set[CameraName] = set()
        self._sizes: dict[CameraName, tuple[int, int]] = {}  # each camera's animation size (its first frame's)
        self._pending: dict[CameraName, AnimationFrame] = {}
        self._pending_ts: int | None = None
        self._first_ts: int | None = None
        self._segment = ""
        self._layout: MosaicLayout | None = None
        self._written: list[Path] = []
        self._closed = False

    def add(self, frame: AnimationFrame) -> None:
        """Append one camera image; frames must come in increasing (timestamp, camera) order."""
        if self._closed:
            raise ValueError("AnimationSet is already closed")
        key = frame.key
        order = (key.frame_timestamp_micros, int(key.camera_name))
        if self._last is not None and order <= self._last:
            raise ValueError(
                f"animation frames must come in increasing (timestamp, camera) order: got {key} "
                f"after timestamp {self._last[0]} camera {CameraName(self._last[1]).name}"
            )
        self._last = order
        if self._first_ts is None:
            self._first_ts = key.frame_timestamp_micros
            self._segment = key.segment_context_name
            # Tiles are fitted into cells, so a tiny first image still gets a usable layout.
            self._layout = mosaic_layout(max(MIN_TILE_WIDTH, frame.tile.width))
        if self._pending_ts is not None and key.frame_timestamp_micros != self._pending_ts:
            self._flush_mosaic()
        self._pending_ts = key.frame_timestamp_micros
        if self.mosaic:
            self._pending[key.camera_name] = frame
        self._cameras.add(key.camera_name)
        name = key.camera_name.name
        if self.gif and frame.gif is None:
            raise ValueError(f"{key}: frame was prepared without its GIF encoding (gif=False)")
        image, gif = frame.image, frame.gif
        size = self._sizes.setdefault(key.camera_name, image.size)
        if image.size != size:  # a camera changed its image size: fit it into the animation's first size
            image = letterbox(image, size)
            gif = encode_gif_frame(image) if self.gif else None
        if gif is not None:
            self._gif(name).append(gif, key.frame_timestamp_micros)
        if self.mp4:
            self._mp4(name).append(image, key.frame_timestamp_micros)

    def close(self) -> list[Path]:
        """Finish every file; returns the paths written (no mosaic for fewer than 2 cameras)."""
        if self._closed:
            return list(self._written)
        try:
            if len(self._cameras) >= 2:
                self._flush_mosaic()
                self._append_mosaics(keep=0)
            else:
                self._drop_mosaics()
                for sinks in (self._gifs, self._mp4s):
                    if MOSAIC in sinks:
                        sinks.pop(MOSAIC).abort()
            written = []
            for sink in [*self._gifs.values(), *self._mp4s.values()]:
                path = sink.close()
                if path is not None:
                    written.append(path)
            self._closed = True
            self._written = sorted(written)
            return list(self._written)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop every unfinished file."""
        self._closed = True
        self._drop_mosaics()
        for sink in [*self._gifs.values(), *self._mp4s.values()]:
            sink.abort()

    def _gif(self, name: str) -> GifWriter:
        if name not in self._gifs:
            self._gifs[name] = GifWriter(self.out_dir / f"{name}.gif", fps=self.fps)
        return self._gifs[name]

    def _mp4(self, name: str) -> Mp4Writer:
        if name not in self._mp4s:
            self._mp4s[name] = Mp4Writer(self.out_dir / f"{name}.mp4", fps=self.fps)
        return self._mp4s[name]

    def _flush_mosaic(self) -> None:
        if not self.mosaic or self._pending_ts is None or self._layout is None:
            return
        assert self._first_ts is not None
        ts = self._pending_ts
        frames, self._pending = self._pending, {}
        self._pending_ts = None
        caption: tuple[str, ...] = (printable(self._segment), f"t = {(ts - self._first_ts) / 1e6:.1f} s", str(ts))
        if any(f.chips_left_out for f in frames.values()):
            caption += (LEFT_OUT_NOTE,)
        tiles = {camera: f.tile for camera, f in frames.items()}
        legend = merged_legend([f.legend for f in frames.values()])
        if self._executor is None:
            self._append_mosaic(render_mosaic_frame(tiles, self._layout, caption, self.gif, self.mp4, legend), ts)
            return
        if isinstance(self._executor, concurrent.futures.ProcessPoolExecutor):  # tiles sent as arrays
            future = self._executor.submit(_render_packed_mosaic, {c: packed(t) for c, t in tiles.items()},
                                           self._layout, caption, self.gif, self.mp4, legend)
        else:
            future = self._executor.submit(render_mosaic_frame, tiles, self._layout, caption, self.gif, self.mp4,
                                           legend)
        self._mosaics.append((future, ts))
        self._append_mosaics(keep=MOSAICS_AHEAD)

    def _append_mosaics(self, keep: int) -> None:
        """Append finished mosaic frames in order; wait while more than `keep` are outstanding."""
        while self._mosaics and (len(self._mosaics) > keep or self._mosaics[0][0].done()):
            future, ts = self._mosaics.popleft()
            self._append_mosaic(future.result(), ts)

    def _append_mosaic(self, frame: MosaicFrame, ts: int) -> None:
        if frame.gif is not None:
            self._gif(MOSAIC).append(frame.gif, ts)
        if frame.image is not None:
            self._mp4(MOSAIC).append(frame.image, ts)

    def _drop_mosaics(self) -> None:
        while self._mosaics:
            self._mosaics.popleft()[0].cancel()


# The caption's last line when a tile had no room for some chips (the table and the page keep them).
LEFT_OUT_NOTE = "chips left out: every box is in the table"
# Mosaic frames composed ahead of the one being appended (each holds ~1 MB of tiles).
MOSAICS_AHEAD = 8


@dataclasses.dataclass(frozen=True)
class MosaicFrame:
    """One timestamp's mosaic: its GIF block and, for MP4, the image."""

    gif: GifFrame | None = dataclasses.field(repr=False)
    image: Image.Image | None = dataclasses.field(repr=False)


def render_mosaic_frame(tiles: dict[CameraName, Image.Image], layout: MosaicLayout, caption: tuple[str, ...],
                        gif: bool, mp4: bool, legend: tuple[LegendEntry, ...] = ()) -> MosaicFrame:
    """Compose and encode one mosaic frame; pure, so a render thread or process can run it."""
    image = compose_mosaic(tiles, layout, caption, legend)
    return MosaicFrame(encode_gif_frame(image) if gif else None, image if mp4 else None)


def _render_packed_mosaic(tiles: dict[CameraName, Packed], layout: MosaicLayout, caption: tuple[str, ...],
                          gif: bool, mp4: bool, legend: tuple[LegendEntry, ...]) -> MosaicFrame:
    """`render_mosaic_frame` in a render process, of tiles sent as arrays."""
    return render_mosaic_frame({c: unpacked(t) for c, t in tiles.items()}, layout, caption, gif, mp4, legend)


def rebuild_animations(
    segment_dir: str | os.PathLike[str],
    *,
    width: int = DEFAULT_WIDTH,
    fps: float | None = None,
    mp4: bool = False,
    gif: bool = True,
    segment_context_name: str | None = None,
    workers: int | None = None,
    notes: list[str] | None = None,
) -> list[Path]:
    """Rebuild a segment's animations from `frames/` (same bytes as the pipeline for PNG frames).

    The mosaic's tiles are the ones the run drew (`detect.sinks.mosaic_tiles`); a frame without
    one (a folder written before they were kept), or whose tile is not its own (another image's,
    another size: a line in `notes`), is shrunk for the mosaic instead.
    The mosaic caption shows `segment_context_name`, by default the directory's name. With `notes`,
    a frame that cannot be read (a link, a FIFO, truncated, oversized) is left out with a line
    there naming it; without, it is an InputError. Every frame unreadable is an InputError.
    """
    segment_dir = Path(segment_dir)
    frames = list_frames(segment_dir)
    if not frames:
        raise InputError(f"no annotated frames under {segment_dir / FRAMES_DIR}")
    segment = segment_context_name or segment_dir.name
    cameras = {f.camera_name for f in frames}
    workers = workers or min(4, os.cpu_count() or 1)

    def prepare(index: int) -> AnimationFrame | str:
        f = frames[index]
        key = FrameKey(segment, f.frame_timestamp_micros, f.camera_name)
        try:
            image = read_frame(f.path)
        except (OSError, ValueError, InputError) as err:  # InputError: read_frame's UnreadableFileError
            if notes is None:
                raise InputError(f"cannot read annotated frame {f.path}: {err}") from err
            return f"{first_line(err)}; frame left out of the animations"
        tile, wrong = kept_tile(segment_dir, key, image.size)
        if wrong is not None:
            refused.append(f"{wrong}; the mosaic shows the frame shrunk")
        return prepare_animation_frame(image, key, width, gif=gif, tile=tile)

    skipped: list[str] = []
    refused: list[str] = []  # tiles that are not their image's (appended from the pool's threads)

    def add(sink: AnimationSet, prepared: AnimationFrame | str) -> None:
        if isinstance(prepared, str):
            skipped.append(prepared)
        else:
            sink.add(prepared)

    with (
        concurrent.futures.ThreadPoolExecutor(workers) as pool,
        AnimationSet(segment_dir, fps=fps, mp4=mp4, gif=gif, mosaic=len(cameras) >= 2) as sink,
    ):
        # A bounded window of futures keeps memory flat however many frames the segment has.
        window: collections.deque[concurrent.futures.Future[AnimationFrame | str]] = collections.deque()
        for index in range(len(frames)):
            window.append(pool.submit(prepare, index))
            if len(window) > 2 * workers:
                add(sink, window.popleft().result())
        while window:
            add(sink, window.popleft().result())
        if len(skipped) == len(frames):
            raise InputError(f"no readable annotated frame under {segment_dir / FRAMES_DIR} ({skipped[0]})")
    if notes is not None:
        notes.extend(skipped)
        notes.extend(refused[:1] + ([f"and {len(refused) - 1} more mosaic tile(s) not their image's"]
                                    if len(refused) > 1 else []))
    return sink.close()
