"""Every picture a run writes, pinned byte for byte: speed work on the drawing, the chips, the
trails, the mosaic and the encoders must leave the bytes as they are.

A fake detector answers each image with its own labels, moved, rescored, some missed and one
false alarm (real crowds, real motion: chips that must make room, tracks with trails, every
verdict), on the real Waymo frame (five cameras) and on a moving MOT17 sequence. The runs with
`--no-png` and with `--no-gif` must write the same animations, and the same frames, as the
default run. Regenerate the listing after an intended change of the pictures with
`DETECT_REGENERATE_GOLDEN=1 pytest tests/test_output_pins.py`, and look at the pictures.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from detect.core.records import Detections
from detect.engine.local import process_segment
from detect.engine.spec import SegmentSettings
from detect.model.facts import ModelFacts
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import read_keys
from detect.waymo.sources import resolve_one

GOLDEN = Path(__file__).parent / "golden" / "output_pictures.sha256"
REGENERATE = os.environ.get("DETECT_REGENERATE_GOLDEN") == "1"
PICTURES = (".png", ".gif", ".jpg", ".jpeg")
MOT17 = "mot17mini_v2/camera_image/mot17_11_frcnn.parquet"
# Waymo type -> the COCO class the default class map sends to it, and its name.
COCO_OF_TYPE = {1: (3, "car"), 2: (1, "person"), 3: (13, "stop sign"), 4: (2, "bicycle")}


class LabelDetector:
    """Each image's labels as detections, in the order the engine plans the images: shifted a few
    pixels, scored from 0.2 to 0.95, every seventh missed, plus one false alarm an image."""

    batch_size = 4

    def __init__(self, source: str) -> None:
        keys = read_keys(source)
        labels = read_labels(keys)
        assert labels is not None
        self.images = [labels.by_key[k] for k in sorted(labels.by_key, key=lambda k: k.order)]
        self.served = 0

    def __call__(self, images: np.ndarray, sizes=None) -> list[Detections]:
        out = []
        for width, height in sizes:
            labels = self.images[self.served]
            n = self.served
            self.served += 1
            keep = [i for i in range(len(labels.types)) if (i + n) % 7 != 3]
            xyxy = [labels.xyxy[i] + np.float32((i % 5) - 2) for i in keep]
            xyxy.append(np.array([width * 0.4, height * 0.1, width * 0.4 + 90, height * 0.1 + 60], np.float32))
            coco = [COCO_OF_TYPE[int(labels.types[i])] for i in keep] + [(3, "car")]
            scores = [0.2 + 0.75 * (((i * 37 + n * 11) % 100) / 100) for i in range(len(xyxy))]
            order = np.argsort(scores, kind="stable")[::-1]
            out.append(Detections(np.array(xyxy, np.float32).reshape(-1, 4)[order],
                                  np.array(scores, np.float32)[order],
                                  np.array([coco[i][0] for i in order], np.int32),
                                  tuple(coco[i][1] for i in order)))
        return out


def run(source: Path, out: Path, **settings) -> Path:
    settings = {"workers": 1, "render": "threads", **settings}
    report = process_segment(resolve_one(str(source)), out, LabelDetector(str(source)), SegmentSettings(**settings),
                             model_facts=ModelFacts.from_json({"path": "fake"}))
    assert not report.failures
    return report.segment_dir


def pictures(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.suffix in PICTURES}


@pytest.fixture(scope="module")
def shared_fixtures(real_frame_path: Path) -> Path:
    return real_frame_path.parent


SOURCES = {"waymo": "waymo_v1_one_frame.tfrecord", "mot17": MOT17}
VARIANTS = {"default": {}, "no_png": {"write_frames": False}, "no_gif": {"gif": False}}


@pytest.fixture(scope="module")
def runs(shared_fixtures: Path, tmp_path_factory) -> dict[str, dict[str, str]]:
    """Every picture's digest, by `<variant>/<source>/<path>`."""
    out = tmp_path_factory.mktemp("pins")
    return {f"{variant}/{name}/{path}": digest
            for variant, settings in VARIANTS.items() for name, source in SOURCES.items()
            for path, digest in pictures(run(shared_fixtures / source, out / variant / name, **settings)).items()}


@pytest.mark.slow
def test_every_picture_of_a_run_keeps_its_bytes(runs: dict[str, str]) -> None:
    lines = [f"{digest}  {path}" for path, digest in sorted(runs.items())]
    assert any(line.endswith(".gif") for line in lines) and any(line.endswith(".png") for line in lines)
    if REGENERATE:
        GOLDEN.write_text("\n".join(lines) + "\n")
    assert GOLDEN.exists(), f"{GOLDEN} missing: run with DETECT_REGENERATE_GOLDEN=1 to create it"
    expected = GOLDEN.read_text().splitlines()
    changed = sorted(set(expected) ^ set(lines))
    assert not changed, (f"{len(changed)} lines of {GOLDEN.name} differ, e.g. {changed[:4]}; if the pictures were "
                         "meant to change, regenerate with DETECT_REGENERATE_GOLDEN=1 and look at them")


@pytest.mark.slow
def test_a_run_without_frames_or_without_gifs_writes_the_same_frames_and_camera_gifs(runs: dict[str, str]) -> None:
    """Only the mosaic differs without frames: it is composed from the tiles in memory, where a run
    with frames composes it from the tiles as kept (JPEG), as `detect gif` rebuilds it."""
    default = {path.removeprefix("default/"): d for path, d in runs.items() if path.startswith("default/")}
    for variant in ("no_png", "no_gif"):
        written = {path.removeprefix(f"{variant}/"): d for path, d in runs.items() if path.startswith(f"{variant}/")}
        assert written, variant
        same = {path: d for path, d in written.items() if not path.endswith("mosaic.gif")}
        assert same.items() <= default.items(), variant
        assert any(path.endswith(".gif") for path in same) == (variant == "no_png")


@pytest.mark.slow
def test_render_processes_write_the_pinned_pictures(shared_fixtures: Path, runs: dict[str, str], tmp_path: Path) -> None:
    """The frames, animations and mosaic drawn in two render processes (frames through shared
    memory, animation frames and mosaic tiles sent back and forth) are the one thread's."""
    written = pictures(run(shared_fixtures / SOURCES["waymo"], tmp_path, render="processes", workers=2))
    assert {f"default/waymo/{path}": d for path, d in written.items()} == {
        path: d for path, d in runs.items() if path.startswith("default/waymo/")}
