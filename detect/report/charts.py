"""The report's plots, drawn with matplotlib's object API on the Agg canvas (no global state)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.ticker import FuncFormatter, MaxNLocator

from detect.core.atomic import atomic_path
from detect.render.plot_layout import Margins, place_panels

# matplotlib's default cycle: distinct on white, and a class keeps its color across the plots.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MAX_CLASSES = 8  # beyond this, the rarer classes share "other"


def _classes(drawn: pd.DataFrame) -> list[str]:
    return list(drawn["label"].value_counts().index[:MAX_CLASSES])


def _save(figure: Figure, path: Path) -> Path:
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png")
    return path


def timeline_figure(per_image: pd.DataFrame) -> Figure:
    """Drawn boxes per frame over time, one panel per camera: every processed image is a point (0
    when nothing was drawn on it), the total in gray and each class in its color; the legend sits
    above the panels, off the data. `per_image`: rows (camera, timestamp), a column per class."""
    cameras = list(dict.fromkeys(per_image.index.get_level_values("camera")))
    if len(cameras) == 0:
        raise ValueError("no processed images to plot")
    classes = list(per_image.sum().sort_values(ascending=False, kind="stable").index[:MAX_CLASSES])
    if len(per_image.columns) > MAX_CLASSES:
        per_image = per_image[classes].assign(other=per_image.drop(columns=classes).sum(axis=1))
        classes.append("other")
    figure = Figure(figsize=(9, 1.4 + 1.5 * len(cameras)), dpi=100)
    renderer = FigureCanvasAgg(figure).get_renderer()
    start = per_image.index.get_level_values("timestamp").min()
    axes_list = figure.subplots(len(cameras), 1, sharex=True, squeeze=False)[:, 0]
    for axes, camera in zip(axes_list, cameras, strict=True):
        rows = per_image.xs(camera, level="camera").sort_index()
        seconds = (rows.index - start) / 1e6
        axes.plot(seconds, rows.sum(axis=1).to_numpy(), color="black", linestyle="--", linewidth=1, marker="o", markersize=2.5,
                  label="all classes", zorder=1)
        for n, label in enumerate(classes):
            if rows[label].any():  # a class this camera never drew would be a flat line hiding the others
                axes.plot(seconds, rows[label].to_numpy(), marker="o", markersize=3, linewidth=1.5,
                          color=COLORS[n % len(COLORS)], label=label, zorder=2)
        axes.set_ylabel(camera, rotation=0, ha="right", va="center", fontsize=9)
        axes.grid(True, alpha=0.3)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=2))
        axes.set_ylim(0, max(1, int(rows.sum(axis=1).max())) * 1.08)
    axes_list[-1].set_xlabel("seconds from the segment's first frame")
    lines = {str(line.get_label()): line for axes in axes_list for line in axes.get_lines()}
    handles = {label: lines[label] for label in ["all classes", *classes] if label in lines}
    # The title heads the legend, over the panels: the top margin is the legend's measured height,
    # the left one the longest camera name's (the panels' names stand level, left of their ticks).
    legend = figure.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.995),
                           fontsize=8, ncols=min(5, len(handles)), frameon=False,
                           title="Boxes drawn per frame, by class", title_fontproperties={"size": 11})
    names = max(renderer.get_text_width_height_descent(c, FontProperties(size=9), ismath=False)[0] for c in cameras)
    place_panels(figure, Margins(left=names / figure.dpi + 0.55, right=0.2,
                                 top=legend.get_window_extent(renderer).height / figure.dpi + 0.12, bottom=0.55,
                                 between_rows=0.15), rows=len(cameras))
    return figure


def timeline(per_image: pd.DataFrame, path: Path) -> Path:
    """`timeline_figure` as a PNG at `path`."""
    return _save(timeline_figure(per_image), path)


def scores(detections: pd.DataFrame, threshold: float, path: Path) -> Path:
    """The score distribution per class, the drawing threshold marked; counts on a log scale (the
    table keeps every box down to the score floor: hundreds under 0.1 beside a few confident ones)."""
    classes = _classes(detections)
    figure = Figure(figsize=(9, 3.2), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    bins = [i / 40 for i in range(41)]
    for n, label in enumerate(classes):
        axes.hist(detections[detections["label"] == label]["score"], bins=bins, histtype="step", linewidth=1.8,
                  color=COLORS[n % len(COLORS)], label=label)
    axes.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    axes.set_yscale("log")
    axes.set_ylim(bottom=0.7)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes.set(xlim=(0, 1), xlabel="score", ylabel="boxes (log)", title="Scores by class (every box in the table)")
    axes.legend(fontsize=8)
    axes.grid(True, alpha=0.3)
    place_panels(figure, Margins(left=0.75, right=0.2, top=0.35, bottom=0.55))
    return _save(figure, path)


# What each timed stage of the manifest is, in a reader's words (an unknown stage keeps its name).
STEP_NAMES = {
    "decode": "reading images",
    "decode_wait": "waiting for images",
    "detect": "detector",
    "draw": "drawing boxes",
    "frame_write": "writing frames",
    "animation_prepare": "shrinking for GIF/MP4",
    "animation_append": "adding to GIF/MP4",
    "animation_close": "finishing GIF/MP4",
    "animation_rebuild": "rebuilding GIF/MP4",
    "table": "writing the tables",
    "track": "tracking",
}


def step_name(stage: str) -> str:
    """A stage's readable name: "animation_close" is "finishing GIF/MP4"."""
    return STEP_NAMES.get(stage, stage.replace("_", " "))


def stages(ms_per_image: dict[str, float], path: Path) -> Path:
    """`stages_figure` as a PNG at `path`."""
    return _save(stages_figure(ms_per_image), path)


def stages_figure(ms_per_image: dict[str, float]) -> Figure:
    """Milliseconds per image by step, as horizontal bars named in a reader's words."""
    items = sorted(((step_name(k), v) for k, v in ms_per_image.items()), key=lambda kv: kv[1])
    figure = Figure(figsize=(6.5, 0.6 + 0.32 * max(1, len(items))), dpi=100)
    canvas = FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.barh([k for k, _ in items], [v for _, v in items], color="#1f77b4")
    for y, (_, value) in enumerate(items):
        axes.text(value, y, f" {value:.1f}", va="center", fontsize=8)
    axes.set(xlabel="ms per image", title="Time per step")
    axes.tick_params(axis="y", labelsize=8)
    # left: the longest step name, measured (a stage the manifest names that we do not know keeps its own)
    renderer = canvas.get_renderer()
    longest = max((renderer.get_text_width_height_descent(k, FontProperties(size=8), ismath=False)[0]
                   for k, _ in items), default=0.0) / figure.dpi
    # right: the value written past the longest bar
    place_panels(figure, Margins(left=longest + 0.25, right=0.45, top=0.3, bottom=0.5))
    return figure
