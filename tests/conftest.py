"""Shared fixtures: the real Waymo frame (from ../shared), the tiny committed v2 segment; the test
tiers (markers), the Hypothesis profiles and the timeouts of tests that start processes.

Tiers (`--strict-markers`: a mark not registered in pyproject.toml is an error):
- `slow`: a real detector (CenterNet, NanoDet, the person model) or a full pipeline over many
  frames. Tests that use a real-model fixture (`SLOW_FIXTURES`) are marked here without asking.
- `ray`: starts a local Ray cluster.
- `signals`: starts `detect` as a process and signals or kills it.
`make test-fast` runs `-m "not slow and not ray and not signals"`; `make test` runs everything.
Tests marked `ray` or `signals` get a timeout (pytest-timeout) unless they set their own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The suite's numbers and files are TensorFlow's; tests/test_runtimes.py names OpenVINO where it
# means it (and checks it finds the same boxes), so the rest does not convert every model it builds.
os.environ.setdefault("DETECT_RUNTIME", "tensorflow")

pytest_plugins = ["conftest_models"]

IN_CI = os.environ.get("CI", "").lower() == "true"

# Hypothesis: `ci` (CI=true) draws the full number of examples, `dev` a fifth of them, so a
# developer's run is quick and CI's is thorough; HYPOTHESIS_PROFILE=ci runs CI's locally.
# A test asks for a share of the profile's examples (`examples(share)`), smaller when an example
# costs more. No deadline: TensorFlow's first call takes seconds on a busy machine.
settings.register_profile("ci", max_examples=300, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))


def examples(share: float) -> int:
    """`share` of the loaded profile's examples (ci: 300, dev: 60), at least one."""
    return max(1, round(settings().max_examples * share))


# Fixtures that load a real detector: a test that uses one is `slow` (see the module docstring).
SLOW_FIXTURES = frozenset({
    "coco_model", "npm_files", "person_pb", "person_saved_model", "tf1_zoo_saved_model", "two_models",
    "nanodet_files", "nanodet_model", "nanodet_run", "ssd_files", "ssd_model", "ssd_run", "centernet_onnx", "ssd_onnx",
})
# Seconds a test that starts processes may take before pytest-timeout ends it with a traceback.
TIMEOUTS = {"signals": 300, "ray": 600}
# The files that take longest (Ray, the real models: tens of seconds each) go to the workers first.
# pytest-xdist (`--dist loadfile --no-loadscope-reorder`, Makefile) hands out files in this order;
# a long file handed out last keeps one worker busy while the other has nothing left to do.
LONG_FILES = ("test_ray_engine.py", "test_signals.py", "test_runtimes.py", "test_real_model.py", "test_coco_model.py",
              "test_eval.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: LONG_FILES.index(item.path.name) if item.path.name in LONG_FILES else len(LONG_FILES))
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("timeout") is None:
            limits = [seconds for mark, seconds in TIMEOUTS.items() if item.get_closest_marker(mark)]
            if limits:
                item.add_marker(pytest.mark.timeout(max(limits)))

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (as CI has it); DETECT_SHARED names another (a worktree's ../ has none).
SHARED = Path(os.environ.get("DETECT_SHARED") or ROOT.parent / "shared")
SHARED_FRAME = SHARED / "fixtures" / "waymo_v1_one_frame.tfrecord"
SHARED_V2_FOLDER = SHARED / "fixtures" / "waymo_v2_one_frame" / "training"  # the same frame, all its components
REAL_SEGMENT = "1024360143612057520_3580_000_3600_000"
TINY_V2_DIR = Path(__file__).parent / "fixtures" / "tiny_v2"
TINY_SEGMENT = "tiny_synthetic_0000000000000000_000_000_000_000"
TINY_V2 = TINY_V2_DIR / "camera_image" / f"{TINY_SEGMENT}.parquet"


def lower_priority() -> None:
    """`preexec_fn` for a run a test must catch mid-way (to signal or kill it): on a busy 2-core
    machine the run (a model thread, render processes) could otherwise keep the test process off
    the CPU until it has finished."""
    os.nice(10)


# Models loaded by `load_each_model_once`, by what was asked for and the files it was loaded from.
_LOADED: dict[tuple[object, ...], object] = {}


@pytest.fixture
def load_each_model_once(monkeypatch):
    """`detect segment` and `detect run` in the test reuse a model this session has already loaded
    with the same `ModelSpec` from unchanged files, as one `detect run` reuses it for every segment
    (`LocalEngine`): the command's path is unchanged, but TensorFlow's load, the warm-up and the
    checksum (~0.1 s of a stub-model run) are not repeated. For tests about what a run writes or
    refuses, not about loading (a model edited in place is loaded again: its files are in the key)."""
    import detect.engine.loading
    import detect.engine.runner
    from detect.engine.loading import model_path

    def once(spec, *args, **kwargs):
        path = model_path(spec).resolve()
        files = sorted((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in path.rglob("*") if f.is_file()) \
            if path.is_dir() else [(str(path), path.stat().st_size, path.stat().st_mtime_ns)] if path.exists() else []
        key = (spec, os.environ.get("DETECT_RUNTIME"), str(path), tuple(files))  # the runtime "auto" resolves to
        if key not in _LOADED:
            _LOADED[key] = detect.engine.loading.load_model(spec, *args, **kwargs)
        return _LOADED[key]

    monkeypatch.setattr(detect.engine.runner, "load_model", once)


@pytest.fixture(scope="session")
def real_frame_path() -> Path:
    """The real one-frame v1 segment; its license keeps it out of this repo."""
    if not SHARED_FRAME.exists():
        if IN_CI:  # CI has ../shared beside its clone: a missing frame there is a broken setup, not a skip
            pytest.fail(f"CI=true but the real Waymo fixture is missing: {SHARED_FRAME} (../shared beside the clone)",
                        pytrace=False)
        pytest.skip(f"real Waymo fixture not found at {SHARED_FRAME} (it lives in ../shared, outside the repo)")
    return SHARED_FRAME


@pytest.fixture(scope="session")
def real_v2_folder(real_frame_path: Path) -> Path:
    """The real frame as a v2 folder written by Waymo's own extractors (camera_image, camera_box,
    stats, camera_calibration, lidar_box, projected_lidar_box, ...): read it, never write in it."""
    camera_image = SHARED_V2_FOLDER / "camera_image" / f"{REAL_SEGMENT}.parquet"
    if not camera_image.exists():
        if IN_CI:
            pytest.fail(f"CI=true but the real v2 fixture is missing: {camera_image}", pytrace=False)
        pytest.skip(f"real v2 fixture not found at {SHARED_V2_FOLDER}")
    return SHARED_V2_FOLDER


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
