"""An incremental animated-GIF sink: each frame goes to disk as it comes, memory stays flat.

Pillow's `save(save_all=True, append_images=...)` needs every frame in a list. Here each frame is
quantized and LZW-encoded on its own (`encode_gif_frame`, safe to call in worker threads) into an
image block with a local color table; `GifWriter` writes the header once, then per frame a graphic
control extension (its delay) and the block. The writer holds one frame back: a frame's delay is
known when the next timestamp arrives. A clip shorter than `MIN_LOOP_CS` (7 frames at 30 fps play
in 0.23 s, a blink) is slowed down to last that long: its first frames are held until they span
it, which only a short clip never does.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from typing import BinaryIO

from PIL import GifImagePlugin, Image

from detect.sinks.sink import TempFileSink

# Waymo cameras run at 10 Hz: a lone frame (no interval to measure) shows for 100 ms.
DEFAULT_DELAY_CS = 10
# Browsers replace delays below 2 cs by 10 cs; clamp so fast sequences stay fast everywhere.
MIN_DELAY_CS = 2
# A gap longer than this (segments recorded minutes apart, a dropped stretch of frames) shows
# for 5 s: the format holds at most 65535 cs (~11 min), and a GIF that freezes for minutes
# reads as broken, not as "time passed".
MAX_DELAY_CS = 500
# An animation plays for at least this long a loop: a shorter clip is slowed down evenly (its frames
# keep their relative timing); a longer one plays in real time.
MIN_LOOP_CS = 200
_NETSCAPE_LOOP_FOREVER = b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", 0) + b"\x00"


@dataclasses.dataclass(frozen=True)
class GifFrame:
    """One frame already quantized and encoded: image descriptor + local color table + LZW data."""

    width: int
    height: int
    block: bytes = dataclasses.field(repr=False)


def encode_gif_frame(image: Image.Image, colors: int = 256) -> GifFrame:
    """Quantize with fast octree (~2-7 ms at 640 wide vs ~130 ms median cut) and LZW-encode."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    indexed = rgb.quantize(colors=colors, method=Image.Quantize.FASTOCTREE)
    block = b"".join(GifImagePlugin.getdata(indexed, include_color_table=True))
    return GifFrame(indexed.width, indexed.height, block)


def clamp_delay_cs(delay_cs: int) -> int:
    """The one rule for a frame's delay: at least MIN_DELAY_CS, at most MAX_DELAY_CS (5 s)."""
    return min(MAX_DELAY_CS, max(MIN_DELAY_CS, delay_cs))


def delays_cs(timestamps_micros: list[int], fps: float | None = None) -> list[int]:
    """Per-frame GIF delays (centiseconds) from timestamps; the last frame repeats the previous.

    Rounded on the cumulative clock so a 20 s segment lasts 20 s however the intervals jitter;
    each delay is clamped by `clamp_delay_cs` (a 1,000 s gap shows for 5 s); a clip of two or more
    frames shorter than `MIN_LOOP_CS` is slowed down to last that long (`slowed_down`).
    """
    if fps is not None:
        delays = [clamp_delay_cs(round(100 / fps))] * len(timestamps_micros)
    else:
        ticks = [round((t - timestamps_micros[0]) / 10_000) for t in timestamps_micros]
        delays = [clamp_delay_cs(b - a) for a, b in zip(ticks, ticks[1:])]
        delays.append(delays[-1] if delays else DEFAULT_DELAY_CS)
    if len(delays) < 2 or sum(delays) >= MIN_LOOP_CS:
        return delays
    return slowed_down(_durations(timestamps_micros, fps))


def slowed_down(durations_micros: list[float]) -> list[int]:
    """The delays (centiseconds) of frames shown for `durations_micros`, stretched evenly so that
    they last `MIN_LOOP_CS` (on the cumulative clock: a frame twice as long stays twice as long)."""
    total = sum(durations_micros)
    ticks, clock = [0], 0.0
    for duration in durations_micros:
        clock += duration
        ticks.append(round(clock * MIN_LOOP_CS / total) if total > 0 else len(ticks))
    return [clamp_delay_cs(b - a) for a, b in zip(ticks, ticks[1:])]


def _durations(timestamps_micros: list[int], fps: float | None) -> list[float]:
    """How long each frame shows in real time: until the next one; the last as long as the one before."""
    if fps is not None:
        return [1e6 / fps] * len(timestamps_micros)
    gaps = [float(b - a) for a, b in zip(timestamps_micros, timestamps_micros[1:])]
    return [*gaps, gaps[-1] if gaps else DEFAULT_DELAY_CS * 10_000.0]


class GifWriter(TempFileSink):
    """Context-manager sink: `append(frame, timestamp_micros)` in increasing time order.

    The file is written under a hidden temp name and renamed at `close()`; on error or `abort()`
    the temp file is removed and nothing appears under the final name. Loops forever.
    """

    def __init__(self, path: str | os.PathLike[str], *, fps: float | None = None) -> None:
        if fps is not None and fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        super().__init__(path)
        self.fps = fps
        self._file: BinaryIO | None = None
        self._size: tuple[int, int] | None = None
        self._held: tuple[GifFrame, int] | None = None
        # the first frames, their delays and timestamps while they span less than MIN_LOOP_CS (None: written)
        self._early: list[tuple[GifFrame, int, int]] | None = []
        self._last_delay = DEFAULT_DELAY_CS
        self._start_tick = 0

    def append(self, frame: GifFrame | Image.Image, timestamp_micros: int) -> None:
        """Add a frame shown from `timestamp_micros`; a PIL image is encoded here (slower path)."""
        if self._closed:
            raise ValueError(f"GIF writer for {self.path} is already closed")
        if isinstance(frame, Image.Image):
            frame = encode_gif_frame(frame)
        size = (frame.width, frame.height)
        if self._size is None:
            self._open(size, timestamp_micros)
        elif size != self._size:
            raise ValueError(f"GIF frames must all be {self._size[0]}x{self._size[1]}, got {size[0]}x{size[1]}")
        if self._held is not None:
            previous = self._held[1]
            if timestamp_micros <= previous:
                raise ValueError(
                    f"GIF frames must come in increasing timestamp order: got {timestamp_micros} "
                    f"after {previous}"
                )
            self._hand_on(self._held, self._delay_until(previous, timestamp_micros))
        self._held = (frame, int(timestamp_micros))

    def _hand_on(self, held: tuple[GifFrame, int], delay_cs: int) -> None:
        """Write a frame whose delay is known, or keep it while the clip may still be short."""
        if self._early is None:
            self._write(held[0], delay_cs)
            return
        self._early.append((held[0], delay_cs, held[1]))
        if sum(d for _, d, _ in self._early) >= MIN_LOOP_CS:  # long enough: real time from here on
            for early, delay, _ in self._early:
                self._write(early, delay)
            self._early = None

    def _finish(self) -> bool:
        """Flush the held frame (it shows for the last delay seen), the first frames of a short
        clip slowed down (`slowed_down`), and the trailer."""
        if self._held is None:
            return False
        self._hand_on(self._held, self._last_delay)
        if self._early is not None:
            early = self._early
            delays = slowed_down(_durations([ts for *_, ts in early], self.fps)) if len(early) > 1 else [early[0][1]]
            for (image, _, _), delay in zip(early, delays, strict=True):
                self._write(image, delay)
            self._early = None
        self._held = None
        assert self._file is not None
        self._file.write(b";")
        self._file.close()
        return True

    def _discard(self) -> None:
        self._held = None
        self._early = None
        if self._file is not None:
            self._file.close()

    def _open(self, size: tuple[int, int], timestamp_micros: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self._temp, "wb")
        self._size = size
        self._start_tick = int(timestamp_micros)
        if self.fps is not None:
            self._last_delay = clamp_delay_cs(round(100 / self.fps))
        # Logical screen without a global color table: every frame carries its own palette.
        self._file.write(b"GIF89a" + struct.pack("<HHBBB", size[0], size[1], 0, 0, 0))
        self._file.write(_NETSCAPE_LOOP_FOREVER)

    def _delay_until(self, previous: int, current: int) -> int:
        if self.fps is not None:
            return self._last_delay
        # Same cumulative rounding as `delays_cs`, one step at a time.
        a = round((previous - self._start_tick) / 10_000)
        b = round((current - self._start_tick) / 10_000)
        self._last_delay = clamp_delay_cs(b - a)
        return self._last_delay

    def _write(self, frame: GifFrame, delay_cs: int) -> None:
        assert self._file is not None
        # Graphic control extension: disposal 1 (leave in place), no transparency.
        self._file.write(b"!\xf9\x04" + struct.pack("<BHBB", 1 << 2, delay_cs, 0, 0))
        self._file.write(frame.block)
        self.frame_count += 1
