"""Time the detector alone with the benchmark model on the fixture's real Waymo frames.

    python models/measure_detector.py [--model DIR] [--runs 5]

Reports load + warm-up time, then images/s at batch 1, 4, 8, 16 for (a) frames pre-resized to
320x320 and (b) full-size 1920x1280 frames (resized inside the model); medians of `--runs` runs
after one untimed call per batch shape. The default `--batch-size` of `detect.model.detector` comes
from this script's numbers on a 2-core CPU machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from detect.core.tf_env import import_tensorflow  # noqa: E402

FIXTURE = HERE.parents[1] / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"
BATCHES = (1, 4, 8, 16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="benchmark SavedModel (built to a temp dir if absent)")
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    import build_benchmark
    tf = import_tensorflow()  # quiet: no CUDA/oneDNN start-up chatter

    from detect.model.detector import Detector

    frames = build_benchmark.fixture_images(args.fixture)
    full = [f for f in frames if f.shape[:2] == (1280, 1920)]
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            model = Path(tmp) / "bench"
            build_benchmark.build_benchmark(model, calibration_images=frames)
        start = time.perf_counter()
        detector = Detector(model, batch_size=max(BATCHES))
        load = time.perf_counter() - start
        print(f"model: {detector.info.description}")
        print(f"load + warm-up (batch {max(BATCHES)}, 320x320): {load:.2f} s")
        inputs = {
            "320x320": [tf.image.resize(f, [320, 320]).numpy().astype(np.uint8) for f in full],
            "1920x1280": full,
        }
        print("| batch | input | ms/image | images/s | first call s |")
        print("|---|---|---|---|---|")
        for name, pool in inputs.items():
            for batch in BATCHES:
                images = np.stack([pool[i % len(pool)] for i in range(batch)])
                sizes = [(1920, 1280)] * batch
                t0 = time.perf_counter()
                detector(images, sizes)
                first = time.perf_counter() - t0
                times = []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    detector(images, sizes)
                    times.append(time.perf_counter() - t0)
                per_image = statistics.median(times) / batch
                print(f"| {batch} | {name} | {per_image * 1000:.1f} | {1 / per_image:.1f} "
                      f"| {first:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
