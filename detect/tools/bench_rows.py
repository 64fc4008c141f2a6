"""`make bench`'s records: one frozen dataclass per result it prints and saves in bench.json.

Field order is bench.json's key order (`dataclasses.asdict`); `to_json` gives the document's part.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Startup:
    """Seconds before the rates (not in them): imports, and the model's load with its warm-up."""

    imports: float
    model_load_and_warmup: float


@dataclasses.dataclass(frozen=True)
class ImagesPerSecond:
    detector_alone: float
    pipeline_no_outputs: float
    pipeline_png_only: float
    pipeline_default: float
    blog_loop: float | None  # None: the blog loop was not run for this model


@dataclasses.dataclass(frozen=True)
class RuntimeRates:
    """One model on one runtime: rates, efficiencies (paired per repeat) and CPU by stage."""

    model: str
    runtime: str
    input_size: str
    nms_iou: float | None
    batch_size: int
    images: int
    cores: int
    startup_s: Startup
    images_per_s: ImagesPerSecond
    efficiency_no_outputs: float
    efficiency_default: float
    efficiency_png_only: float
    efficiency_of_medians: dict[str, float]  # "no_outputs", "default"
    efficiency_bound: dict[str, float]  # per pipeline mode ("off", "png", "default"), and "model_cores"
    speedup_vs_blog: float | None
    cpu_ms_per_image: dict[str, float]  # by stage, under the name the report prints
    pipeline_cpu_ms_per_image: dict[str, float]  # "no_outputs", "png_only", "default"
    raw_runs: dict[str, list[list[float]]]  # per mode, each repeat's [images/s, CPU s per image]


@dataclasses.dataclass(frozen=True)
class RuntimeComparison:
    """Per mode: median over repeats of (time per image with `other` / with `reference`)."""

    reference: str
    other: str
    time_ratio: dict[str, float]


@dataclasses.dataclass(frozen=True)
class ModelRates:
    """One model on each runtime benched (the first is the reference), and their comparison."""

    by_runtime: dict[str, RuntimeRates]
    comparison: RuntimeComparison | None = None  # None: one runtime, nothing to compare

    def to_json(self) -> dict[str, object]:
        """bench.json's block: each runtime's rates under its name, then "comparison"."""
        block: dict[str, object] = {name: dataclasses.asdict(r) for name, r in self.by_runtime.items()}
        if self.comparison is not None:
            block["comparison"] = dataclasses.asdict(self.comparison)
        return block


@dataclasses.dataclass(frozen=True)
class TileImagesPerSecond:
    untiled: float
    tiled: float


@dataclasses.dataclass(frozen=True)
class TileRunsPerRepeat:
    untiled: list[float]
    tiled: list[float]


@dataclasses.dataclass(frozen=True)
class TileRates:
    """The pipeline (no outputs) with and without `--tile`, and the slowdown (median of per-repeat ratios)."""

    model: str
    tile: dict[str, object]  # TileSpec.to_json(): what the manifest records
    tiles_per_1920x1280: int
    tiles_per_1920x886: int
    images_per_s: TileImagesPerSecond
    slowdown: float
    raw: TileRunsPerRepeat

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ReaderPeak:
    """Peak RSS of a fresh process streaming one v2 file through the reader alone."""

    file: str
    file_mb: float
    row_groups: int
    peak_rss_mb: float


@dataclasses.dataclass(frozen=True)
class MemoryRuns:
    """Peak RSS (MB) of fresh `detect segment` processes on a small and a larger segment, and the reader's."""

    images: int
    small_mb: float
    big_images: int
    big_mb: float
    reader: ReaderPeak

    @property
    def ratio(self) -> float:
        return self.big_mb / self.small_mb

    def to_json(self) -> dict[str, object]:
        """bench.json's two keys: "peak_rss_mb" (by segment size, and the ratio) and "reader_peak_rss_mb"."""
        return {"peak_rss_mb": {str(self.images): self.small_mb, str(self.big_images): self.big_mb, "ratio": self.ratio},
                "reader_peak_rss_mb": dataclasses.asdict(self.reader)}
