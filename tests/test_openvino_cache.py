"""The OpenVINO cache on crafted and damaged input: it never follows a link, never deletes or writes
outside itself, uses only what a run wrote (checksums), heals by converting again, and falls back to
TensorFlow with one line naming the cache only when it cannot."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from helpers.tiny_models import build_conv_nms_model, matched
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from detect.cli import main
from detect.model.detector import Detector
from detect.model.runtimes import RUNTIME_ENV, cache
from detect.model.runtimes.cache import CACHE_ENV, cache_root

ov = pytest.importorskip("detect.model.runtimes.openvino")
pytest.importorskip("openvino", reason="OpenVINO is not installed: pip install openvino==2026.4.1")

IMAGES = np.random.default_rng(1).integers(0, 255, (2, 40, 60, 3), dtype=np.uint8)
FROZEN, SPLIT, MANIFEST = "frozen.pb", "split.json", "manifest.json"
BIN, XML = "network-1x32x32x3-float32.bin", "network-1x32x32x3-float32.xml"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list]:
    """The tiny conv + NMS model, its cache filled once (kept pristine), and TensorFlow's boxes."""
    model = build_conv_nms_model(tmp_path_factory.mktemp("built") / "model")
    Detector(model, threshold=0.0, runtime="openvino", batch_size=2)
    return model, Detector(model, threshold=0.0, runtime="tensorflow", batch_size=2)(IMAGES)


@pytest.fixture()
def model(built, tmp_path, monkeypatch) -> Path:
    """A copy of the built model with its filled cache (same files, same checksum)."""
    monkeypatch.delenv(RUNTIME_ENV, raising=False)  # auto: OpenVINO on this CPU, TensorFlow as the fallback
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    return Path(shutil.copytree(built[0], tmp_path / "model", symlinks=True))


def folder_of(model: Path) -> Path:
    (folder,) = (model / ".detect_cache" / f"openvino-{ov.version()}").glob("*")
    return folder


def tree(path: Path) -> dict[str, bytes | str]:
    """Everything under `path` (links as their targets), to show that nothing there changed."""
    found: dict[str, bytes | str] = {}
    for p in sorted(path.rglob("*")):
        found[str(p.relative_to(path))] = f"-> {os.readlink(p)}" if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return found


def recorded(folder: Path) -> set[str]:
    """The files of a cache folder, each checked against its manifest (a conversion names its
    nodes from a process-wide counter, so two conversions differ in bytes, not in boxes)."""
    files = json.loads((folder / MANIFEST).read_text())["files"]
    found = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.name != MANIFEST and not p.is_dir()}
    assert found == set(files) and all(not (folder / n).is_symlink() for n in found)
    assert all(hashlib.sha256((folder / n).read_bytes()).hexdigest() == files[n] for n in found)
    return {n.split("/")[0] for n in found}


def assert_tensorflows_boxes(detector: Detector, reference: list) -> None:
    for ours, theirs in zip(detector(IMAGES), reference, strict=True):
        assert matched(theirs, ours) >= 0.98 and matched(ours, theirs) >= 0.98


def assert_healed(model: Path, built, discarded: set[str]) -> None:
    """Auto runs on OpenVINO without a note, TensorFlow's boxes, the damaged files converted again."""
    detector = Detector(model, threshold=0.0, batch_size=2)
    assert (detector.runtime.name, detector.runtime_note) == ("openvino", None)
    assert discarded <= set(detector.runtime.describe()["cache_discarded"])
    assert_tensorflows_boxes(detector, built[1])
    assert recorded(folder_of(model)) == recorded(folder_of(built[0]))  # the same files, each as recorded
    again = Detector(model, threshold=0.0, batch_size=2).runtime.describe()  # healed for good
    assert again["reused_cache"] and again["cache_discarded"] == []


@pytest.mark.slow
def test_a_linked_runtime_folder_is_replaced_and_what_it_points_at_is_kept(model, built, tmp_path):
    outside = tmp_path / "outside"  # a downloaded model's link could point at anyone's folder
    for name in ("photos/a.jpg", "0123456789abcdef/frozen.pb", "openvino-2025.0.0/0123456789abcdef/split.json"):
        (outside / name).parent.mkdir(parents=True, exist_ok=True)
        (outside / name).write_bytes(b"not the cache's")
    before = tree(outside)
    version = folder_of(model).parent
    shutil.rmtree(version)
    version.symlink_to(outside, target_is_directory=True)
    (version.parent / "openvino-2025.0.0").symlink_to(outside, target_is_directory=True)  # a stale version's name
    detector = Detector(model, threshold=0.0, batch_size=2)
    assert (detector.runtime.name, detector.runtime_note) == ("openvino", None)
    assert_tensorflows_boxes(detector, built[1])
    assert tree(outside) == before
    assert not version.is_symlink() and version.is_dir() and folder_of(model).parent == version


@pytest.mark.slow
def test_links_in_the_checksum_folder_and_a_linked_cache_are_never_followed(model, built, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "weights.bin").write_bytes(b"someone's file")
    folder = folder_of(model)
    (folder / BIN).unlink()
    (folder / BIN).symlink_to(outside / "weights.bin")
    (folder / "compiled").rename(tmp_path / "compiled")
    (folder / "compiled").symlink_to(outside, target_is_directory=True)
    assert_healed(model, built, {BIN, "compiled"})
    assert tree(outside) == {"weights.bin": b"someone's file"}

    shutil.rmtree(model / ".detect_cache")  # a link in the model's own folder: the user's cache is used
    (model / ".detect_cache").symlink_to(outside, target_is_directory=True)
    detector = Detector(model, threshold=0.0, batch_size=2)
    assert Path(detector.runtime.describe()["cache"]).is_relative_to(tmp_path / "user-cache" / "detect")
    assert tree(outside) == {"weights.bin": b"someone's file"}


@pytest.mark.slow
def test_a_network_edited_to_the_same_size_is_converted_again(model, built):
    weights = folder_of(model) / BIN
    negated = -np.frombuffer(weights.read_bytes(), np.float32)  # the first conv's weights among them
    weights.write_bytes(negated.tobytes())
    assert_healed(model, built, {BIN})


def forge_manifest(folder: Path, name: str) -> None:
    """The manifest edited to match an edited file: only running it can tell."""
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"][name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    (folder / MANIFEST).write_text(json.dumps(manifest))


def other_tensor(split: Path) -> None:
    facts = json.loads(split.read_text())
    outputs = facts["split"]["network_outputs"]  # scores [B, 256, 3] where boxes [B, 256, 1, 4] go, and back
    facts["split"]["network_outputs"] = outputs[::-1]
    split.write_text(json.dumps(facts))


DAMAGE = {
    "truncated frozen.pb": (FROZEN, lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])),
    "deeply nested split.json": (SPLIT, lambda p: p.write_text("[" * 100_000 + "]" * 100_000)),
    "split.json naming another tensor": (SPLIT, other_tensor),
    "garbage network .xml": (XML, lambda p: p.write_bytes(os.urandom(p.stat().st_size))),
}


@pytest.mark.slow
@pytest.mark.parametrize("forged", [False, True], ids=["", "manifest matching"])
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cache_heals_instead_of_stopping_the_run(model, built, damage, forged):
    name, spoil = DAMAGE[damage]
    folder = folder_of(model)
    spoil(folder / name)
    if forged:
        forge_manifest(folder, name)
    assert_healed(model, built, set() if forged else {name})


@pytest.mark.slow  # two runs through OpenVINO
def test_a_healed_run_says_nothing_under_quiet(model, built, tiny_v2_path, tmp_path, capfd):
    folder = folder_of(model)
    (folder / XML).write_text("<net><layers>" + "garbage " * 100)  # OpenVINO's frontends log about this on fd 2
    forge_manifest(folder, XML)
    for run in ("heals", "reuses"):
        assert main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(tmp_path / run), "--quiet",
                     "--batch-size", "2", "--no-gif", "--no-png", "--no-eval"]) == 0
        assert capfd.readouterr().err == "", run
    assert recorded(folder) == recorded(folder_of(built[0]))


def test_a_cache_that_cannot_be_rewritten_falls_back_with_one_line_naming_it(model, built, monkeypatch):
    folder = folder_of(model)
    (folder / FROZEN).write_bytes(b"\x00" * 64)

    def disk_full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache, "atomic_write_bytes", disk_full)
    detector = Detector(model, threshold=0.0, batch_size=2)
    assert detector.runtime.name == "tensorflow"
    assert detector.runtime_note == (f"note: model {model} cannot run on OpenVINO (the cache {folder} cannot be "
                                     "written: No space left on device); running on TensorFlow")
    assert_tensorflows_boxes(detector, built[1])


def test_cache_files_get_the_mode_of_any_new_file(model, built):
    shutil.rmtree(model / ".detect_cache")
    umask = os.umask(0o002)  # a group-shared model folder
    try:
        folder = Path(Detector(model, threshold=0.0, batch_size=2).runtime.describe()["cache"])
    finally:
        os.umask(umask)
    paths = [model / ".detect_cache", *(model / ".detect_cache").rglob("*")]
    assert {p.name for p in folder.iterdir()} == {FROZEN, SPLIT, MANIFEST, XML, BIN, "compiled"}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in paths if p.is_file()} == {"0o664"}
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in paths if p.is_dir()} == {"0o775"}


@pytest.mark.slow
def test_model_paths_that_flatten_alike_get_their_own_cache_folders(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(RUNTIME_ENV, raising=False)
    first, second = tmp_path / "x" / "a__b" / "m", tmp_path / "x" / "a" / "b__m"
    roots = {cache_root(first), cache_root(second)}
    assert len(roots) == 2 and {root.parent for root in roots} == {tmp_path / "cache"}
    assert {root.name.split("-")[0] for root in roots} == {"m", "b__m"}  # readable, then a hash of the full path
    build_conv_nms_model(first, seed=1)
    build_conv_nms_model(second, seed=2)
    folders = [Path(Detector(m, threshold=0.0, batch_size=2).runtime.describe()["cache"]) for m in (first, second)]
    assert all(folder.is_dir() for folder in folders)  # neither run removed the other's


MUTATIONS = st.lists(st.tuples(st.sampled_from(["truncate", "flip", "link out", "link in", "folder"]),
                               st.integers(0, 2**31), st.integers(1, 255)), min_size=1, max_size=3)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=MUTATIONS)
def test_any_damage_to_the_cache_ends_with_tensorflows_boxes(built, model, tmp_path, mutations):
    folder = folder_of(model)
    shutil.rmtree(folder)
    shutil.copytree(folder_of(built[0]), folder, symlinks=True)  # pristine for each example
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"outside the cache")
    for action, where, value in mutations:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
        if not files:
            break
        path = files[where % len(files)]
        data = path.read_bytes()
        if action == "truncate":
            path.write_bytes(data[: where % max(len(data), 1)])
        elif action == "flip":
            at = where % max(len(data), 1)
            path.write_bytes(data[:at] + bytes([data[at] ^ value]) + data[at + 1:] if data else b"x")
        elif action == "folder":
            path.unlink()
            (path / "inside").mkdir(parents=True)
        else:
            path.unlink()
            path.symlink_to(outside if action == "link out" else files[value % len(files)])
    detector = Detector(model, threshold=0.0, batch_size=2)
    note = detector.runtime_note
    assert note is None or (note.count("\n") == 0 and str(folder) in note), note
    assert_tensorflows_boxes(detector, built[1])
    assert outside.read_bytes() == b"outside the cache"
