"""Where a converted model is kept, so that only the first run with a model pays for converting it.

Beside the model: `<model dir>/.detect_cache/` (for a `.pb` or `model.json` file, in its folder,
under the file's name), or under `$DETECT_CACHE_DIR` / `~/.cache/detect` when the model's folder
cannot be written. Inside, one folder per runtime version and model checksum:

    .detect_cache/openvino-2026.4.1/<sha256 of the model, 16 hex>/
        frozen.pb, split.json          the flat graph and where it splits (any input size)
        network-4x512x512x3-float32.xml/.bin   the network for one input shape and dtype
        compiled/                      the runtime's own compiled blobs (its CACHE_DIR)

A changed model has another checksum, so it gets a new folder; the folders of its earlier
checksums, and those of other versions of the runtime, are removed then. Files are written under
a temporary name and renamed into place, so two processes (Ray actors) converting at once never
read half a file.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from pathlib import Path

from detect.model.formats import CACHE_NAME

CACHE_ENV = "DETECT_CACHE_DIR"


def cache_root(model_path: Path) -> Path:
    """The writable folder converted forms of `model_path` go under (see the module docstring)."""
    model_path = Path(model_path)
    beside = model_path / CACHE_NAME if model_path.is_dir() else model_path.parent / CACHE_NAME / model_path.name
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / _flat_name(model_path)
    if _writable(beside):
        return beside
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "detect"
    return base / _flat_name(model_path)


def cache_folder(model_path: Path, runtime: str, version: str, checksum: str) -> Path:
    """Where this model version's converted forms for `runtime` at `version` live (not created)."""
    return cache_root(model_path) / f"{runtime}-{version}" / checksum[:16]


def model_cache(model_path: Path, runtime: str, version: str, checksum: str) -> Path:
    """`cache_folder`, made on first use; the folders of the model's earlier checksums and of the
    runtime's other versions (an upgraded OpenVINO cannot read an older one's blobs anyway) are
    removed then."""
    folder = cache_folder(model_path, runtime, version, checksum)
    if not folder.is_dir():
        this_version = folder.parent  # .../openvino-2026.4.1
        stale = [p for p in this_version.parent.glob(f"{runtime}-*") if p != this_version]
        stale += [p for p in this_version.glob("*") if p != folder]
        for path in stale:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclasses.dataclass(frozen=True)
class CachedNetwork:
    """One converted network: the static input shape (batch, height, width, channels) and dtype."""

    shape: tuple[int, ...]
    dtype: str

    def file(self, folder: Path) -> Path:
        return folder / f"network-{'x'.join(str(d) for d in self.shape)}-{self.dtype}.xml"


_NETWORK_FILE = re.compile(r"network-(\d+(?:x\d+)*)-(\w+)\.xml")


def cached_networks(folder: Path) -> list[CachedNetwork]:
    """The networks converted into `folder` (an .xml with its .bin beside it), smallest batch first."""
    found = []
    for xml in folder.glob("network-*.xml"):  # nothing when the folder is not there
        match = _NETWORK_FILE.fullmatch(xml.name)
        if match and xml.with_suffix(".bin").is_file():
            found.append(CachedNetwork(tuple(int(d) for d in match[1].split("x")), match[2]))
    return sorted(found, key=lambda n: (n.shape, n.dtype))


def write_atomically(path: Path, data: bytes) -> None:
    """`path` holds `data` entirely or is left as it was."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _flat_name(model_path: Path) -> str:
    resolved = str(Path(model_path).resolve()).strip(os.sep)
    return resolved.replace(os.sep, "__") or "model"


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
