"""tidecv 1.0.1 (TIDE's reference code) in a side venv, built once into the test cache: it needs
numpy < 2, OpenCV and seaborn, which the project's venv does not hold. Only tests use it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.models import cached_conversion
from helpers.paths import IN_CI

# tidecv without its declared opencv-python (the headless build serves it); the rest pinned.
PACKAGES = ("numpy==1.26.4", "opencv-python-headless==4.10.0.84", "seaborn==0.13.2", "matplotlib==3.9.4",
            "pandas==2.2.3", "pycocotools==2.0.8", "appdirs==1.4.4")
TIDECV = "tidecv==1.0.1"
SCRIPT = Path(__file__).with_name("tide_reference_run.py")  # not named tidecv*: it would shadow the package


def _build(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(out)], check=True)
    pip = [str(out / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *PACKAGES], check=True)
    subprocess.run([*pip, "--no-deps", TIDECV], check=True)
    return out


def tidecv_python() -> Path:
    """The side venv's Python (built the first time: about a minute and 400 MB; kept under a key of
    its pins and Python's version); a test that needs it is skipped where it cannot be built (no
    package registry), and fails so in CI."""
    pins = " ".join((*PACKAGES, TIDECV, sys.version))
    key = hashlib.sha256(pins.encode()).hexdigest()[:16]
    try:
        return cached_conversion("tidecv-1.0.1", key, _build, marker="bin/python") / "bin" / "python"
    except subprocess.CalledProcessError as err:
        if IN_CI:
            pytest.fail(f"CI=true but tidecv's side venv could not be built: {err}", pytrace=False)
        pytest.skip(f"tidecv's side venv could not be built ({err})")


def tidecv_error_kinds(instances: Path, detections: Path, out: Path) -> dict[str, dict[str, float]]:
    """tidecv's dAP50 (0..1) per category id (as a string) and `mean`, on a COCO export."""
    done = subprocess.run([str(tidecv_python()), str(SCRIPT), str(instances), str(detections), str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())
