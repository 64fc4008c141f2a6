"""The report's plot of track lifespans: per camera, one line per track from its first to its last
box, a dot on every frame it kept a box (a gap in the dots is a frame the tracker lost it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from detect.core.atomic import atomic_path
from detect.report.charts import COLORS, MAX_CLASSES

PANEL_INCHES = (1.2, 3.2)  # a camera's panel: at least, at most (the tracks share it)


def lifespans_figure(tracks: pd.DataFrame, start: int) -> Figure:
    """`tracks`: rows (camera, timestamp, label, track_id), one per tracked box; `start`: the segment's
    first timestamp (microseconds), where the x axis begins. One panel per camera, in the rows' order."""
    cameras = list(dict.fromkeys(tracks["camera"]))
    if not cameras:
        raise ValueError("no tracked boxes to plot")
    labels = list(tracks["label"].value_counts().index[:MAX_CLASSES])
    color = {label: COLORS[n % len(COLORS)] for n, label in enumerate(labels)}
    spans = tracks.groupby(["camera", "track_id"]).agg(first=("timestamp", "min"), last=("timestamp", "max"),
                                                      label=("label", lambda s: s.mode().iloc[0]))
    heights = [float(np.clip(0.35 + 0.03 * len(spans.loc[c]), *PANEL_INCHES)) for c in cameras]
    figure = Figure(figsize=(9, 1.2 + sum(heights)), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes_list = figure.subplots(len(cameras), 1, sharex=True, squeeze=False, height_ratios=heights)[:, 0]
    for axes, camera in zip(axes_list, cameras, strict=True):
        mine = spans.loc[camera].sort_values(["first", "last"], kind="stable")
        row = {int(t): n for n, t in enumerate(mine.index)}
        for n, (first, last, label) in enumerate(zip(mine["first"], mine["last"], mine["label"], strict=True)):
            axes.plot([(first - start) / 1e6, (last - start) / 1e6], [n, n], color=color.get(label, "#7f7f7f"),
                      linewidth=1.2, alpha=0.6, solid_capstyle="butt")
        boxes = tracks[tracks["camera"] == camera]
        axes.scatter((boxes["timestamp"] - start) / 1e6, [row[int(t)] for t in boxes["track_id"]], s=4, linewidths=0,
                     c=[color.get(label, "#7f7f7f") for label in boxes["label"]])
        plural = "" if len(mine) == 1 else "s"
        axes.set_ylabel(f"{camera}\n{len(mine)} track{plural}", rotation=0, ha="right", va="center", fontsize=9)
        axes.set_ylim(len(mine) - 0.5, -0.5)  # the first track on top
        axes.set_yticks([])
        axes.grid(True, axis="x", alpha=0.3)
    axes_list[-1].set_xlabel("seconds from the segment's first frame")
    handles = [Line2D([], [], color=color[label], marker="o", markersize=4, label=label) for label in labels]
    if len(set(tracks["label"])) > len(labels):
        handles.append(Line2D([], [], color="#7f7f7f", marker="o", markersize=4, label="other"))
    figure.legend(handles=handles, loc="outside upper center", fontsize=8, ncols=min(6, len(handles)), frameon=False,
                  title="Track lifespans: a line from first to last box, a dot per frame with a box",
                  title_fontproperties={"size": 11})
    return figure


def lifespans(tracks: pd.DataFrame, start: int, path: Path) -> Path:
    """`lifespans_figure` as a PNG at `path`, written atomically."""
    figure = lifespans_figure(tracks, start)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png")
    return path
