"""An incremental H.264 MP4 sink (imageio + the ffmpeg binary bundled by imageio-ffmpeg).

`yuv420p` and even dimensions (odd sizes are padded by one black row/column) so that browsers and
QuickTime play the file. The frame rate comes from the timestamps: the writer buffers the first few
(small) frames to measure the median interval, then starts ffmpeg and streams.
"""

from __future__ import annotations

import os
import statistics
from fractions import Fraction
from typing import Any

import imageio.v2 as imageio
import numpy as np
from PIL import Image

from detect.results.sink import TempFileSink

DEFAULT_FPS = 10.0
PROBE_FRAMES = 10


def fps_from_timestamps(timestamps_micros: list[int]) -> Fraction:
    """Frames per second from the median interval (robust to a dropped frame), to 1/100 fps."""
    intervals = [b - a for a, b in zip(timestamps_micros, timestamps_micros[1:])]
    if not intervals:
        return Fraction(DEFAULT_FPS)
    return Fraction(round(100 * 1_000_000 / statistics.median(intervals)), 100)


def even_rgb(image: Image.Image | np.ndarray) -> np.ndarray:
    """A contiguous uint8 RGB array with even height and width (pads with black if needed)."""
    array = np.asarray(image.convert("RGB") if isinstance(image, Image.Image) else image)
    h, w = array.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return np.ascontiguousarray(array)
    padded = np.zeros((h + h % 2, w + w % 2, 3), np.uint8)
    padded[:h, :w] = array
    return padded


class Mp4Writer(TempFileSink):
    """Context-manager sink: `append(image, timestamp_micros)` in increasing time order.

    Written to a hidden temp file and renamed at `close()`; on error or `abort()` nothing appears
    under the final name.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fps: float | None = None,
        preset: str = "veryfast",
        crf: int = 23,
        probe_frames: int = PROBE_FRAMES,
    ) -> None:
        if fps is not None and fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        super().__init__(path)
        self.fps: Fraction | None = None if fps is None else Fraction(fps).limit_denominator(1001)
        self.preset = preset
        self.crf = crf
        self._probe_frames = max(2, probe_frames)
        self._pending: list[tuple[np.ndarray, int]] = []
        self._last_ts: int | None = None
        self._shape: tuple[int, ...] | None = None
        self._writer: Any = None

    def append(self, image: Image.Image | np.ndarray, timestamp_micros: int) -> None:
        if self._closed:
            raise ValueError(f"MP4 writer for {self.path} is already closed")
        if self._last_ts is not None and timestamp_micros <= self._last_ts:
            raise ValueError(
                f"MP4 frames must come in increasing timestamp order: got {timestamp_micros} "
                f"after {self._last_ts}"
            )
        frame = even_rgb(image)
        if self._shape is None:
            self._shape = frame.shape
        elif frame.shape != self._shape:
            raise ValueError(
                f"MP4 frames must all be {self._shape[1]}x{self._shape[0]}, "
                f"got {frame.shape[1]}x{frame.shape[0]}"
            )
        self._last_ts = int(timestamp_micros)
        if self._writer is not None:
            self._send(frame)
            return
        self._pending.append((frame, int(timestamp_micros)))
        if self.fps is not None or len(self._pending) >= self._probe_frames:
            self._start()

    def _finish(self) -> bool:
        """Start ffmpeg now if the probe frames never filled, then let it finish the file."""
        if self._writer is None:
            if not self._pending:
                return False
            self._start()
        self._writer.close()
        self._writer = None
        return True

    def _discard(self) -> None:
        """Stop ffmpeg (its temp file is removed by `abort`)."""
        self._pending.clear()
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - already failing; the temp file goes anyway
                pass
            self._writer = None

    def _start(self) -> None:
        if self.fps is None:
            self.fps = fps_from_timestamps([ts for _, ts in self._pending])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = imageio.get_writer(
            self._temp,
            format="FFMPEG",
            mode="I",
            fps=self.fps,
            codec="libx264",
            pixelformat="yuv420p",
            quality=None,
            macro_block_size=1,
            ffmpeg_log_level="error",
            # One encoder thread a file: a run writes one file per camera plus the mosaic side by side,
            # so files, not threads, use the cores; and the bytes no longer depend on the core count.
            output_params=["-preset", self.preset, "-crf", str(self.crf), "-threads", "1", "-movflags", "+faststart"],
        )
        pending, self._pending = self._pending, []
        for frame, _ in pending:
            self._send(frame)

    def _send(self, frame: np.ndarray) -> None:
        self._writer.append_data(frame)
        self.frame_count += 1
