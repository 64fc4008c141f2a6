"""An ONNX export against the SavedModel it was exported from, back to back: the model alone per image.

    python -m detect.tools.bench_onnx --saved-model models/centernet_mobilenetv3_coco \\
        --onnx /tmp/centernet.onnx --rounds 7

Three detectors on the real frame's five images, decoded and resized as the pipeline feeds them (at
the SavedModel's default input size), each image four times a round: the SavedModel on TensorFlow,
the SavedModel on OpenVINO (its network converted, TensorFlow's pre- and post-processing around it),
and the ONNX file on OpenVINO (the whole graph). Each is warmed up first, then the three take turns
in every round, so a busy machine slows them alike; medians of wall and CPU milliseconds per image.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_onnx", description=__doc__.splitlines()[0])
    parser.add_argument("--saved-model", type=Path, required=True)
    parser.add_argument("--onnx", type=Path, required=True, help="its export (tf2onnx, in the TF Object Detection API layout)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args(argv)
    chosen = choose_settings(args.saved_model)
    inputs = decoded_inputs(WAYMO_FRAME, parse_input_size(chosen.input_size))[0] * 4
    detectors = {
        "SavedModel, TensorFlow": Detector(args.saved_model, nms_iou=chosen.nms_iou, runtime="tensorflow",
                                           batch_size=args.batch_size),
        "SavedModel, OpenVINO (network only)": Detector(args.saved_model, nms_iou=chosen.nms_iou, runtime="openvino",
                                                        batch_size=args.batch_size),
        "ONNX, OpenVINO (whole graph)": Detector(args.onnx, nms_iou=chosen.nms_iou, runtime="openvino",
                                                 batch_size=args.batch_size),
    }
    for detector in detectors.values():
        detector_alone(detector, inputs)  # compiles each shape
    wall: dict[str, list[float]] = {name: [] for name in detectors}
    cpu: dict[str, list[float]] = {name: [] for name in detectors}
    for _ in range(args.rounds):
        for name, detector in detectors.items():
            rate, cpu_per_image = detector_alone(detector, inputs)
            wall[name].append(1000.0 / rate)
            cpu[name].append(1000.0 * cpu_per_image)
    base = statistics.median(wall["SavedModel, TensorFlow"])
    print(f"input size {chosen.input_size}, batch {args.batch_size}, {len(inputs)} images a round, {args.rounds} rounds")
    print("| model, runtime | ms/image (median) | CPU ms/image | x TensorFlow |")
    print("|---|---|---|---|")
    for name in detectors:
        ms = statistics.median(wall[name])
        print(f"| {name} | {ms:.1f} | {statistics.median(cpu[name]):.1f} | {ms / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
