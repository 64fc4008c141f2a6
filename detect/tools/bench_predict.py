"""`make bench`: the steady part of a whole `detect segment` run, and what the measured stages
predict for a many-core machine with a GPU (see `bench_scaling` for the per-stage measurements)."""

from __future__ import annotations

import dataclasses
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from detect.model.inputs import decode_stream
from detect.tools.bench_scaling import DECODE, StageScaling
from detect.tools.bench_targets import verdict
from detect.waymo.readers import iter_frames

# ---- the steady part of a whole `detect segment` run ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class SteadyRun:
    label: str
    cores_busy: float  # CPU seconds / wall seconds between the short and the long run
    cpu_ms_per_image: float
    images_per_s: float


def steady_state(label: str, short: Path, long: Path, images: int, model: Path, out: Path, flags: list[str],
                 repeats: int) -> SteadyRun:
    """`detect segment` on `short` and on `long` (`images` more images) in fresh processes: the
    difference is the steady part, start-up (imports, model load, render processes) differenced out.
    CPU counts the render processes and ffmpeg too (children's time once they have exited)."""
    def once(segment: Path) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "detect.cli", "segment", str(segment), "--out", str(out), "--overwrite",
                        "--model", str(model), "--quiet", *flags], check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)

    runs = []
    for _ in range(repeats):
        (w0, c0), (w1, c1) = once(short), once(long)
        runs.append((w1 - w0, c1 - c0))
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    return SteadyRun(label, statistics.median(c / w for w, c in runs), 1000 * cpu / images, images / wall)


GPU_BOX_CORES = 16
# CPU ms an image of everything but the model (stub model, PNG frames, default outputs); at 26 a
# 16-core box draws ~615 images/s, above the 500 a GPU the ceiling should leave room for.
STUB_CPU_MS_TARGET = 26.0


def gpu_box_ceiling(cpu_ms_per_image: float, cores: int = GPU_BOX_CORES) -> float:
    """Images/s a box of `cores` cores can draw at most when the model costs the CPU nothing (a GPU):
    its cores over the measured CPU an image of everything else, as if every stage scaled."""
    return 1000 * cores / cpu_ms_per_image


def steady_lines(rows: list[SteadyRun], images: int) -> list[str]:
    lines = ["", f"steady part of `detect segment`, stub model, PNG frames ({images} images, start-up differenced out)",
             f"  {'run':<50} {'cores busy':>10} {'CPU ms/image':>13} {'images/s':>9}"]
    lines += [f"  {r.label:<50} {r.cores_busy:10.2f} {r.cpu_ms_per_image:13.1f} {r.images_per_s:9.1f}" for r in rows]
    for r in rows:
        if r.label.startswith(DEFAULT_OUTPUTS):
            lines.append(f"  a {GPU_BOX_CORES}-core box: {gpu_box_ceiling(r.cpu_ms_per_image):.0f} images/s at most "
                         f"({GPU_BOX_CORES} x 1000 / {r.cpu_ms_per_image:.1f} CPU ms an image of everything but the model, "
                         f"default outputs) {verdict(r.cpu_ms_per_image, STUB_CPU_MS_TARGET, above=False)} "
                         f"{verdict(r.cores_busy, 1.8)}")
    return lines


DEFAULT_OUTPUTS = "default outputs"


# ---- what a 16-core box with one GPU should do ------------------------------------------------------

# Frames are written with their mosaic tile (drawn for the mosaic, kept for `detect gif`).
MOSAIC_TILE = "mosaic tile (shrink, draw for the shown size, JPEG kept)"
# Outputs -> the stages each image goes through (names as in STAGES; decode and the main process always).
OUTPUT_SETS: dict[str, tuple[str, ...]] = {
    "table only (--no-png --no-gif)": (),
    "PNG frames (--no-gif)": ("drawing (20 boxes + chips)", "PNG frame (fpng)", MOSAIC_TILE),
    "default: PNG + 5 GIFs + mosaic": ("drawing (20 boxes + chips)", "PNG frame (fpng)",
                                       "GIF frame (downscale + quantize + LZW)", MOSAIC_TILE,
                                       "mosaic frame (compose + GIF), per image"),
    "JPEG frames + GIFs + mosaic": ("drawing (20 boxes + chips)", "JPEG frame (Pillow q90)",
                                    "GIF frame (downscale + quantize + LZW)", MOSAIC_TILE,
                                    "mosaic frame (compose + GIF), per image"),
}


@dataclasses.dataclass(frozen=True)
class Prediction:
    outputs: str
    core_ms: float  # core-milliseconds an image, each stage's CPU divided by its 2-worker efficiency
    cpu_bound: float  # images/s if every core is busy
    main_bound: float  # images/s the main process's own work allows (one core)
    render_cores: float  # cores the render processes need at the predicted rate

    @property
    def rate(self) -> float:
        return min(self.cpu_bound, self.main_bound)

    @property
    def bound(self) -> str:
        return "all cores busy" if self.cpu_bound <= self.main_bound else "the main process (one core)"


def predict(rows: list[StageScaling], main_ms: float, cores: int = 16) -> list[Prediction]:
    """Images/s on `cores` cores with a GPU fast enough not to matter: each stage costs its measured
    CPU divided by its measured 2-worker efficiency (ratio / 2); the main process (reading, feeding
    the GPU, copying frames to shared memory, the ordered consumer) costs `main_ms` on one core."""
    by_name = {r.stage: r for r in rows}

    def core_ms(name: str) -> float:
        r = by_name[name]
        return r.cpu_ms / min(1.0, r.ratio / 2)

    predictions = []
    for outputs, stages in OUTPUT_SETS.items():
        render = sum(core_ms(s) for s in stages)
        total = core_ms(DECODE) + render + main_ms
        cpu_bound, main_bound = 1000 * cores / total, 1000 / main_ms
        rate = min(cpu_bound, main_bound)
        predictions.append(Prediction(outputs, total, cpu_bound, main_bound, rate * render / 1000))
    return predictions


def main_process_ms(short: Path, long: Path, model: Path, out: Path) -> float:
    """CPU ms an image the main process spends besides decoding: the steady part of an in-process
    stub-model run (PNG frames, render processes; `long` minus `short`) less the decode's CPU
    measured the same way (`os.times()`: TensorFlow's threads count, render processes do not)."""
    from detect.engine.loading import load_model
    from detect.engine.local import process_segment
    from detect.engine.spec import ModelSpec, SegmentSettings
    from detect.waymo.sources import resolve_one

    loaded = load_model(ModelSpec(path=model))
    settings = SegmentSettings(mode="overwrite", gif=False, workers=2, render="processes")

    def cpu_seconds(segment: Path) -> tuple[float, int]:
        before = os.times()
        report = process_segment(resolve_one(str(segment)), out, loaded.detector, settings, model_facts=loaded.facts)
        after = os.times()
        return after.user + after.system - before.user - before.system, report.images_processed

    cpu_seconds(short)  # warm-up: render processes started, graphs traced
    (c0, n0), (c1, n1) = cpu_seconds(short), cpu_seconds(long)
    jpegs = [f.jpeg for f in iter_frames(str(short))]
    decode = statistics.median(_decode_cpu(jpegs) for _ in range(3))
    return max(0.0, 1000 * ((c1 - c0) / (n1 - n0) - decode))


def _decode_cpu(jpegs: list[bytes], images: int = 60) -> float:
    """CPU seconds an image for the decode + resize, as tf.data runs it (one thread)."""
    items = ((i, jpegs[i % len(jpegs)]) for i in range(images))
    before = os.times()
    count = sum(1 for _ in decode_stream(items, input_size=(320, 320), keep_full=True, parallel=1))
    after = os.times()
    return (after.user + after.system - before.user - before.system) / count


def prediction_lines(predictions: list[Prediction], main_ms: float, cores: int = 16) -> list[str]:
    lines = ["", f"predicted on {cores} cores with one GPU (stage CPU / its measured efficiency; main process "
                 f"{main_ms:.1f} CPU ms an image on one core)",
             f"  {'outputs':<34} {'core ms/image':>13} {'images/s':>9} {'render cores':>12}  bound"]
    lines += [f"  {p.outputs:<34} {p.core_ms:13.1f} {p.rate:9.0f} {p.render_cores:12.1f}  {p.bound}" for p in predictions]
    return lines
