"""`make bench`: the runtimes side by side, per model (their runs are interleaved by `bench.rates`).

The per-image time with OpenVINO over TensorFlow's, each pair of runs made seconds apart in one
repeat (median over repeats), for the detector alone and the pipeline without and with outputs.
"""

from __future__ import annotations

import statistics

from detect.tools.bench_rows import ModelRates, RuntimeComparison
from detect.tools.bench_targets import verdict

# TensorFlow first: the reference, and the runtime the blog loop uses.
RUNTIMES = ("tensorflow", "openvino")
MODES = {"alone": "detector alone", "off": "pipeline, no outputs", "png": "pipeline, PNG only",
         "default": "pipeline, PNG+GIF+mosaic"}
# Issue 24: OpenVINO's steady per-image time on the bench input, no outputs, against TensorFlow's;
# with default outputs, the speed-up over the blog loop.
TARGET_TIME_RATIO = 0.6
TARGET_SPEEDUP = 11.0


def compare_runtimes(runs: dict[str, dict[str, list]], runtimes: tuple[str, ...]) -> RuntimeComparison:
    """Per mode: median over repeats of (time per image with the second runtime / with the first)."""
    reference, other = runtimes[0], runtimes[1]
    ratios = {mode: statistics.median(ref[0] / oth[0] for ref, oth in
                                      zip(runs[reference][mode], runs[other][mode], strict=True))
              for mode in MODES}
    return RuntimeComparison(reference=reference, other=other, time_ratio=ratios)


def runtime_lines(rates: ModelRates) -> list[str]:
    """The comparison block of one model: time ratios, with the targets where the issue set them."""
    comparison = rates.comparison
    if comparison is None:
        return []
    ref_name, other_name = comparison.reference, comparison.other
    reference, other = rates.by_runtime[ref_name], rates.by_runtime[other_name]
    lines = ["", f"{other_name} against {ref_name} ({reference.model}): time per image, {other_name} / "
             f"{ref_name} (median over repeats of runs made back to back)"]
    for mode, label in MODES.items():
        ratio = comparison.time_ratio[mode]
        target = " " + verdict(ratio, TARGET_TIME_RATIO, above=False) \
            if mode == "off" and reference.images_per_s.blog_loop else ""
        lines.append(f"  {label:<26} {ratio:5.2f}x  ({1 / ratio:.2f}x the speed){target}")
    if other.speedup_vs_blog:
        lines.append(f"  speed-up of default outputs over the blog loop: {ref_name} {reference.speedup_vs_blog:.1f}x, "
                     f"{other_name} {other.speedup_vs_blog:.1f}x " + verdict(other.speedup_vs_blog, TARGET_SPEEDUP))
    return lines
