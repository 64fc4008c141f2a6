"""Models (or one model on several runtimes) side by side, back to back: the model alone per image.

    # an ONNX export against the SavedModel it came from, at the SavedModel's input size:
    python -m detect.tools.bench_models models/centernet_mobilenetv3_coco@tensorflow \\
        models/centernet_mobilenetv3_coco@openvino /tmp/centernet.onnx --input-size fit:960x640
    # the COCO models, each at its own default input size:
    python -m detect.tools.bench_models models/centernet_mobilenetv3_coco models/nanodet_coco \\
        models/ssdlite_mobilenet_v2_coco

Each entry is a model path, `@RUNTIME` after it to pick the runtime (default: what `auto` picks). The
real frame's five images are decoded and resized as the pipeline feeds them (at `--input-size`, else
each model's own default), each image four times a round; every detector is warmed up first, then
they take turns in each of `--rounds` rounds, so a busy machine slows them alike. Printed: medians of
wall and CPU milliseconds per image (CPU: this process, all its threads), and wall against the first.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from detect.engine.loading import choose_settings
from detect.model.detector import Detector
from detect.model.inputs import parse_input_size
from detect.tools.bench_runs import decoded_inputs, detector_alone
from detect.tools.sweep import WAYMO_FRAME

REPEATS = 4  # each of the frame's 5 images, a round


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_models", description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="MODEL or MODEL@RUNTIME (tensorflow, openvino, auto)")
    parser.add_argument("--input-size", help="for every model (default: each model's own)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args(argv)
    runs = {}
    for entry in args.models:
        path, _, runtime = entry.partition("@")
        chosen = choose_settings(Path(path), input_size=args.input_size)
        detector = Detector(path, nms_iou=chosen.nms_iou, runtime=runtime or "auto", batch_size=args.batch_size)
        inputs = decoded_inputs(WAYMO_FRAME, parse_input_size(chosen.input_size))[0] * REPEATS
        detector_alone(detector, inputs)  # compiles each shape
        if detector.runtime_note:
            print(detector.runtime_note)
        runs[f"{entry} ({chosen.input_size}, {detector.runtime.name})"] = (detector, inputs)
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (detector, inputs) in runs.items():
            rate, cpu_per_image = detector_alone(detector, inputs)
            wall[name].append(1000.0 / rate)
            cpu[name].append(1000.0 * cpu_per_image)
    first = statistics.median(wall[next(iter(runs))])
    print(f"batch {args.batch_size}, {5 * REPEATS} images a round, {args.rounds} rounds, medians")
    print("| model (input size, runtime) | ms/image | CPU ms/image | x first |")
    print("|---|---|---|---|")
    for name in runs:
        ms = statistics.median(wall[name])
        print(f"| {name} | {ms:.1f} | {statistics.median(cpu[name]):.1f} | {ms / first:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
