"""Input sizes side by side: AP per type on the real Waymo frame and on the MOT17 pedestrian
fixtures, and the model's time per image, for each model and `--input-size`.

    python -m detect.tools.sweep --models /tmp/size-models/centernet \\
        --sizes native 864x576 fit:864x576 fit:960x640 fit:1056x704
    python -m detect.tools.sweep --models models/*_coco --sizes default   # models side by side

AP: `detect run` then `detect eval` with the model's own threshold and NMS (every label, the
default class map), pooled over the data set's images. Time: the model alone (the runtime `detect`
picks, OpenVINO here) on the real frame's five images decoded and resized as the pipeline does,
each size warmed up first (OpenVINO compiles a network per shape), then `--rounds` rounds with the
sizes interleaved, so that a busy machine slows them all alike; the median is reported and the
ratio to the first size given (put today's default first).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from detect.cli import main as detect_main
from detect.engine.loading import choose_settings
from detect.model.detector import Detector
from detect.model.inputs import parse_input_size
from detect.tools.bench_runs import decoded_inputs, detector_alone

# ../shared/fixtures beside the checkout (a worktree under /work/wt/<name> finds /work/shared too).
FIXTURES = next((p / "shared" / "fixtures" for p in Path(__file__).resolve().parents
                 if (p / "shared" / "fixtures").is_dir()), Path("../shared/fixtures"))
WAYMO_FRAME = FIXTURES / "waymo_v1_one_frame.tfrecord"
MOT17 = FIXTURES / "mot17mini_v2" / "camera_image"
TYPES = ("VEHICLE", "PEDESTRIAN", "CYCLIST")
DEFAULT = "default"  # a size that stands for each model's own default input size


def ap50(paths: list[Path], model: Path, size: str, out: Path) -> dict[str, float | None]:
    """AP50 per type (every label) of `detect run` over `paths` at this input size."""
    args = ["run", *map(str, paths), "--model", str(model), "--input-size", size, "--out", str(out),
            "--quiet", "--no-gif", "--no-png"]
    if detect_main(args) != 0 or detect_main(["eval", str(out), "--quiet"]) != 0:
        raise SystemExit(f"sweep: detect {' '.join(args)} failed")
    rows = json.loads((out / "eval.json").read_text())["levels"]["LEVEL_2"]
    return {r["name"]: r["ap50"] for r in rows}


def model_ms(model: Path, sizes: list[str], rounds: int) -> dict[str, float]:
    """Median ms per image of the model alone at each size, the sizes interleaved in every round."""
    chosen = choose_settings(model)
    detector = Detector(model, threshold=0.05, nms_iou=chosen.nms_iou)
    inputs = {size: decoded_inputs(WAYMO_FRAME, parse_input_size(size))[0] for size in sizes}
    for size in sizes:
        detector_alone(detector, inputs[size])  # compiles each shape
    times: dict[str, list[float]] = {size: [] for size in sizes}
    for _ in range(rounds):
        for size in sizes:
            rate, _cpu = detector_alone(detector, inputs[size])
            times[size].append(1000.0 / rate)
    return {size: statistics.median(values) for size, values in times.items()}


def fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", type=Path, required=True)
    parser.add_argument("--sizes", nargs="+", required=True,
                        help=f"as --input-size takes them, or {DEFAULT!r} (each model's own); the first is the baseline")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, help="where the runs are written (default: a temporary folder)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="sweep."))
    mot = sorted(MOT17.glob("*.parquet"))
    print("| model | input size | Waymo VEHICLE | PEDESTRIAN | CYCLIST | MOT17 PEDESTRIAN | ms/image | x first |")
    print("|---|---|---|---|---|---|---|---|")
    for model in args.models:
        started = time.perf_counter()
        sizes = [choose_settings(model).input_size if size == DEFAULT else size for size in args.sizes]
        ms = model_ms(model, sizes, args.rounds)
        for n, size in enumerate(sizes):
            tag = f"{model.name}.{n}"
            waymo = ap50([WAYMO_FRAME], model, size, work / tag / "waymo")
            people = ap50(mot, model, size, work / tag / "mot17")
            print(f"| {model.name} | {size} | {' | '.join(fmt(waymo.get(t)) for t in TYPES)} | "
                  f"{fmt(people.get('PEDESTRIAN'))} | {ms[size]:.0f} | {ms[size] / ms[sizes[0]]:.2f} |", flush=True)
        print(f"({model.name}: {time.perf_counter() - started:.0f} s; runs under {work})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
