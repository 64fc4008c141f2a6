"""Where a converted model is kept, so that only the first run with a model pays for converting it.

Beside the model: `<model dir>/.detect_cache/` (for a `.pb` or `model.json` file, in its folder,
under the file's name), or under `$DETECT_CACHE_DIR` / `~/.cache/detect` when the model's folder
cannot be written (or its `.detect_cache` is a link: a downloaded folder's link could point
anywhere), in a folder named for the model and a hash of its full path. Inside, one folder per
runtime version and model checksum:

    .detect_cache/openvino-2026.4.1/<sha256 of the model, 16 hex>/
        frozen.pb, split.json          the flat graph and where it splits (any input size)
        network-4x512x512x3-float32.xml/.bin   the network for one input shape and dtype
        compiled/                      the runtime's own compiled blobs (its CACHE_DIR)
        manifest.json                  the SHA-256 of every file above, as written

A changed model has another checksum, so it gets a new folder; the folders of its earlier
checksums, and those of other versions of the runtime, are removed then: only real folders whose
every entry is one the runtime makes (never through a link; `shutil.rmtree` does not follow the
links inside). A runtime works in its folder under `ModelCache.locked()`: an exclusive lock, and
on taking it every file whose checksum is not the manifest's (edited, truncated, left half-written
by a killed process, a link or a folder in a file's place) is discarded, so that what the runtime
reads is what some run wrote. Files are written under a temporary name, renamed into place and
get the mode any new file gets (0666 less the umask), so a group-shared model folder's cache serves
the whole group.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from detect.core.atomic import atomic_write_bytes, new_file_mode
from detect.core.cache_dirs import user_cache_dir
from detect.core.errors import ModelError
from detect.core.files import UnreadableFileError, open_regular, parse_json, read_regular
from detect.model.formats import CACHE_NAME

CACHE_ENV = "DETECT_CACHE_DIR"
MANIFEST = "manifest.json"
COMPILED = "compiled"
LOCK_WAIT = 600.0  # seconds: a big model converts in under a minute on 2 cores
_MANIFEST_LIMIT = 1 << 20


class CacheError(ModelError):
    """The cache folder cannot be used (a disk full, a file that cannot be removed); names the folder."""


def cache_root(model_path: Path) -> Path:
    """The writable folder converted forms of `model_path` go under (see the module docstring)."""
    model_path = Path(model_path)
    cache_dir = model_path / CACHE_NAME if model_path.is_dir() else model_path.parent / CACHE_NAME
    beside = cache_dir if model_path.is_dir() else cache_dir / model_path.name
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]) / _own_name(model_path)
    if not cache_dir.is_symlink() and _writable(beside):
        return beside
    return user_cache_dir() / _own_name(model_path)


def cache_folder(model_path: Path, runtime: str, version: str, checksum: str) -> Path:
    """Where this model version's converted forms for `runtime` at `version` live (not created)."""
    return cache_root(model_path) / f"{runtime}-{version}" / checksum[:16]


def model_cache(model_path: Path, runtime: str, version: str, checksum: str) -> Path:
    """`cache_folder`, made on first use; the folders of the model's earlier checksums and of the
    runtime's other versions (an upgraded OpenVINO cannot read an older one's blobs anyway) are
    removed then. A link on the way below the cache root is removed (the link, not what it points
    at) and a real folder made in its place."""
    folder = cache_folder(model_path, runtime, version, checksum)
    this_version = folder.parent  # .../openvino-2026.4.1
    try:
        fresh = not _is_real_dir(folder)
        for level in (this_version.parent, this_version, folder):
            _make_real_dir(level)
        if fresh:
            stale = [p for p in _entries(this_version.parent) if p.name.startswith(f"{runtime}-") and p != this_version
                     and _is_version_folder(p)]
            stale += [p for p in _entries(this_version) if p != folder and _is_cache_folder(p)]
            for path in stale:
                shutil.rmtree(path, ignore_errors=True)
    except OSError as err:
        raise CacheError(f"the cache {folder} cannot be made: {err.strerror or err}") from None
    return folder


class ModelCache:
    """One cache folder as this process checked it: files are read and written under `locked()`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.discarded: list[str] = []  # what the checks removed (edited, half-written, not ours)
        self._checksums: dict[str, str] = {}  # name (relative to the folder) -> sha256, as checked
        self._fd: int | None = None
        self._depth = 0

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The folder to this process alone (re-entrant); on taking it, `verify()`."""
        if self._depth == 0:
            self._lock()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None

    def _lock(self) -> None:
        try:
            self._fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as err:
            raise CacheError(f"the cache {self.folder} cannot be opened: {err.strerror or err}") from None
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self._fd)
                    self._fd = None
                    raise CacheError(f"the cache {self.folder} has been in use by another process for "
                                     f"{LOCK_WAIT:.0f} s") from None
                time.sleep(0.2)
        try:
            self.verify()
        except BaseException:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
            raise

    def verify(self) -> None:
        """Keep the files whose SHA-256 is the manifest's; discard everything else in the folder."""
        recorded = self._read_manifest()
        kept: dict[str, str] = {}
        with self._errors("checked"):
            for path in self._contents():
                name = path.relative_to(self.folder).as_posix()
                digest = _sha256_or_none(path)
                if digest is not None and recorded.get(name) == digest:
                    kept[name] = digest
                else:
                    self._discard(path)
        self._checksums = kept
        if kept != recorded:
            self._write_manifest()

    def has(self, *names: str) -> bool:
        """Whether each of `names` was checked (or written) by this process while it holds the lock."""
        return all(name in self._checksums for name in names)

    def read(self, name: str, *, limit: int) -> bytes:
        """A checked file's bytes (no link followed), checked again against its SHA-256."""
        data = read_regular(self.folder / name, limit=limit, follow_links=False)
        if hashlib.sha256(data).hexdigest() != self._checksums.get(name):
            raise UnreadableFileError(f"{self.folder / name} changed after it was checked")
        return data

    def write(self, name: str, data: bytes) -> None:
        """`name` holds `data` entirely or is left as it was; recorded in the manifest."""
        with self._errors("written"):
            atomic_write_bytes(self.folder / name, data)
        self._checksums[name] = hashlib.sha256(data).hexdigest()
        self._write_manifest()

    def add(self, names: Iterable[str]) -> None:
        """Record files put in the folder by other means (a runtime's own writer): mode, SHA-256."""
        with self._errors("written"):
            for name in names:
                path = self.folder / name
                os.chmod(path, new_file_mode(), follow_symlinks=False)
                digest = _sha256_or_none(path)
                if digest is None:
                    raise OSError(errno.EINVAL, f"{name} is not a regular file")
                self._checksums[name] = digest
        self._write_manifest()

    def add_new(self, folder: str) -> None:
        """`add` every file in the subfolder `folder` not yet recorded (blobs a runtime wrote)."""
        sub = self.folder / folder
        if _is_real_dir(sub):
            self.add(f"{folder}/{p.name}" for p in _entries(sub) if f"{folder}/{p.name}" not in self._checksums)

    def discard(self, names: Iterable[str] | None = None) -> None:
        """Remove `names` (everything in the folder when None) from the folder and the manifest."""
        chosen = None if names is None else set(names)
        with self._errors("cleared"):
            for path in self._contents() if chosen is None else [self.folder / n for n in sorted(chosen)]:
                self._discard(path)
        self._checksums = {} if chosen is None else {k: v for k, v in self._checksums.items() if k not in chosen}
        self._write_manifest()

    @contextlib.contextmanager
    def writing(self, names: Iterable[str]) -> Iterator[Path]:
        """A private folder inside the cache for a writer that cannot write one file atomically:
        once it has written `names` there, they are renamed into place in that order and recorded."""
        names = list(names)
        with self._errors("written"), tempfile.TemporaryDirectory(dir=self.folder, prefix=".saving-") as private:
            yield Path(private)
            for name in names:
                os.replace(Path(private) / name, self.folder / name)
        self.add(names)

    def _contents(self) -> list[Path]:
        """Every entry of the folder and of its `compiled/` except the manifest (not followed)."""
        found = []
        for path in _entries(self.folder):
            if path.name == MANIFEST:
                continue
            if path.name == COMPILED and _is_real_dir(path):
                found += _entries(path)
            else:
                found.append(path)
        return found

    def _discard(self, path: Path) -> None:
        name = path.relative_to(self.folder).as_posix()
        with contextlib.suppress(FileNotFoundError):
            if _is_real_dir(path):
                shutil.rmtree(path)
            else:
                path.unlink()  # a link: the link goes, never what it points at
            self.discarded.append(name)

    def _read_manifest(self) -> dict[str, str]:
        path = self.folder / MANIFEST
        try:
            data = parse_json(read_regular(path, limit=_MANIFEST_LIMIT, follow_links=False), str(path))
        except UnreadableFileError:
            with self._errors("checked"):
                if path.is_symlink() or path.exists():
                    self._discard(path)
            return {}
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            return {}
        return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}

    def _write_manifest(self) -> None:
        text = json.dumps({"files": dict(sorted(self._checksums.items()))}, indent=1).encode()
        with self._errors("written"):
            atomic_write_bytes(self.folder / MANIFEST, text)

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except OSError as err:
            raise CacheError(f"the cache {self.folder} cannot be {what}: {err.strerror or err}") from None


@dataclasses.dataclass(frozen=True)
class CachedNetwork:
    """One converted network: the static input shape (batch, height, width, channels) and dtype."""

    shape: tuple[int, ...]
    dtype: str

    def file(self, folder: Path) -> Path:
        return folder / f"network-{'x'.join(str(d) for d in self.shape)}-{self.dtype}.xml"


_NETWORK_FILE = re.compile(r"network-(\d+(?:x\d+)*)-(\w+)\.xml")
_CHECKSUM_NAME = re.compile(r"[0-9a-f]{16}")
_OWN_FILE = re.compile(r"frozen\.pb|split\.json|manifest\.json|compiled|network-\d+(?:x\d+)*-\w+\.(?:xml|bin)"
                       r"|\.saving-.*|\.(?:frozen\.pb|split\.json|manifest\.json)\..*")


def cached_networks(folder: Path) -> list[CachedNetwork]:
    """The networks converted into `folder` (an .xml with its .bin beside it), smallest batch first;
    as listed (a run checks them before it reads them), links not followed."""
    found = []
    for xml in _entries(folder) if _is_real_dir(folder) else []:
        match = _NETWORK_FILE.fullmatch(xml.name)
        if match and all(_is_regular(p) for p in (xml, xml.with_suffix(".bin"))):
            found.append(CachedNetwork(tuple(int(d) for d in match[1].split("x")), match[2]))
    return sorted(found, key=lambda n: (n.shape, n.dtype))


def _sha256_or_none(path: Path) -> str | None:
    """The SHA-256 of a regular file (a link, a folder or a FIFO: None), read without following links."""
    try:
        fd = open_regular(path, follow_links=False)
    except UnreadableFileError:
        return None
    digest = hashlib.sha256()
    try:
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _make_real_dir(path: Path) -> None:
    """`path` a real folder (made with its parents); a link or a file in its place is removed."""
    if _is_real_dir(path):
        return
    if path.is_symlink() or path.exists():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _is_cache_folder(path: Path) -> bool:
    """A real folder named for a checksum whose every entry is one a runtime makes."""
    return (_is_real_dir(path) and bool(_CHECKSUM_NAME.fullmatch(path.name))
            and all(_OWN_FILE.fullmatch(p.name) for p in _entries(path)))


def _is_version_folder(path: Path) -> bool:
    """A real folder holding only cache folders."""
    return _is_real_dir(path) and all(_is_cache_folder(p) for p in _entries(path))


def _own_name(model_path: Path) -> str:
    """The model's name and a hash of its full resolved path: `/x/a__b/m` and `/x/a/b__m` differ."""
    resolved = Path(model_path).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    return f"{resolved.name[:64] or 'model'}-{digest}"


def _writable(folder: Path) -> bool:
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
