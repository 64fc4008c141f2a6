"""`make bench`: the pipeline against the detector alone and against the blog script's loop.

    python -m detect.tools.bench [--models models/build] [--out bench-out] [--images 200] [--repeats 3]

Uses the benchmark model (SSD MobileNet v2 architecture, random weights: real compute,
meaningless boxes) on synthetic segments made of the real fixture frame's JPEGs. Every figure
is measured in this one run on this machine; rates exclude start-up (imports, model load), which
is reported on its own. Medians over `--repeats` interleaved runs; efficiency is the median of
per-repeat ratios (each pipeline run against its repeat's detector run). Each model runs on each
runtime (`--runtimes`, default TensorFlow and OpenVINO), interleaved, then side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

from detect.core.tf_env import import_tensorflow
from detect.engine.loading import choose_settings, model_facts
from detect.engine.tuning import keep_freed_memory
from detect.model.detector import DEFAULT_BATCH_SIZE, Detector
from detect.model.inputs import parse_input_size
from detect.tools.bench_memory import memory
from detect.tools.bench_predict import (
    DEFAULT_OUTPUTS,
    SteadyRun,
    main_process_ms,
    predict,
    prediction_lines,
    steady_lines,
    steady_state,
)
from detect.tools.bench_rows import ImagesPerSecond, MemoryRuns, ModelRates, RuntimeRates, Startup
from detect.tools.bench_runs import SHARED_FRAME, decoded_inputs, detector_alone, make_segments, pipeline
from detect.tools.bench_runtimes import RUNTIMES, compare_runtimes, runtime_lines
from detect.tools.bench_scaling import scaling, scaling_lines
from detect.tools.bench_sizes import SizeCost, size_cost, size_lines
from detect.tools.bench_targets import verdict
from detect.tools.bench_tiles import tile_lines, tile_rates
from detect.tools.bench_tracking import TrackingCost, tracking_cost, tracking_lines
from detect.waymo.readers import iter_frames

ROOT = Path(__file__).resolve().parents[2]
STEADY_IMAGES = 200
# Stage ratios drift with the host from round to round; 7 short rounds (~2 minutes) steady the median.
SCALING_REPEATS = 7
STEADY_START = 40
TILE_IMAGES = 20  # --tile costs 10-20x: a shorter segment for its rates
BENCH_MODEL = "ssd_mobilenet_v2_random"
# Default outputs: efficiency against the "best possible" bound this run prints (issue 15).
TARGETS = {"efficiency_no_outputs": 0.90, "default_share_of_bound": 0.90, "speedup_vs_blog": 8.0, "rss_ratio": 1.3}


def stub_model(args: argparse.Namespace) -> Path:
    stub = args.models / "stub_dynamic"
    if not (stub / "saved_model.pb").exists():
        subprocess.run([sys.executable, str(ROOT / "models" / "build_stub.py"), "--out", str(args.models)], check=True)
    return stub


def steady_segments(args: argparse.Namespace) -> tuple[Path, Path]:
    """Two segments `STEADY_IMAGES` images apart: their difference is a run's steady part."""
    segments = make_segments(args.frame, args.out, [STEADY_START, STEADY_START + STEADY_IMAGES])
    return segments[STEADY_START], segments[STEADY_START + STEADY_IMAGES]


def steady_runs(args: argparse.Namespace, short: Path, long: Path) -> list[SteadyRun]:
    """The stub model (near free) and PNG frames: the outputs are the whole work, as on a GPU box;
    the last run, with every default output, gives the GPU box's ceiling (`gpu_box_ceiling`)."""
    out = args.out / "steady"
    return [steady_state(label, short, long, STEADY_IMAGES, stub_model(args), out, flags, args.repeats)
            for label, flags in (("no GIF, 2 render threads (--render threads)", ["--no-gif", "--render", "threads",
                                                                               "--workers", "2"]),
                                 ("no GIF, 2 render processes (default)", ["--no-gif", "--workers", "2"]),
                                 (f"{DEFAULT_OUTPUTS}, 2 render processes", ["--workers", "2"]))]


def ensure_model(models: Path) -> Path:
    path = models / BENCH_MODEL
    if not (path / "saved_model.pb").exists():
        print(f"building the benchmark model into {path} (~20 s) ...", flush=True)
        subprocess.run([sys.executable, str(ROOT / "models" / "build_benchmark.py"), "--out", str(path)], check=True)
    return path


def blog_loop(detector, segment: Path, out: Path, count: int) -> float:
    """The blog script as written: PIL decode, batch 1 on the full frame, matplotlib savefig."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.patches as patches
    import matplotlib.pyplot as plt
    out.mkdir(parents=True, exist_ok=True)
    frames = [f for _, f in zip(range(count), iter_frames(str(segment)))]
    start = time.perf_counter()
    for n, frame in enumerate(frames):
        image = np.array(Image.open(io.BytesIO(frame.jpeg)))
        detections = detector(image[None])[0]
        fig, ax = plt.subplots()
        ax.imshow(image)
        for (x0, y0, x1, y1), label, score in zip(detections.xyxy, detections.labels, detections.scores):
            ax.add_patch(patches.Rectangle((x0, y0), x1 - x0, y1 - y0, linewidth=1, edgecolor="r", facecolor="none"))
            ax.text(x0, y0, f"{label} {score:.2f}", color="r")
        plt.savefig(out / f"{n}.png", bbox_inches="tight")
        plt.close(fig)
    return len(frames) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=ROOT / "models" / "build")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--person-model", type=Path, default=ROOT / "models" / "ssdlite_mobilenet_v2_person",
                        help="also bench this light real model (default: the one `make person-model` writes); "
                        "skipped when absent")
    parser.add_argument("--coco-model", type=Path, default=ROOT / "models" / "centernet_mobilenetv3_coco",
                        help="also bench this 80-class COCO model with its own defaults (default: the one `make "
                        "coco-model` writes); skipped when absent")
    parser.add_argument("--frame", type=Path, default=SHARED_FRAME, help="the real Waymo frame to build inputs from")
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--big-images", type=int, default=1000, help="segment size for the memory comparison")
    parser.add_argument("--blog-images", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--runtimes", nargs="+", choices=RUNTIMES, default=list(RUNTIMES),
                        help="the runtimes to bench, each model on each (default: both; the first is the reference)")
    parser.add_argument("--coco-only", action="store_true",
                        help="only the COCO model's rows (detector alone, pipeline without and with outputs)")
    parser.add_argument("--scaling", action="store_true",
                        help="only the output stages (1 vs 2 workers) and the steady part of a stub-model run")
    parser.add_argument("--tracking-only", action="store_true",
                        help="only the tracking row: its share of a default `detect segment` run, the tracker's memory")
    memory_runs = parser.add_mutually_exclusive_group()
    memory_runs.add_argument("--skip-rss", action="store_true", help="skip the fresh-process memory runs")
    memory_runs.add_argument("--only-rss", action="store_true", help="only the fresh-process memory runs")
    args = parser.parse_args(argv)
    if not args.frame.exists():
        print(f"bench: the real Waymo frame is needed at {args.frame} (../shared/fixtures)", file=sys.stderr)
        return 2

    keep_freed_memory()  # as the `detect` command does
    t0 = time.perf_counter()
    import_tensorflow()  # timed here: building the inputs below would import it anyway
    args.import_seconds = time.perf_counter() - t0
    runtimes = tuple(args.runtimes)
    if args.tracking_only:
        tracked = tracking(args)
        for line in tracking_lines(tracked):
            print(line)
        (args.out / "bench_tracking.json").write_text(json.dumps(tracked.to_json(), indent=2))
        return 0
    if args.coco_only:
        segments = make_segments(args.frame, args.out, [args.images])
        coco_rates = rates(args, segments, args.coco_model, blog=False, runtimes=runtimes)
        for line in model_lines(coco_rates):
            print(line)
        coco_tiles = tile_rates(args.coco_model, make_segments(args.frame, args.out, [TILE_IMAGES])[TILE_IMAGES],
                                args.out / "tiles", repeats=args.repeats, batch_size=args.batch_size)
        for line in tile_lines(coco_tiles):
            print(line)
        sizes = size_cost(args.coco_model)
        for line in size_lines(sizes):
            print(line)
        coco_json = coco_rates.to_json() | {"tiles": coco_tiles.to_json(), "input_size": sizes_json(sizes)}
        (args.out / "bench_coco.json").write_text(json.dumps(coco_json, indent=2))
        return 0
    stages = scaling(args.frame, SCALING_REPEATS)
    for line in scaling_lines(stages):
        print(line, flush=True)
    short, long = steady_segments(args)
    steady = steady_runs(args, short, long)
    main_ms = main_process_ms(short, long, stub_model(args), args.out / "main_cost")
    predicted = prediction_lines(predict(stages, main_ms), main_ms)
    for line in [*steady_lines(steady, STEADY_IMAGES), *predicted]:
        print(line, flush=True)
    if args.scaling:
        return 0
    model = ensure_model(args.models)
    segments = make_segments(args.frame, args.out, [args.images] + ([] if args.skip_rss else [args.big_images]))
    models: dict[str, ModelRates] = {} if args.only_rss else {"bench_model": rates(args, segments, model, runtimes=runtimes)}
    # bench.json, in the order it has always had: each record's JSON, by the name the report reads it under.
    results: dict[str, object] = {name: r.to_json() for name, r in models.items()}
    results["scaling"] = [dataclasses.asdict(r) for r in stages]
    results["steady"] = [dataclasses.asdict(r) for r in steady]
    results["main_process_ms"] = main_ms
    person = args.person_model
    if not args.only_rss and person is not None and person.exists():
        # A light model: here the outputs, not the model, bound the rate on a CPU.
        models["person_model"] = rates(args, segments, person, blog=False, runtimes=runtimes)
        results["person_model"] = models["person_model"].to_json()
    coco = args.coco_model
    tiles: list[str] = []
    if not args.only_rss and coco is not None and coco.exists():
        # The offline default: full frames letterboxed inside the model, class-aware NMS after it.
        models["coco_model"] = rates(args, segments, coco, blog=False, runtimes=runtimes)
        results["coco_model"] = models["coco_model"].to_json()
        coco_tiles = tile_rates(coco, make_segments(args.frame, args.out, [TILE_IMAGES])[TILE_IMAGES],
                                args.out / "tiles", repeats=args.repeats, batch_size=args.batch_size)
        sizes = size_cost(coco)
        results["tiles"], results["input_size"] = coco_tiles.to_json(), sizes_json(sizes)
        tiles = [*tile_lines(coco_tiles), *size_lines(sizes)]
    if not args.only_rss:
        tracked = tracking(args)
        results["tracking"] = tracked.to_json()
        tiles += tracking_lines(tracked)
    rss = None if args.skip_rss else memory(args, segments, model)
    if rss is not None:
        results |= rss.to_json()
    for line in [*report_lines(models, rss), *tiles, *scaling_lines(stages), *steady_lines(steady, STEADY_IMAGES),
                 *predicted]:
        print(line)
    (args.out / "bench.json").write_text(json.dumps(results, indent=2))
    return 0


def tracking(args: argparse.Namespace) -> TrackingCost:
    """The tracking row, with the default model (the benchmark model when it is absent)."""
    model = args.coco_model if args.coco_model is not None and args.coco_model.exists() else ensure_model(args.models)
    segment = make_segments(args.frame, args.out, [args.images])[args.images]
    return tracking_cost(model, segment, args.out / "tracking", args.images, args.big_images, args.repeats)


def sizes_json(sizes: SizeCost) -> dict[str, object]:
    """bench.json's "input_size": the record and its ratio."""
    return dataclasses.asdict(sizes) | {"ratio": sizes.ratio}


def rates(args: argparse.Namespace, segments: dict[int, Path], model: Path, blog: bool = True,
          runtimes: tuple[str, ...] = RUNTIMES) -> ModelRates:
    """Per runtime: detector alone, the pipeline without and with outputs (all interleaved); the blog loop."""

    imports = args.import_seconds
    chosen = choose_settings(model)  # the model's own input size and NMS, as `detect segment` uses them
    input_size = parse_input_size(chosen.input_size)
    detectors, loads = {}, {}
    for runtime in runtimes:
        t0 = time.perf_counter()
        detectors[runtime] = Detector(model, batch_size=args.batch_size or DEFAULT_BATCH_SIZE, nms_iou=chosen.nms_iou,
                                      runtime=runtime)
        loads[runtime] = time.perf_counter() - t0
        print(f"model: {detectors[runtime].info.description}; {runtime}; batch {detectors[runtime].batch_size}; input "
              f"{chosen.input_size}; imports {imports:.1f} s, load + warm-up {loads[runtime]:.1f} s", flush=True)
    facts = {runtime: model_facts(d, loads[runtime]) for runtime, d in detectors.items()}

    decoded, decode_cpu = decoded_inputs(segments[args.images], input_size)
    for detector in detectors.values():  # one untimed pass so tracing and caches do not land in the first repeat
        detector_alone(detector, decoded[: 4 * detector.batch_size])
    runs: dict[str, dict[str, list]] = {r: {"alone": [], "off": [], "png": [], "default": []} for r in runtimes}
    segment, size = segments[args.images], {"input_size": input_size}
    for repeat in range(args.repeats):
        for runtime, detector in detectors.items():  # interleaved: the machine's drift hits both runtimes alike
            run, out = runs[runtime], args.out / runtime
            run["alone"].append(detector_alone(detector, decoded))
            run["off"].append(pipeline(detector, facts[runtime], segment, out / "off", write_frames=False, gif=False, **size))
            run["png"].append(pipeline(detector, facts[runtime], segment, out / "png", gif=False, **size))
            run["default"].append(pipeline(detector, facts[runtime], segment, out / "default", **size))
            print(f"  repeat {repeat + 1}/{args.repeats}, {runtime}: detector {run['alone'][-1][0]:.2f}, "
                  f"no outputs {run['off'][-1][0]:.2f}, PNG only {run['png'][-1][0]:.2f}, "
                  f"default {run['default'][-1][0]:.2f} images/s", flush=True)
    # The blog script ran its model in TensorFlow: every runtime's speed-up is against that loop.
    blog_rate = blog_loop(detectors[runtimes[0]], segments[args.images], args.out / "blog", args.blog_images) \
        if blog else None
    common = {"model": facts[runtimes[0]].description, "input_size": chosen.input_size, "nms_iou": chosen.nms_iou,
              "images": args.images, "cores": os.cpu_count() or 1, "imports": imports, "decode_cpu": decode_cpu,
              "blog_rate": blog_rate}
    by_runtime = {runtime: summary(runs[runtime], detectors[runtime], loads[runtime], runtime, **common)
                  for runtime in runtimes}
    return ModelRates(by_runtime, compare_runtimes(runs, runtimes) if len(runtimes) > 1 else None)


def summary(runs: dict[str, list], detector: Detector, load: float, runtime: str, *, model: str, input_size: str,
            nms_iou: float | None, images: int, cores: int, imports: float, decode_cpu: float,
            blog_rate: float | None) -> RuntimeRates:
    """One runtime's rates, efficiencies (paired per repeat) and CPU by stage."""
    alone = statistics.median(r[0] for r in runs["alone"])
    off = statistics.median(r[0] for r in runs["off"])
    default = statistics.median(r[0] for r in runs["default"])
    # Efficiency per repeat (each pipeline run against the detector run of its repeat), then the
    # median: on a shared machine whose speed drifts by tens of percent over minutes, pairing
    # runs made seconds apart cancels the drift that a ratio of separate medians would keep.
    paired = {mode: statistics.median(p[0] / a[0] for p, a in zip(runs[mode], runs["alone"], strict=True))
              for mode in ("off", "png", "default")}
    cpu = {mode: statistics.median(r[1] for r in runs[mode]) for mode in runs}
    stages = runs["default"][-1][2]
    per_stage = {
        "decode (full frame + resize, tf.data)": 1000 * decode_cpu,
        "detect (model alone)": 1000 * cpu["alone"],
        "draw": 1000 * stages.get("draw", 0) / images,
        "PNG (fpng encode + atomic write)": 1000 * stages.get("frame_write", 0) / images,
        "GIF (downscale, quantize, encode)": 1000 * stages.get("animation_prepare", 0) / images,
        "GIF + mosaic append (consumer thread, wall)": 1000 * stages.get("animation_append", 0) / images,
    }
    return RuntimeRates(
        model=model, runtime=runtime, input_size=input_size, nms_iou=nms_iou,
        batch_size=detector.batch_size, images=images, cores=cores,
        startup_s=Startup(imports=round(imports, 2), model_load_and_warmup=round(load, 2)),
        images_per_s=ImagesPerSecond(detector_alone=alone, pipeline_no_outputs=off,
                                     pipeline_png_only=statistics.median(r[0] for r in runs["png"]),
                                     pipeline_default=default, blog_loop=blog_rate),
        efficiency_no_outputs=paired["off"], efficiency_default=paired["default"],
        efficiency_png_only=paired["png"],
        efficiency_of_medians={"no_outputs": off / alone, "default": default / alone},
        efficiency_bound=efficiency_bounds(alone, cpu, cores),
        speedup_vs_blog=default / blog_rate if blog_rate else None,
        cpu_ms_per_image=per_stage,
        pipeline_cpu_ms_per_image={"no_outputs": 1000 * cpu["off"], "png_only": 1000 * cpu["png"],
                                   "default": 1000 * cpu["default"]},
        raw_runs={k: [list(r[:2]) for r in v] for k, v in runs.items()},
    )


def efficiency_bounds(alone_rate: float, cpu_s_per_image: dict[str, float], cores: int) -> dict[str, float]:
    """The best efficiency each pipeline could reach here if scheduling were perfect.

    The model alone keeps `model_cores` busy; a pipeline that needs `c` CPU-seconds an image can
    go no faster than `cores / c` images/s, so its efficiency is at most
    (cores / model_cores) x model CPU / pipeline CPU (and at most 1).
    """
    model_cores = alone_rate * cpu_s_per_image["alone"]
    return {mode: min(1.0, cores / model_cores * cpu_s_per_image["alone"] / c)
            for mode, c in cpu_s_per_image.items() if mode != "alone"} | {"model_cores": model_cores}


def report_lines(models: dict[str, ModelRates], rss: MemoryRuns | None) -> list[str]:
    lines = []
    for name in ("bench_model", "person_model", "coco_model"):
        if name in models:
            lines += model_lines(models[name])
    if rss is not None:
        lines.append(f"peak RSS, default outputs: {rss.images} images {rss.small_mb:.0f} MB, {rss.big_images} images "
                     f"{rss.big_mb:.0f} MB, ratio {rss.ratio:.2f} " + verdict(rss.ratio, TARGETS["rss_ratio"], above=False))
        rr = rss.reader
        lines.append(f"v2 reader alone on {rr.file} ({rr.file_mb:.0f} MB, {rr.row_groups} row group): "
                     f"peak RSS {rr.peak_rss_mb:.0f} MB " + verdict(rr.peak_rss_mb, 600, above=False))
    return lines


def model_lines(rates: ModelRates) -> list[str]:
    """One model's block: each runtime's rates, then the runtimes against each other."""
    lines = []
    for runtime in RUNTIMES:
        if runtime in rates.by_runtime:
            lines += rate_lines(rates.by_runtime[runtime])
    return lines + runtime_lines(rates)


def rate_lines(r: RuntimeRates) -> list[str]:
    ips = r.images_per_s
    b = r.efficiency_bound
    lines = [
        "",
        f"detect benchmark: {r.images} images, {r.model}, {r.runtime}, batch {r.batch_size}, input {r.input_size}",
        f"start-up (not in the rates): imports {r.startup_s.imports} s, model load + warm-up "
        f"{r.startup_s.model_load_and_warmup} s",
        f"  detector alone          {ips.detector_alone:7.2f} images/s",
        f"  pipeline, no outputs    {ips.pipeline_no_outputs:7.2f} images/s   efficiency {r.efficiency_no_outputs:.2f} "
        + verdict(r.efficiency_no_outputs, TARGETS["efficiency_no_outputs"]),
        f"  pipeline, PNG only      {ips.pipeline_png_only:7.2f} images/s   efficiency {r.efficiency_png_only:.2f}",
        f"  pipeline, PNG+GIF+mosaic{ips.pipeline_default:7.2f} images/s   efficiency {r.efficiency_default:.2f}, "
        f"{r.efficiency_default / b['default']:.2f} of the bound "
        + verdict(r.efficiency_default / b["default"], TARGETS["default_share_of_bound"]),
        *([f"  blog loop (20 images)   {ips.blog_loop:7.2f} images/s   speed-up {r.speedup_vs_blog:.1f}x "
           + verdict(r.speedup_vs_blog, TARGETS["speedup_vs_blog"])] if ips.blog_loop and r.speedup_vs_blog is not None else []),
        "  efficiency: median over repeats of (pipeline run / the same repeat's detector run); per repeat,"
        "\n  detector / no outputs / PNG only / default images/s: "
        + "; ".join(" / ".join(f"{run[0]:.2f}" for run in repeat) for repeat in
                    zip(*(r.raw_runs[k] for k in ("alone", "off", "png", "default")), strict=True)),
        f"  best possible here (the model alone keeps {b['model_cores']:.2f} of {r.cores} cores busy; "
        "efficiency <= cores / model cores x model CPU / pipeline CPU):"
        f"\n  no outputs {b['off']:.2f}, PNG only {b['png']:.2f}, default {b['default']:.2f}",
        "CPU ms per image by stage:",
    ]
    lines += [f"  {name:<42} {ms:7.1f}" for name, ms in r.cpu_ms_per_image.items()]
    pc = r.pipeline_cpu_ms_per_image
    lines.append(f"  {'whole process, no outputs / PNG only / default':<42} {pc['no_outputs']:7.1f} / "
                 f"{pc['png_only']:.1f} / {pc['default']:.1f}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
