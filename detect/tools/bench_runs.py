"""The benchmark's building blocks, shared by `bench` and `bench_tiles`: synthetic segments made
of the real frame, the CPU clock that counts render processes, one timed pipeline run."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from detect.engine.local import process_segment
from detect.engine.render_pool import worker_cpu_seconds
from detect.engine.spec import SegmentSettings
from detect.model.inputs import decode_stream
from detect.tools.synthetic import repeat_frames, write_camera_image_parquet
from detect.waymo.readers import iter_frames
from detect.waymo.sources import resolve_one

ROOT = Path(__file__).resolve().parents[2]
SHARED_FRAME = ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"


def cpu_seconds() -> float:
    """This process and its live render processes."""
    t = os.times()
    return t.user + t.system + worker_cpu_seconds()


def make_segments(frame_path: Path, out: Path, sizes: list[int]) -> dict[int, Path]:
    templates = list(iter_frames(str(frame_path)))
    paths = {}
    for images in sizes:
        path = out / "inputs" / f"synthetic_{images}.parquet"
        if not path.exists():
            frames = repeat_frames(templates, images // len(templates), segment_context_name=f"synthetic_{images}")
            write_camera_image_parquet(path, frames)
        paths[images] = path
    return paths


def pipeline(detector, facts, segment: Path, out: Path, **overrides) -> tuple[float, float, dict]:

    settings = SegmentSettings(mode="overwrite", **overrides)
    cpu, wall = cpu_seconds(), time.perf_counter()
    report = process_segment(resolve_one(str(segment)), out, detector, settings, model_facts=facts)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    manifest = json.loads((report.segment_dir / "manifest.json").read_text())
    if report.failures:
        raise RuntimeError(f"benchmark run had failures: {report.failures[:3]}")
    return report.images_processed / wall, cpu / report.images_processed, manifest["timings"]["stage_totals_s"]


def decoded_inputs(segment: Path, input_size) -> tuple[list[Any], float]:
    """Every image decoded and resized exactly as the pipeline feeds the model, and the CPU cost."""
    items = ((i, f.jpeg) for i, f in enumerate(iter_frames(str(segment))))
    start = cpu_seconds()
    # Each full frame is dropped as soon as it is decoded, as in the pipeline: holding all of them
    # would also time the kernel handing out 1.4 GB of fresh pages.
    decoded = [dataclasses.replace(d, full=None) for d in decode_stream(items, input_size=input_size, keep_full=True)]
    per_image = (cpu_seconds() - start) / len(decoded)
    return decoded, per_image


def detector_alone(detector, decoded) -> tuple[float, float]:
    """images/s and CPU s per image of the model and nothing else, on pre-decoded inputs."""
    by_shape: dict[tuple[int, ...], list[Any]] = {}  # full frames of two camera sizes: batched per size, as the pipeline does
    for d in decoded:
        by_shape.setdefault(d.model_input.shape, []).append(d)
    batches = [group[i:i + detector.batch_size] for group in by_shape.values()
               for i in range(0, len(group), detector.batch_size)]
    stacked = [(np.stack([d.model_input for d in b]), [(d.width, d.height) for d in b]) for b in batches]
    cpu, wall = cpu_seconds(), time.perf_counter()
    for images, sizes in stacked:
        detector(images, sizes)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    return len(decoded) / wall, cpu / len(decoded)
