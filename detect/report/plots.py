"""The report's plots, drawn with matplotlib's object API on the Agg canvas (no global state)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from detect.sinks.atomic import atomic_path

# matplotlib's default cycle: distinct on white, and a class keeps its color across the plots.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MAX_CLASSES = 8  # beyond this, the rarer classes share "other"


def _classes(drawn: pd.DataFrame) -> list[str]:
    return list(drawn["label"].value_counts().index[:MAX_CLASSES])


def _save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png")
    return path


def timeline(drawn: pd.DataFrame, cameras: list[str], path: Path) -> Path:
    """Drawn boxes per frame and class over time, one panel per camera."""
    classes = _classes(drawn)
    figure = Figure(figsize=(9, 1.6 + 1.5 * len(cameras)), dpi=100)
    FigureCanvasAgg(figure)
    start = drawn["timestamp"].min() if not drawn.empty else 0
    axes_list = figure.subplots(len(cameras), 1, sharex=True, squeeze=False)[:, 0]
    for axes, camera in zip(axes_list, cameras, strict=True):
        rows = drawn[drawn["camera"] == camera]
        for n, label in enumerate(classes):
            per_frame = rows[rows["label"] == label].groupby("timestamp").size()
            if not per_frame.empty:
                axes.plot((per_frame.index - start) / 1e6, per_frame.values, marker="o", markersize=3, linewidth=1.5,
                          color=COLORS[n % len(COLORS)], label=label)
        axes.set_ylabel(camera, rotation=0, ha="right", va="center", fontsize=9)
        axes.grid(True, alpha=0.3)
        axes.set_ylim(bottom=0)
    axes_list[-1].set_xlabel("seconds from the segment's first frame")
    if classes:
        axes_list[0].legend(loc="upper right", fontsize=8, ncols=min(4, len(classes)))
    axes_list[0].set_title("Boxes drawn per frame, by class")
    return _save(figure, path)


def scores(detections: pd.DataFrame, threshold: float, path: Path) -> Path:
    """The score distribution per class, the drawing threshold marked."""
    classes = _classes(detections)
    figure = Figure(figsize=(9, 3.2), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    bins = [i / 40 for i in range(41)]
    for n, label in enumerate(classes):
        axes.hist(detections[detections["label"] == label]["score"], bins=bins, histtype="step", linewidth=1.8,
                  color=COLORS[n % len(COLORS)], label=label)
    axes.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    axes.set(xlim=(0, 1), xlabel="score", ylabel="boxes", title="Scores by class (every box in the table)")
    axes.legend(fontsize=8)
    axes.grid(True, alpha=0.3)
    return _save(figure, path)


def stages(ms_per_image: dict[str, float], path: Path) -> Path:
    """Milliseconds per image by stage, as horizontal bars."""
    items = sorted(ms_per_image.items(), key=lambda kv: kv[1])
    figure = Figure(figsize=(6.5, 0.6 + 0.32 * max(1, len(items))), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.barh([k for k, _ in items], [v for _, v in items], color="#1f77b4")
    for y, (_, value) in enumerate(items):
        axes.text(value, y, f" {value:.1f}", va="center", fontsize=8)
    axes.set(xlabel="ms per image", title="Time per stage")
    axes.tick_params(axis="y", labelsize=8)
    return _save(figure, path)
