"""`models/npm_package.py`: the pinned npm tarball, fetched once, checked by us, cached; its errors."""

from __future__ import annotations

import io
import stat
import tarfile
from pathlib import Path

import pytest
from helpers.models import load_models_script

npm = load_models_script("npm_package")
SPEC = "@scope/pkg@1.2.3"


def tarball_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def fake_npm(tmp_path: Path, script: str) -> str:
    """An `npm` that runs `script` (sh) with the destination folder as $DEST; calls are logged."""
    path = tmp_path / "npm"
    path.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\nDEST="$4"\n{script}\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def package(tmp_path) -> tuple[Path, str]:
    """A tarball as the registry would serve it, and its integrity."""
    source = tmp_path / "served.tgz"
    source.write_bytes(tarball_bytes({"package/models/a.json": b"{}", "package/models/a.bin": b"\0" * 8}))
    return source, npm.integrity(source)


def test_fetch_packs_checks_and_caches(package, tmp_path):
    source, expected = package
    cache = tmp_path / "cache"
    tool = fake_npm(tmp_path, f'cp {source} "$DEST/scope-pkg-1.2.3.tgz"')
    got = npm.fetch(SPEC, cache=cache, npm=tool, expected=expected)
    assert got == cache / "npm" / "scope-pkg-1.2.3.tgz" and got.read_bytes() == source.read_bytes()
    assert (tmp_path / "calls").read_text().split("\n")[0].startswith(f"pack {SPEC} --pack-destination ")
    (tmp_path / "second").mkdir()
    failing = fake_npm(tmp_path / "second", "exit 1")  # a second fetch must not call npm at all
    assert npm.fetch(SPEC, cache=cache, npm=failing, expected=expected) == got
    assert not (tmp_path / "second" / "calls").exists()


def test_a_checksum_mismatch_is_refused_and_not_cached(package, tmp_path):
    source, _ = package
    tool = fake_npm(tmp_path, f'cp {source} "$DEST/scope-pkg-1.2.3.tgz"')
    wrong = "sha512-" + "A" * 86 + "=="
    with pytest.raises(npm.PackageError) as err:
        npm.fetch(SPEC, cache=tmp_path / "cache", npm=tool, expected=wrong)
    assert str(err.value) == (f"npm package {SPEC}: checksum mismatch (got {npm.integrity(source)[:23]}..., pinned "
                              f"sha512-AAAAAAAAAAAAAAAA...); refusing it")
    assert list((tmp_path / "cache" / "npm").iterdir()) == []


def test_an_altered_cached_tarball_is_fetched_again(package, tmp_path):
    source, expected = package
    cached = tmp_path / "cache" / "npm" / "scope-pkg-1.2.3.tgz"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"half a download")
    tool = fake_npm(tmp_path, f'cp {source} "$DEST/scope-pkg-1.2.3.tgz"')
    assert npm.fetch(SPEC, cache=tmp_path / "cache", npm=tool, expected=expected).read_bytes() == source.read_bytes()


def test_no_npm_is_one_line(tmp_path):
    with pytest.raises(npm.PackageError) as err:
        npm.fetch(SPEC, cache=tmp_path, npm=str(tmp_path / "no-npm"), expected="sha512-x")
    assert str(err.value) == f"npm is not installed (needed to fetch {SPEC}); install Node.js, e.g. `apt-get install npm`"


def test_an_unreachable_registry_is_one_line(tmp_path):
    tool = fake_npm(tmp_path, 'echo "npm error code ENOTFOUND" >&2; echo "npm error network request failed" >&2; exit 1')
    with pytest.raises(npm.PackageError) as err:
        npm.fetch(SPEC, cache=tmp_path / "cache", npm=tool, expected="sha512-x")
    assert str(err.value) == (f"npm pack {SPEC} failed (is the npm registry reachable?): npm error network request failed")


def test_an_unpinned_package_or_version_is_refused(tmp_path):
    with pytest.raises(npm.PackageError, match=r"^npm package other@1.0.0: no pinned integrity to check it against$"):
        npm.fetch("other@1.0.0", cache=tmp_path)
    with pytest.raises(npm.PackageError, match=r"^npm package 'human-models': expected NAME@VERSION, a pinned version$"):
        npm.split_spec("human-models")


def test_extract_takes_only_the_named_files(package, tmp_path):
    source, _ = package
    sums = npm.extract(source, {"package/models/a.bin": tmp_path / "a.bin"})
    assert (tmp_path / "a.bin").read_bytes() == b"\0" * 8 and list(sums) == ["a.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "served.tgz"]
    with pytest.raises(npm.PackageError, match=r"^served.tgz has no package/models/b.bin$"):
        npm.extract(source, {"package/models/b.bin": tmp_path / "b.bin"})


def test_the_pinned_integrity_is_the_registry_value_for_the_pinned_version():
    assert npm.PINNED_INTEGRITY[npm.HUMAN_MODELS] == (
        "sha512-qTqdbwQWh+wXkiJ51bmgkV6xB+L7zhkZu0TEq+xzwe1VvJ4+JB5JoOYJQ4ebvtkp8Bu+MBm4s+BIz0KCyIlAqQ==")
