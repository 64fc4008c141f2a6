"""`make bench` (or `python -m detect.tools.bench --scaling`): does each output stage scale with workers?

Every stage runs on the real 1920x1280 / 1920x886 frames the way the pipeline runs it: JPEG
decode in tf.data's threads, everything else in render processes with the frame in a
shared-memory slot. Each stage is timed with 1 and with 2 workers back to back (alternating which
goes first) over 7 rounds; the ratio is the median of the rounds' ratios. A worker owns one core
(pinned with `sched_setaffinity`, which the ffmpeg it starts for MP4 inherits; decode pins the
process to 1 or 2 cores), so "1 worker" means one core's worth and the ratio says what a second
core buys. A task handles a few frames (30-60 ms of work, about one frame's render task in a run),
so the pipe's per-task cost counts about as much as in a run. A stage that holds a GIL the
workers share scores ~1.0; one that scales scores ~1.9.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import io
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, FrameResult
from detect.engine.render_pool import FrameSlots, attach, init_worker
from detect.model.inputs import decode_stream
from detect.render.draw import DrawStyle, draw_detections, to_canvas
from detect.render.mosaic import mosaic_layout
from detect.render.mosaic_tile import detection_boxes, downscale_to_width, draw_mosaic_tile, shrink
from detect.results.animations import mosaic_tile_width, render_mosaic_frame
from detect.results.frames import encode_frame
from detect.results.gif import encode_gif_frame
from detect.results.mosaic_tiles import decode_tile, encode_tile
from detect.results.mp4 import Mp4Writer
from detect.results.table import to_table
from detect.waymo.readers import iter_frames

GIF_WIDTH = 640
DECODE = "JPEG decode (tf.data) + resize for the model"
TARGET_RATIO = 1.8
# (name, what one unit is, frames per task): a task takes ~30-60 ms, about one frame's render task,
# so the parent's dispatching stays as small a share as in a run.
STAGES: tuple[tuple[str, str, int], ...] = (
    ("drawing (20 boxes + chips)", "frame", 16),
    ("PNG frame (fpng)", "frame", 3),
    ("JPEG frame (Pillow q90)", "frame", 3),
    ("GIF frame (downscale + quantize + LZW)", "frame", 4),
    ("mosaic tile (shrink, draw for the shown size, JPEG kept)", "frame", 10),
    ("mosaic frame (compose + GIF), per image", "frame", 20),
    ("MP4 frame (640 wide, libx264 via ffmpeg)", "frame", 100),
    ("table rows (30 boxes an image)", "frame", 2000),
)


def sample_detections(width: int, height: int, count: int = 20) -> Detections:
    """`count` boxes spread over the frame, car-sized, with labels and scores (as a busy street)."""
    rng = np.random.default_rng(7)
    x0 = rng.uniform(0, width * 0.9, count)
    y0 = rng.uniform(height * 0.3, height * 0.9, count)
    w, h = rng.uniform(40, 300, count), rng.uniform(30, 200, count)
    xyxy = np.stack([x0, y0, np.minimum(x0 + w, width - 1), np.minimum(y0 + h, height - 1)], axis=1)
    return Detections(xyxy=xyxy.astype(np.float32), scores=rng.uniform(0.5, 1.0, count).astype(np.float32),
                      class_ids=np.full(count, 3, np.int32), labels=tuple(["car"] * count))


# ---- what one task does, in a render process -------------------------------------------------------


def run_stage(stage: str, slot: str, shape: tuple[int, ...], frames: int) -> float:
    """Run `stage` `frames` times on the frame in shared-memory slot `slot`; thread CPU seconds."""
    frame = np.ndarray(shape, np.uint8, buffer=attach(slot).buf)
    start = time.thread_time()
    try:
        _STAGE_FUNCTIONS[stage](frame, frames)
    finally:
        del frame
    return time.thread_time() - start


def _draw(frame: np.ndarray, n: int) -> None:
    detections, style = sample_detections(frame.shape[1], frame.shape[0]), DrawStyle()
    for _ in range(n):
        draw_detections(frame, detections, style, in_place=True)


def _png(frame: np.ndarray, n: int) -> None:
    for _ in range(n):
        encode_frame(frame, "png")


def _jpeg(frame: np.ndarray, n: int) -> None:
    for _ in range(n):
        encode_frame(frame, "jpg")


def _gif(frame: np.ndarray, n: int) -> None:
    for _ in range(n):
        encode_gif_frame(_small(frame))


def _small(frame: np.ndarray) -> Image.Image:
    return downscale_to_width(to_canvas(frame), GIF_WIDTH)


def _tile(frame: np.ndarray, n: int) -> None:
    boxes = detection_boxes(sample_detections(frame.shape[1], frame.shape[0]), DrawStyle())
    for _ in range(n):
        tile, scale = shrink(frame, mosaic_tile_width(GIF_WIDTH))
        with Image.open(io.BytesIO(encode_tile(draw_mosaic_tile(tile, boxes, scale)))) as kept:
            decode_tile(kept)  # as `write_tile` reads it back


def _mosaic(frame: np.ndarray, n: int) -> None:
    """One mosaic frame per 5 camera images (Waymo's five cameras share a timestamp)."""
    tile = downscale_to_width(_small(frame), mosaic_tile_width(GIF_WIDTH))
    tiles = dict.fromkeys(CameraName, tile)
    layout = mosaic_layout(tile.width)
    for _ in range(max(1, n // len(tiles))):
        render_mosaic_frame(tiles, layout, ("segment", "t = 0.0 s", "0"), True, False)


def _mp4(frame: np.ndarray, n: int) -> None:
    small = _small(frame)
    with tempfile.TemporaryDirectory() as scratch, Mp4Writer(Path(scratch) / "bench.mp4", fps=10) as writer:
        for i in range(n):
            writer.append(small, i * 100_000)


def _table(frame: np.ndarray, n: int) -> None:
    detections = sample_detections(frame.shape[1], frame.shape[0], 30)
    results = [FrameResult(FrameKey("segment", i, CameraName.FRONT), frame.shape[1], frame.shape[0], detections)
               for i in range(n)]
    pq.write_table(to_table(results), io.BytesIO())


_STAGE_FUNCTIONS: dict[str, Callable[[np.ndarray, int], None]] = dict(zip(
    (name for name, _, _ in STAGES), (_draw, _png, _jpeg, _gif, _tile, _mosaic, _mp4, _table), strict=True))


# ---- the parent: timing 1 vs 2 workers -------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StageScaling:
    stage: str
    where: str
    one: float  # frames/s with 1 worker (median over repeats)
    two: float  # frames/s with 2 workers
    cpu_ms: float  # CPU ms per frame with 1 worker
    # Median over repeats of (2 workers / 1 worker) measured back to back: the host's speed drifts
    # between repeats far more than within one.
    ratio: float


def summarize(stage: str, where: str, ones: list[float], twos: list[float], cpu_ms: float) -> StageScaling:
    ratio = statistics.median(b / a for a, b in zip(ones, twos, strict=True))
    return StageScaling(stage, where, statistics.median(ones), statistics.median(twos), cpu_ms, ratio)


def real_frames(frame_path: Path) -> tuple[list[bytes], list[np.ndarray]]:
    jpegs = [f.jpeg for f in iter_frames(str(frame_path))]
    return jpegs, [np.asarray(Image.open(io.BytesIO(j)).convert("RGB")) for j in jpegs]


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


@contextlib.contextmanager
def pinned(cores: list[int]) -> Iterator[None]:
    """This process (its threads and the threads it starts) on `cores` only, for the block."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def measure_decode(jpegs: list[bytes], repeats: int, images: int = 120) -> StageScaling:
    """JPEG decode as the pipeline does it: tf.data, `parallel` decode calls (plus the model's resize)."""
    cores = usable_cores()

    def rate(parallel: int) -> float:
        items = ((i, jpegs[i % len(jpegs)]) for i in range(images))
        with pinned(cores[:parallel]):
            start = time.perf_counter()
            count = sum(1 for _ in decode_stream(items, input_size=(320, 320), keep_full=True, parallel=parallel))
            return count / (time.perf_counter() - start)

    rate(1)  # warm-up: builds the tf.data graph
    ones, twos = [], []
    for repeat in range(repeats):
        if repeat % 2:
            twos.append(rate(2))
            ones.append(rate(1))
        else:
            ones.append(rate(1))
            twos.append(rate(2))
    return summarize(DECODE, "tf.data threads", ones, twos, 1000 / statistics.median(ones))


def measure_render_stages(frames: list[np.ndarray], repeats: int, budget: float = 1.0) -> list[StageScaling]:
    """Each render stage through the render processes, 1 and 2 of them, frames in shared memory."""
    slots = FrameSlots(len(frames))
    held = [(slots.put(frame), frame.shape) for frame in frames]
    pools = {n: pinned_pool(n) for n in (1, 2)}
    try:
        for pool in pools.values():  # start the processes and import the stages before timing
            list(pool.map(run_stage, *zip(*[(name, held[0][0].name, held[0][1], 1) for name, _, _ in STAGES],
                                          strict=True)))
        results = []
        for name, _, per_task in STAGES:
            # Enough tasks for ~`budget` seconds with one worker, so dispatch latency and noise stay small.
            start = time.perf_counter()
            pools[1].submit(run_stage, name, held[0][0].name, held[0][1], per_task).result()
            tasks = max(8, 2 * round(budget / (time.perf_counter() - start) / 2))
            rates: dict[int, list[float]] = {1: [], 2: []}
            cpu: list[float] = []
            for repeat in range(repeats):
                # Alternate which goes first, so a drift in the host's speed does not favour one.
                for n, pool in sorted(pools.items(), reverse=bool(repeat % 2)):
                    args = [(name, held[i % len(held)][0].name, held[i % len(held)][1], per_task) for i in range(tasks)]
                    start = time.perf_counter()
                    seconds = list(pool.map(run_stage, *zip(*args, strict=True)))
                    rates[n].append(tasks * per_task / (time.perf_counter() - start))
                    if n == 1:
                        cpu.append(sum(seconds) / (tasks * per_task))
            results.append(summarize(name, "render processes", rates[1], rates[2], 1000 * statistics.median(cpu)))
        return results
    finally:
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        for slot, _ in held:
            slots.release(slot)
        slots.close()


def pinned_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """Render processes like the pipeline's, each pinned to a core of its own."""
    context = multiprocessing.get_context("spawn")
    counter = context.Value("i", 0)
    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=pin_worker,
                                                  initargs=(counter, usable_cores()))


def pin_worker(counter: Any, cores: list[int]) -> None:
    init_worker()
    with counter.get_lock():
        index = counter.value
        counter.value += 1
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cores[index % len(cores)]})


def scaling(frame_path: Path, repeats: int = 3) -> list[StageScaling]:
    jpegs, frames = real_frames(frame_path)
    return [measure_decode(jpegs, repeats), *measure_render_stages(frames, repeats)]


def scaling_lines(rows: list[StageScaling]) -> list[str]:
    lines = ["", "output stages, 1 vs 2 workers (frames/s and ratio: medians of interleaved repeats; "
             "CPU ms a frame with 1 worker)",
             f"  {'stage':<46} {'where':<17} {'1 worker':>9} {'2 workers':>10} {'ratio':>6} {'CPU ms':>7}"]
    for r in rows:
        lines.append(f"  {r.stage:<46} {r.where:<17} {r.one:9.1f} {r.two:10.1f} {r.ratio:6.2f} {r.cpu_ms:7.2f}")
    worst = min(rows, key=lambda r: r.ratio)
    verdict = "met" if worst.ratio >= TARGET_RATIO else "MISSED"
    lines.append(f"  lowest ratio {worst.ratio:.2f} ({worst.stage}) (target >= {TARGET_RATIO:g} for every stage: {verdict})")
    return lines
