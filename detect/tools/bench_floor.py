"""CPU ms an image of the steps whose output bytes are fixed: the floor of a stub-model run with
PNG frames and every default output, as long as every picture must stay byte for byte the same.

    python -m detect.tools.bench_floor [--repeats 20] [--frame FRAME]

Each step runs alone, on the real frame's five camera images, the way the run calls it: the decode
and the model's input resize in TensorFlow (process CPU: its threads), the rest in this thread
(thread CPU). A step here has no cheaper equal: another encoder, quantizer, resize or shrink gives
other bytes (docs/performance.md, "The output stage, stage by stage"). What a run spends above
their sum is the drawing, tracking, tables and the queues (`python -m detect.tools.bench_stages`).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from detect.core.atomic import atomic_write_bytes
from detect.core.records import CameraFrame
from detect.engine.spec import SegmentSettings
from detect.engine.tuning import keep_freed_memory
from detect.model.inputs import decode_stream
from detect.render.draw import to_canvas
from detect.render.mosaic import mosaic_layout
from detect.render.mosaic_tile import MosaicTile, downscale_to_width, shrink
from detect.results.animations import mosaic_tile_width, render_mosaic_frame
from detect.results.frames import encode_frame
from detect.results.gif import encode_gif_frame
from detect.results.mosaic_tiles import decode_tile, encode_tile
from detect.tools.bench_runs import SHARED_FRAME
from detect.waymo.readers import iter_frames


def process_ms(run: Callable[[], int]) -> float:
    """CPU ms an item of `run` (which returns its item count), every thread of this process counted."""
    before = os.times()
    items = run()
    after = os.times()
    return 1000 * (after.user + after.system - before.user - before.system) / items


class StepClock:
    """Thread CPU ms of named steps, summed over the images they ran on."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def __call__(self, step: str, func: Callable[..., Any], *args: Any) -> Any:
        start = time.thread_time()
        result = func(*args)
        self.ms[step] = self.ms.get(step, 0.0) + 1000 * (time.thread_time() - start)
        return result


def floor_steps(images: list[CameraFrame], repeats: int, scratch: Path) -> dict[str, float]:
    """Each fixed step's CPU ms an image (the mosaic's per timestamp, divided by its five images)."""
    settings = SegmentSettings()
    jpegs = [image.jpeg for image in images]

    def decode(input_size: Any) -> int:
        items = ((i, jpegs[i % len(jpegs)]) for i in range(repeats * len(jpegs)))
        return sum(1 for _ in decode_stream(items, input_size=input_size, keep_full=True))

    decode(settings.input_size)  # warm: the graph traced once
    decoded_ms = process_ms(lambda: decode(None))
    resized_ms = process_ms(lambda: decode(settings.input_size))
    frames = [np.asarray(d.full) for d in decode_stream(enumerate(jpegs), input_size=None, keep_full=True)]
    width = settings.gif_width
    tile_width = mosaic_tile_width(width)
    layout = mosaic_layout(tile_width)
    caption = ("synthetic", "t = 0.0 s", "0")
    clock = StepClock()
    # One image after the other, each step on the last one's output, as a render thread runs them
    # (a frame just copied is still in the cache when it is shrunk); the first round warms up.
    for round_ in range(repeats + 1):
        if round_ == 1:
            clock.ms.clear()
        kept = {}
        for image, frame in zip(images, frames, strict=True):
            drawn = clock("the drawn frame's copy (the decoded one is read-only)", np.copy, frame)
            raw_tile, _ = clock("mosaic tile: the raw frame to Pillow, reduced", shrink, drawn, tile_width)
            png = clock("PNG frame: fpng", encode_frame, drawn)
            clock("PNG frame: the file written", atomic_write_bytes, scratch / f"{round_}_{image.camera_name}.png", png)
            data = clock("mosaic tile: JPEG encoded, decoded back", encode_tile, MosaicTile(Image.fromarray(raw_tile)))
            kept[image.camera_name] = clock("mosaic tile: JPEG encoded, decoded back", read_back, data).image
            small = clock("GIF frame: the drawn frame to Pillow, reduced", lambda f: downscale_to_width(to_canvas(f), width),
                          drawn)
            clock("GIF frame: quantize, LZW", encode_gif_frame, small)
        clock("mosaic frame: compose, quantize, LZW (per image)", render_mosaic_frame, kept, layout, caption, True, False)
    images_timed = repeats * len(images)
    return {
        "JPEG decode (TensorFlow)": decoded_ms,
        "the model's input resize (antialiased, 320x320)": resized_ms - decoded_ms,
        **{step: ms / images_timed for step, ms in clock.ms.items()},
    }


def read_back(data: bytes) -> MosaicTile:
    """A tile's JPEG decoded, as the run decodes it for the mosaic."""
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return decode_tile(image)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=Path, default=SHARED_FRAME, help="the real Waymo frame (its five images)")
    parser.add_argument("--repeats", type=int, default=20, help="rounds of the five images")
    parser.add_argument("--rounds", type=int, default=3, help="the median of this many measurements")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as the `detect` command does
    images = list(iter_frames(str(args.frame)))
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            for step, ms in floor_steps(images, args.repeats, Path(scratch)).items():
                rows.setdefault(step, []).append(ms)
            for path in Path(scratch).iterdir():
                path.unlink()
    print(f"CPU ms an image of the steps whose bytes are fixed, the real frame's {len(images)} images, "
          f"median of {args.rounds}")
    for step, values in rows.items():
        print(f"  {step:<56} {statistics.median(values):7.2f}")
    print(f"  {'the floor (their sum)':<56} {sum(statistics.median(v) for v in rows.values()):7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
