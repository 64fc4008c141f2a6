"""`python -m detect.tools.bench_models`: models (or runtimes) side by side on the real frame, one table."""

from __future__ import annotations

import pytest
from helpers.onnx_graphs import ultralytics_head, ultralytics_model

from detect.tools import bench_models


@pytest.mark.slow
def test_each_model_gets_a_row_with_its_input_size_and_runtime(stub_dynamic_dir, real_frame_path, tmp_path, capsys):
    onnx = ultralytics_model(tmp_path / "yolo.onnx", {0: "person"}, ultralytics_head([(320, 320, 40, 40, 0, 0.9)], 1))
    assert bench_models.main([f"{stub_dynamic_dir}@tensorflow", f"{onnx}@openvino", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "batch 4, 20 images a round, 1 rounds, medians"
    assert lines[3].startswith(f"| {stub_dynamic_dir}@tensorflow (320, tensorflow) | ") and lines[3].endswith(" | 1.00 |")
    assert lines[4].startswith(f"| {onnx}@openvino (native, openvino) | ") and len(lines) == 5
