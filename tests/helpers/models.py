"""Models the tests build: the scripts of `models/` imported as modules, and real models converted once
and kept between sessions (TF.js graphs from npm, tf2onnx exports)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from detect.core.cache_dirs import user_cache_dir
from detect.model.tfjs import Head

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = ROOT / "models"
# What the tests build once and keep between sessions and clones (converted real models, the stub
# models, tidecv's side venv), each under a key of everything its build reads, in the user's cache
# beside the npm tarballs (`detect.core.cache_dirs`); DETECT_TEST_CACHE names another folder.
COCO_MODEL_DIR = MODELS_DIR / "centernet_mobilenetv3_coco"  # `make coco-model`
SSD_MODEL_DIR = MODELS_DIR / "ssdlite_mobilenet_v2_coco"  # `make ssd-model`
TEST_CACHE = Path(os.environ.get("DETECT_TEST_CACHE") or user_cache_dir() / "test-cache")
# The code a conversion runs: the scripts in models/, the library's model code, its errors and TF set-up.
CONVERTER_SOURCES = ("models/*.py", "detect/model/**/*.py", "detect/core/*.py")


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


def conversion_key(*inputs: str | bytes) -> str:
    """16 hex digits of the converter's code, TensorFlow's version and `inputs` (what is converted).
    TensorFlow's version is its package's (importing it to ask would cost a process seconds)."""
    digest = hashlib.sha256(importlib.metadata.version("tensorflow").encode())
    for pattern in CONVERTER_SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    for item in inputs:
        digest.update(b"\0" + (item if isinstance(item, bytes) else item.encode()))
    return digest.hexdigest()[:16]


def cached_conversion(name: str, key: str, build: Callable[[Path], Path], marker: str = "saved_model.pb") -> Path:
    """`TEST_CACHE/<name>-<key>`, made by `build(out)` the first time (in a temporary folder beside it,
    then renamed, so an interrupted session leaves no half model); reused by later sessions. `marker`:
    the file a finished one holds."""
    done = TEST_CACHE / f"{name}-{key}"
    if (done / marker).is_file():
        return done
    TEST_CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=TEST_CACHE))
    try:
        built = build(work / name)
        try:
            built.rename(done)
        except OSError:  # another session converted it meanwhile
            if not (done / marker).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done


def tfjs_saved_model(head: Head, repo_model: Path) -> Path:
    """The repository's converted TF.js model when `make` built it, else one converted from the
    cached npm tarball (fetched once if missing), kept in TEST_CACHE for the next session."""
    if (repo_model / "saved_model.pb").is_file():
        return repo_model
    convert = load_models_script("convert_tfjs")
    npm = load_models_script("npm_package")
    key = conversion_key(head.package, str(npm.PINNED_INTEGRITY.get(head.package)), head.name)
    return cached_conversion(head.name, key, lambda out: convert.from_package(head.package, head, out))


ONNX_OPSET = 17


def onnx_export(saved_model: Path, name: str) -> Path:
    """`model.onnx`: tf2onnx's export (opset 17) of `saved_model`, with a sidecar holding only the
    SavedModel's defaults (so both run at the same settings), kept in TEST_CACHE under a key of the
    SavedModel's files and tf2onnx's version."""
    import subprocess

    import tf2onnx

    from detect.model.formats import checksum
    from detect.model.sidecar import ModelSidecar, read_sidecar

    def export(out: Path) -> Path:
        out.mkdir(parents=True)
        done = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(saved_model), "--output",
                               str(out / "model.onnx"), "--opset", str(ONNX_OPSET)], capture_output=True, text=True,
                              timeout=900, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"tf2onnx failed: {done.stderr[-2000:]}")
        sidecar = read_sidecar(saved_model)
        ModelSidecar("real", description=f"tf2onnx export of {name}", defaults=sidecar.defaults if sidecar else None,
                     ).write(out)
        return out

    key = conversion_key(name, checksum(saved_model), tf2onnx.__version__, str(ONNX_OPSET))
    return cached_conversion(f"{name}-onnx", key, export, marker="model.onnx") / "model.onnx"
