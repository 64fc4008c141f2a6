"""Write a converted model the one way every converter here does: a SavedModel and its sidecar in a
temporary directory beside `out`, loaded back and checked against the detector contract with a
batch of 2, then renamed into place, so `out` is either absent or complete."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any  # the tf.Module written: TensorFlow ships no types

from detect.core.tf_env import import_tensorflow
from detect.model.detector import Detector
from detect.model.sidecar import ModelSidecar


def write_saved_model(module: Any, out: Path, sidecar: ModelSidecar, *, replace: bool = False) -> Path:
    """`module.serve` as the `serving_default` signature, `sidecar` as `detect_model.json`. With
    `replace`, a converted model already at `out` is swapped out only once the new one is complete."""
    tf = import_tensorflow()
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tf.saved_model.save(module, str(temp), signatures={"serving_default": module.serve})
        sidecar.write(temp)
        Detector(temp, batch_size=2)  # the converted model meets the contract, batched
        temp.chmod(0o755)  # mkdtemp made it private
        if replace and (out / "saved_model.pb").is_file() and not out.is_symlink():
            old = out.with_name(f"{temp.name}.old")
            out.rename(old)
            temp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            temp.rename(out)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return out
