"""Shared fixtures: the real Waymo frame (from ../shared), the tiny committed v2 segment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The suite's numbers and files are TensorFlow's; tests/test_runtimes.py names OpenVINO where it
# means it (and checks it finds the same boxes), so the rest does not convert every model it builds.
os.environ.setdefault("DETECT_RUNTIME", "tensorflow")

pytest_plugins = ["conftest_models"]

ROOT = Path(__file__).resolve().parents[1]
SHARED_FRAME = ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"
REAL_SEGMENT = "1024360143612057520_3580_000_3600_000"
TINY_V2_DIR = Path(__file__).parent / "fixtures" / "tiny_v2"
TINY_SEGMENT = "tiny_synthetic_0000000000000000_000_000_000_000"
TINY_V2 = TINY_V2_DIR / "camera_image" / f"{TINY_SEGMENT}.parquet"


def lower_priority() -> None:
    """`preexec_fn` for a run a test must catch mid-way (to signal or kill it): on a busy 2-core
    machine the run (a model thread, render processes) could otherwise keep the test process off
    the CPU until it has finished."""
    os.nice(10)


@pytest.fixture(scope="session")
def real_frame_path() -> Path:
    """The real one-frame v1 segment; its license keeps it out of this repo."""
    if not SHARED_FRAME.exists():
        pytest.skip(f"real Waymo fixture not found at {SHARED_FRAME} (it lives in ../shared, outside the repo)")
    return SHARED_FRAME


@pytest.fixture(scope="session")
def real_camera_frames(real_frame_path: Path):
    from detect.waymo.readers import iter_frames

    return list(iter_frames(str(real_frame_path)))


@pytest.fixture(scope="session")
def real_v2_path(real_camera_frames, tmp_path_factory) -> Path:
    """The real frame rewritten as a v2 camera_image Parquet by our own writer, rows shuffled."""
    from detect.tools.synthetic import write_camera_image_parquet

    path = tmp_path_factory.mktemp("real_v2") / "training" / "camera_image" / f"{REAL_SEGMENT}.parquet"
    return write_camera_image_parquet(path, real_camera_frames, shuffle_seed=3)


@pytest.fixture(scope="session")
def tiny_v2_path() -> Path:
    return TINY_V2
