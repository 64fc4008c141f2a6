"""The benchmark's arithmetic and report (the timed runs themselves are `make bench`)."""

from __future__ import annotations

import json

import pytest

from detect.tools.bench import efficiency_bounds, rate_lines
from detect.tools.bench_rows import (
    ImagesPerSecond,
    MemoryRuns,
    ModelRates,
    ReaderPeak,
    RuntimeRates,
    Startup,
    TileImagesPerSecond,
    TileRates,
    TileRunsPerRepeat,
)


def rates(runtime: str = "tensorflow", blog_loop: float | None = 1.0, speedup: float | None = 11.0,
          runs: dict[str, list[list[float]]] | None = None) -> RuntimeRates:
    """One runtime's record as `bench.summary` makes it (the numbers of the report test below)."""
    runs = runs or {"alone": [[20.0, 0.0925]], "off": [[17.0, 0.107]], "png": [[12.0, 0.14]], "default": [[11.0, 0.156]]}
    return RuntimeRates(
        model="benchmark", runtime=runtime, input_size="320", nms_iou=None, batch_size=4, images=200, cores=2,
        startup_s=Startup(imports=3.3, model_load_and_warmup=2.5),
        images_per_s=ImagesPerSecond(detector_alone=20.0, pipeline_no_outputs=17.0, pipeline_png_only=12.0,
                                     pipeline_default=11.0, blog_loop=blog_loop),
        efficiency_no_outputs=0.85, efficiency_default=0.55, efficiency_png_only=0.6,
        efficiency_of_medians={"no_outputs": 0.85, "default": 0.55},
        efficiency_bound=efficiency_bounds(20.0, {k: v[0][1] for k, v in runs.items()}, 2),
        speedup_vs_blog=speedup, cpu_ms_per_image={"draw": 5.4},
        pipeline_cpu_ms_per_image={"no_outputs": 107.0, "png_only": 140.0, "default": 156.0}, raw_runs=runs)


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
    text = "\n".join(rate_lines(rates()))
    assert "detect benchmark: 200 images, benchmark, tensorflow, batch 4, input 320" in text
    assert "efficiency 0.85 (target >= 0.9: MISSED)" in text
    assert "PNG only        12.00 images/s   efficiency 0.60" in text
    assert "efficiency 0.55, 0.86 of the bound (target >= 0.9: MISSED)" in text
    assert "detector / no outputs / PNG only / default images/s: 20.00 / 17.00 / 12.00 / 11.00" in text
    assert "keeps 1.85 of 2 cores busy" in text
    assert "no outputs 0.93, PNG only 0.71, default 0.64" in text
    assert "blog loop" in text and "blog loop" not in "\n".join(rate_lines(rates(blog_loop=None, speedup=None)))


def test_a_runtimes_record_is_its_bench_json_object_key_for_key():
    record = json.loads(json.dumps(ModelRates({"tensorflow": rates()}).to_json()))
    assert list(record) == ["tensorflow"]  # one runtime: no "comparison"
    assert list(record["tensorflow"]) == [
        "model", "runtime", "input_size", "nms_iou", "batch_size", "images", "cores", "startup_s", "images_per_s",
        "efficiency_no_outputs", "efficiency_default", "efficiency_png_only", "efficiency_of_medians",
        "efficiency_bound", "speedup_vs_blog", "cpu_ms_per_image", "pipeline_cpu_ms_per_image", "raw_runs"]
    assert record["tensorflow"]["startup_s"] == {"imports": 3.3, "model_load_and_warmup": 2.5}
    assert record["tensorflow"]["images_per_s"] == {"detector_alone": 20.0, "pipeline_no_outputs": 17.0,
                                                   "pipeline_png_only": 12.0, "pipeline_default": 11.0, "blog_loop": 1.0}
    assert record["tensorflow"]["raw_runs"]["off"] == [[17.0, 0.107]]


def test_the_memory_and_tile_records_keep_their_bench_json_keys():
    rss = MemoryRuns(images=200, small_mb=500.0, big_images=1000, big_mb=550.0,
                     reader=ReaderPeak(file="x.parquet", file_mb=12.5, row_groups=1, peak_rss_mb=300.0))
    assert rss.ratio == pytest.approx(1.1)
    assert rss.to_json() == {"peak_rss_mb": {"200": 500.0, "1000": 550.0, "ratio": rss.ratio},
                             "reader_peak_rss_mb": {"file": "x.parquet", "file_mb": 12.5, "row_groups": 1,
                                                    "peak_rss_mb": 300.0}}
    tiles = TileRates(model="m", tile={"size": 512}, tiles_per_1920x1280=12, tiles_per_1920x886=8,
                      images_per_s=TileImagesPerSecond(untiled=4.0, tiled=1.0), slowdown=4.0,
                      raw=TileRunsPerRepeat(untiled=[4.0], tiled=[1.0]))
    assert json.loads(json.dumps(tiles.to_json())) == {
        "model": "m", "tile": {"size": 512}, "tiles_per_1920x1280": 12, "tiles_per_1920x886": 8,
        "images_per_s": {"untiled": 4.0, "tiled": 1.0}, "slowdown": 4.0, "raw": {"untiled": [4.0], "tiled": [1.0]}}


def test_runtimes_are_compared_per_repeat_and_against_the_targets():
    from detect.tools.bench_runtimes import compare_runtimes, runtime_lines

    def runs(rates):
        return {mode: [[rate, 0.1] for rate in rates] for mode in ("alone", "off", "png", "default")}

    # Per repeat: OpenVINO 2x, then 1.25x, then 1.6x TensorFlow's rate; the median of time ratios is 1/1.6.
    both = {"tensorflow": runs([10.0, 20.0, 10.0]), "openvino": runs([20.0, 25.0, 16.0])}
    comparison = compare_runtimes(both, ("tensorflow", "openvino"))
    assert comparison.time_ratio["off"] == pytest.approx(0.625)
    block = ModelRates({"tensorflow": rates("tensorflow", speedup=8.2), "openvino": rates("openvino", speedup=11.5)},
                       comparison)
    text = "\n".join(runtime_lines(block))
    assert "openvino against tensorflow (benchmark): time per image, openvino / tensorflow" in text
    assert "pipeline, no outputs        0.62x  (1.60x the speed) (target <= 0.6: MISSED)" in text
    assert "over the blog loop: tensorflow 8.2x, openvino 11.5x (target >= 11: met)" in text
    assert runtime_lines(ModelRates({"tensorflow": block.by_runtime["tensorflow"]})) == []  # one runtime: nothing to compare
    assert list(block.to_json()) == ["tensorflow", "openvino", "comparison"]
    assert block.to_json()["comparison"] == {"reference": "tensorflow", "other": "openvino",
                                             "time_ratio": comparison.time_ratio}


def test_the_input_size_row_says_the_ratio_against_the_target():
    from detect.tools.bench_sizes import SizeCost, size_lines

    met, missed = SizeCost("fit:960x640", 148.0, 100.0), SizeCost("fit:1056x704", 270.0, 100.0)
    assert met.ratio == 1.48 and size_lines(met)[1] == ("input size: the model alone at its default fit:960x640 148 "
                                                        "ms/image, at the 512x512 letterbox 100 ms/image: 1.48x "
                                                        "(target <= 2.6: met)")
    assert size_lines(missed)[1].endswith("2.70x (target <= 2.6: MISSED)")


def test_the_gpu_box_ceiling_is_its_cores_over_the_cpu_an_image_of_everything_but_the_model():
    from detect.tools.bench_predict import DEFAULT_OUTPUTS, SteadyRun, gpu_box_ceiling, steady_lines

    assert gpu_box_ceiling(45.0) == pytest.approx(355.6, abs=0.1)
    assert gpu_box_ceiling(26.0, cores=16) == pytest.approx(615.4, abs=0.1)
    rows = [SteadyRun("no GIF, 2 render processes (default)", 1.9, 20.0, 90.0),
            SteadyRun(f"{DEFAULT_OUTPUTS}, 2 render processes", 1.85, 32.0, 60.0)]
    lines = steady_lines(rows, 200)
    ceiling = [line for line in lines if "16-core box" in line]
    assert len(ceiling) == 1  # from the run with every default output only
    assert "a 16-core box: 500 images/s at most (16 x 1000 / 32.0 CPU ms" in ceiling[0]
    assert "(target <= 26: MISSED)" in ceiling[0] and "(target >= 1.8: met)" in ceiling[0]


def test_a_stage_called_inside_another_counts_only_as_itself(monkeypatch):
    from detect.tools import bench_stages

    now = [0.0]
    monkeypatch.setattr(bench_stages.time, "thread_time", lambda: now[0])
    clock = bench_stages.StageClock()

    def inner() -> None:
        now[0] += 2.0

    timed_inner = clock.wrap("chips", inner)

    def outer() -> int:
        now[0] += 3.0
        timed_inner()
        return 7

    def items():
        now[0] += 1.0
        yield 1
        now[0] += 0.5
        yield 2

    assert clock.wrap("draw", outer)() == 7
    assert list(clock.wrap("decode", items)()) == [1, 2]
    assert clock.seconds == {"chips": 2.0, "draw": 3.0, "decode": 1.5}


def test_every_function_the_stage_bench_times_is_found_in_this_code():
    """A stage whose function moved (a module renamed, a function split out) would show 0 and its
    time would count as "rest": each one the stage bench names must resolve here."""
    from detect.tools import bench_stages

    missing = []
    for stage, names in bench_stages.STAGES.items():
        for module_name, qualname in names:
            module = bench_stages._module(module_name)
            owner_name, _, attr = qualname.rpartition(".")
            owner = getattr(module, owner_name, None) if owner_name else module
            if getattr(owner, attr, None) is None:
                missing.append(f"{stage}: {module_name}.{qualname}")
    assert missing == []
