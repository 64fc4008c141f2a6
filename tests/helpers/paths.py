"""Where the tests' inputs are: the real Waymo frame in ../shared (its license keeps it out of this
repo) and the tiny synthetic v2 segment committed under tests/fixtures; and whether this is CI."""

from __future__ import annotations

import os
from pathlib import Path

IN_CI = os.environ.get("CI", "").lower() == "true"
ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the clone (as CI has it); DETECT_SHARED names another (a worktree's ../ has none).
SHARED = Path(os.environ.get("DETECT_SHARED") or ROOT.parent / "shared")
SHARED_FRAME = SHARED / "fixtures" / "waymo_v1_one_frame.tfrecord"
SHARED_V2_FOLDER = SHARED / "fixtures" / "waymo_v2_one_frame" / "training"  # the same frame, all its components
REAL_SEGMENT = "1024360143612057520_3580_000_3600_000"
TINY_V2_DIR = ROOT / "tests" / "fixtures" / "tiny_v2"
TINY_SEGMENT = "tiny_synthetic_0000000000000000_000_000_000_000"
TINY_V2 = TINY_V2_DIR / "camera_image" / f"{TINY_SEGMENT}.parquet"
