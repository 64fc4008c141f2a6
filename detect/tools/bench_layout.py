"""What the chip layout costs: CPU ms per image of `lay_out_chips` alone and of `draw_boxes` (outlines,
layout, chips painted) on a 1920x1280 frame with a crowd of boxes, the median of many repeats.

    python -m detect.tools.bench_layout [--boxes 60] [--repeats 200] [--seed 0]

The boxes: people and cars of the sizes a driving scene holds (20-400 px), a third of them
overlapping a neighbour, each with a long and a short chip text as the frames draw them.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from detect.render.chip_layout import frame_font_size, lay_out_chips
from detect.render.draw import draw_boxes

WIDTH, HEIGHT = 1920, 1280


def crowd(n: int, seed: int = 0) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """`n` boxes (pixel xyxy) of a driving scene's sizes and their chip texts (long, short)."""
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(20), np.log(400), n))
    aspect = np.where(rng.random(n) < 0.5, 0.4, 1.6)  # people tall, cars wide
    w, h = sizes * np.sqrt(aspect), sizes / np.sqrt(aspect)
    x0, y0 = rng.uniform(0, WIDTH - w), rng.uniform(HEIGHT * 0.3, HEIGHT - h)
    near = rng.random(n) < 1 / 3  # a third next to the box before them
    x0[1:][near[1:]] = x0[:-1][near[1:]] + w[:-1][near[1:]] * 0.4
    x0 = np.minimum(x0, WIDTH - w)
    xyxy = np.stack([x0, y0, x0 + w, y0 + h], 1)
    scores = np.sort(rng.uniform(0.3, 0.95, n))[::-1]
    texts: list[tuple[str, ...]] = [(f"#{i + 1} {'person' if a < 1 else 'car'} {s:.2f}", f"#{i + 1} " + f"{s:.2f}"[1:])
             for i, (a, s) in enumerate(zip(aspect, scores, strict=True))]
    return xyxy, texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_layout", description=__doc__.splitlines()[0])
    parser.add_argument("--boxes", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    xyxy, texts = crowd(args.boxes, args.seed)
    boxes: list[tuple[int, int, int, int] | None] = [
        (int(x0), int(y0), int(x1), int(y1)) for x0, y0, x1, y1 in np.clip(xyxy, 0, [WIDTH - 1, HEIGHT - 1] * 2).round()]
    size = frame_font_size(WIDTH)
    colors = [(86, 180, 233)] * len(texts)
    frame = np.zeros((HEIGHT, WIDTH, 3), np.uint8)
    layout, drawing = [], []
    placed = 0
    for _ in range(args.repeats):
        start = time.thread_time()
        chips = lay_out_chips(boxes, texts, size, WIDTH, HEIGHT, inset=4)
        layout.append(time.thread_time() - start)
        canvas = frame.copy()
        start = time.thread_time()
        draw_boxes(canvas, xyxy, texts, colors)
        drawing.append(time.thread_time() - start)
        placed = sum(c is not None for c in chips)
    print(f"{args.boxes} boxes on {WIDTH}x{HEIGHT}, {placed} chips placed: layout "
          f"{1000 * statistics.median(layout):.2f} CPU-ms, draw_boxes (outlines, layout, chips) "
          f"{1000 * statistics.median(drawing):.2f} CPU-ms an image (median of {args.repeats})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
