"""Render/encode timings on the real fixture frame (not collected by pytest).

    .venv/bin/python tests/perf_render.py [--tfrecord ../shared/fixtures/waymo_v1_one_frame.tfrecord]

Medians in ms per 1920x1280 FRONT frame with 20 synthetic boxes (the machines are noisy: scale,
not targets).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from detect.core.cameras import CameraName  # noqa: E402
from detect.core.records import Detections, FrameKey  # noqa: E402
from detect.render.draw import draw_detections, to_canvas  # noqa: E402
from detect.render.mosaic import compose_mosaic, mosaic_layout  # noqa: E402
from detect.results.animations import AnimationSet, prepare_animation_frame  # noqa: E402
from detect.results.frames import encode_frame, read_frame, write_frame  # noqa: E402
from detect.results.gif import GifWriter, encode_gif_frame  # noqa: E402
from detect.results.mp4 import Mp4Writer  # noqa: E402

LABELS = {1: "person", 3: "car", 4: "motorcycle", 8: "truck", 10: "traffic light", 13: "stop sign"}


def load_images(tfrecord: Path) -> dict[CameraName, np.ndarray]:
    import tensorflow as tf
    from waymo_open_dataset import dataset_pb2

    record = next(iter(tf.data.TFRecordDataset(str(tfrecord)))).numpy()
    frame = dataset_pb2.Frame.FromString(record)
    return {
        CameraName(im.name): np.asarray(Image.open(io.BytesIO(im.image)).convert("RGB"))
        for im in frame.images
    }


def synthetic_detections(width: int, height: int, n: int = 20, seed: int = 0) -> Detections:
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-50, width - 100, n)
    y0 = rng.uniform(-50, height - 100, n)
    w = rng.uniform(20, 500, n)
    h = rng.uniform(20, 400, n)
    ids = rng.choice(list(LABELS), n)
    return Detections(
        np.stack([x0, y0, x0 + w, y0 + h], 1),
        np.sort(rng.uniform(0.5, 0.99, n))[::-1],
        ids,
        tuple(LABELS[int(i)] for i in ids),
    )


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    default = Path(__file__).resolve().parents[2] / "shared/fixtures/waymo_v1_one_frame.tfrecord"
    parser.add_argument("--tfrecord", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    images = load_images(args.tfrecord)
    front = images[CameraName.FRONT]
    h, w = front.shape[:2]
    dets = synthetic_detections(w, h)
    key = FrameKey("bench", 0, CameraName.FRONT)
    r = args.repeat
    rows: list[tuple[str, float, str]] = []

    annotated = draw_detections(front, dets)
    rows.append(("draw 20 boxes + chips (array in, array out)", median_ms(lambda: draw_detections(front, dets), r), ""))
    png = encode_frame(annotated, "png")
    rows.append(("PNG encode (fpng)", median_ms(lambda: encode_frame(annotated, "png"), r), f"{len(png) / 1e6:.2f} MB"))
    jpg = encode_frame(annotated, "jpg")
    rows.append(("JPEG encode q90 (Pillow)", median_ms(lambda: encode_frame(annotated, "jpg"), r), f"{len(jpg) / 1e6:.2f} MB"))
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(("PNG write, atomic (encode + temp + rename)", median_ms(lambda: write_frame(tmp, key, annotated), r), ""))
        path = write_frame(tmp, key, annotated)
        rows.append(("PNG read back (Pillow decode)", median_ms(lambda: read_frame(path), r), ""))
    canvas = to_canvas(annotated)
    small = canvas.reduce(3)
    rows.append(("array -> PIL image (copy for the animation path)", median_ms(lambda: to_canvas(annotated), r), ""))
    rows.append(("downscale 1920->640 (reduce 3)", median_ms(lambda: canvas.reduce(3), r), ""))
    rows.append(("GIF quantize FASTOCTREE + LZW encode (640)", median_ms(lambda: encode_gif_frame(small), r),
                 f"{len(encode_gif_frame(small).block) / 1e3:.0f} KB"))
    rows.append(("GIF quantize MEDIANCUT only (640, for comparison)", median_ms(lambda: small.quantize(256), 3), ""))
    rows.append(("prepare_animation_frame (downscale+tile+quantize+encode)",
                 median_ms(lambda: prepare_animation_frame(annotated, key), r), ""))

    frame = prepare_animation_frame(annotated, key)
    with tempfile.TemporaryDirectory() as tmp:
        n = 50
        with GifWriter(Path(tmp) / "a.gif") as gif:
            ts = iter(range(0, 10**9, 100_000))
            rows.append(("GIF append (pre-encoded frame)", median_ms(lambda: gif.append(frame.gif, next(ts)), n), ""))
        with Mp4Writer(Path(tmp) / "a.mp4", fps=10) as mp4:
            ts = iter(range(0, 10**9, 100_000))
            start = time.perf_counter()
            for _ in range(n):
                mp4.append(frame.image, next(ts))
            mp4.close()
            rows.append(("MP4 append 640 wide, veryfast (wall per frame incl. close)",
                         (time.perf_counter() - start) * 1000 / n, ""))

        small_frames = {
            cam: prepare_animation_frame(draw_detections(img, dets), FrameKey("bench", 0, cam))
            for cam, img in images.items()
        }
        tiles = {cam: f.tile for cam, f in small_frames.items()}
        layout = mosaic_layout(tiles[CameraName.FRONT].width)
        caption = ("1024360143612057520_3580_000_3600_000", "t = 0.0 s", "1553735853462203")
        rows.append((f"mosaic compose (5 tiles of {layout.tile_width})",
                     median_ms(lambda: compose_mosaic(tiles, layout, caption), r), ""))
        mosaic = compose_mosaic(tiles, layout, caption)
        rows.append((f"mosaic GIF quantize + encode ({layout.size[0]} wide)", median_ms(lambda: encode_gif_frame(mosaic), r), ""))

        def add_timestamp(sink: AnimationSet, ts: int) -> None:
            for cam in sorted(small_frames):
                f = small_frames[cam]
                sink.add(type(f)(FrameKey("bench", ts, cam), f.image, f.gif, f.tile))

        with AnimationSet(Path(tmp) / "anim") as sink:
            ts = iter(range(0, 10**9, 100_000))
            per_ts = median_ms(lambda: add_timestamp(sink, next(ts)), n)
        rows.append(("AnimationSet.add per camera image (5 cams, GIF only, incl. mosaic)", per_ts / 5, ""))

    print(f"{'step':<70} {'ms':>7}  size")
    for name, ms, size in rows:
        print(f"{name:<70} {ms:7.1f}  {size}")


if __name__ == "__main__":
    main()
