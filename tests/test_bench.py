"""The benchmark's arithmetic and report (the timed runs themselves are `make bench`)."""

from __future__ import annotations

import pytest

from detect.tools.bench import efficiency_bounds, rate_lines


def test_efficiency_bound_is_the_cpu_the_model_leaves():
    # The model alone: 20 images/s at 92.5 CPU-ms an image keeps 1.85 cores busy.
    bounds = efficiency_bounds(20.0, {"alone": 0.0925, "off": 0.107, "default": 0.156}, cores=2)
    assert bounds["model_cores"] == pytest.approx(1.85)
    assert bounds["off"] == pytest.approx(2 / 1.85 * 92.5 / 107)
    assert bounds["default"] == pytest.approx(2 / 1.85 * 92.5 / 156)


def test_efficiency_bound_never_exceeds_one():
    # One core busy with the model on an 8-core box: outputs can hide completely.
    assert efficiency_bounds(10.0, {"alone": 0.1, "default": 0.3}, cores=8)["default"] == 1.0


def test_report_shows_every_run_and_the_bounds():
    runs = {"alone": [[20.0, 0.0925]], "off": [[17.0, 0.107]], "png": [[12.0, 0.14]], "default": [[11.0, 0.156]]}
    report = {
        "images": 200, "model": "benchmark", "batch_size": 4, "cores": 2,
        "startup_s": {"imports": 3.3, "model_load_and_warmup": 2.5},
        "images_per_s": {"detector_alone": 20.0, "pipeline_no_outputs": 17.0, "pipeline_png_only": 12.0,
                         "pipeline_default": 11.0, "blog_loop": 1.0},
        "efficiency_no_outputs": 0.85, "efficiency_png_only": 0.6, "efficiency_default": 0.55, "speedup_vs_blog": 11.0,
        "efficiency_bound": efficiency_bounds(20.0, {k: v[0][1] for k, v in runs.items()}, 2),
        "cpu_ms_per_image": {"draw": 5.4},
        "pipeline_cpu_ms_per_image": {"no_outputs": 107.0, "png_only": 140.0, "default": 156.0},
        "raw_runs": runs,
    }
    text = "\n".join(rate_lines(report))
    assert "efficiency 0.85 (target >= 0.9: MISSED)" in text
    assert "PNG only        12.00 images/s   efficiency 0.60" in text
    assert "efficiency 0.55, 0.86 of the bound (target >= 0.9: MISSED)" in text
    assert "detector / no outputs / PNG only / default images/s: 20.00 / 17.00 / 12.00 / 11.00" in text
    assert "keeps 1.85 of 2 cores busy" in text
    assert "no outputs 0.93, PNG only 0.71, default 0.64" in text


def test_runtimes_are_compared_per_repeat_and_against_the_targets():
    from detect.tools.bench_runtimes import compare_runtimes, runtime_lines

    def runs(rates):
        return {mode: [[rate, 0.1] for rate in rates] for mode in ("alone", "off", "png", "default")}

    # Per repeat: OpenVINO 2x, then 1.25x, then 1.6x TensorFlow's rate; the median of time ratios is 1/1.6.
    both = {"tensorflow": runs([10.0, 20.0, 10.0]), "openvino": runs([20.0, 25.0, 16.0])}
    comparison = compare_runtimes(both, ("tensorflow", "openvino"))
    assert comparison["time_ratio"]["off"] == pytest.approx(0.625)
    block = {"comparison": comparison,
             "tensorflow": {"model": "benchmark", "images_per_s": {"blog_loop": 1.0}, "speedup_vs_blog": 8.2},
             "openvino": {"model": "benchmark", "images_per_s": {"blog_loop": 1.0}, "speedup_vs_blog": 11.5}}
    text = "\n".join(runtime_lines(block))
    assert "pipeline, no outputs        0.62x  (1.60x the speed) (target <= 0.6: MISSED)" in text
    assert "over the blog loop: tensorflow 8.2x, openvino 11.5x (target >= 11: met)" in text
    assert runtime_lines({"tensorflow": block["tensorflow"]}) == []  # one runtime: nothing to compare


def test_the_input_size_row_says_the_ratio_against_the_target():
    from detect.tools.bench_sizes import SizeCost, size_lines

    met, missed = SizeCost("fit:960x640", 148.0, 100.0), SizeCost("fit:1056x704", 270.0, 100.0)
    assert met.ratio == 1.48 and size_lines(met)[1] == ("input size: the model alone at its default fit:960x640 148 "
                                                        "ms/image, at the 512x512 letterbox 100 ms/image: 1.48x "
                                                        "(target <= 2.6: met)")
    assert size_lines(missed)[1].endswith("2.70x (target <= 2.6: MISSED)")
