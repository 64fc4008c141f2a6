"""`detect eval`'s picture of the range slices: AP50 and recall at the drawing threshold per type in
each range band (LEVEL_2), each point marked with the labels it rests on. Matplotlib's object API on
the Agg canvas, as the other plots."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from detect.evaluate.metrics import Evaluation
from detect.evaluate.pr_plots import PLOT_COLORS
from detect.render.plot_layout import Margins, place_panels


def plot_range_bands(evaluation: Evaluation, path: Path) -> None:
    """`range_bands_figure` as a PNG at `path`."""
    range_bands_figure(evaluation).savefig(path, format="png")


def range_bands_figure(evaluation: Evaluation) -> Figure:
    """Two panels, AP50 and recall, against the range bands; one line per type with labels."""
    bands = evaluation.slices.get("range")
    figure = Figure(figsize=(7.2, 3.4), dpi=110)
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, 2, sharey=True)
    if not isinstance(bands, list):
        figure.text(0.5, 0.5, "range: not available", ha="center", va="center")
        return figure
    names = [piece.name for piece in bands]
    types = [r.name for r in bands[0].levels["LEVEL_2"] if r.name != "ALL"]
    for axes, field, title in ((panels[0], "ap50", "AP50"), (panels[1], "recall", "recall at the threshold")):
        for name in types:
            rows = [next(r for r in piece.levels["LEVEL_2"] if r.name == name) for piece in bands]
            if not any(r.labels for r in rows):
                continue
            points = [(x, getattr(r, field), r.labels) for x, r in enumerate(rows) if getattr(r, field) is not None]
            if not points:
                continue
            axes.plot([p[0] for p in points], [p[1] for p in points], "o-", color=PLOT_COLORS.get(name, "0.3"),
                      linewidth=2, label=name)
            for x, y, labels in points:
                axes.annotate(str(labels), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7, color="0.3")
        axes.set(xticks=range(len(names)), xticklabels=[f"{n} m" for n in names], ylim=(0, 1.05), title=title)
        axes.grid(True, alpha=0.3)
    handles, labels = panels[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    figure.suptitle("By range from the car (LEVEL_2); beside each point, its labels", fontsize=9)
    # over the panels: the title and theirs; under them: the bands' names (each centred under its
    # point: half of one reaches past a panel's side) and the legend
    place_panels(figure, Margins(left=0.5, right=0.5, top=0.62, bottom=0.62, between_columns=0.9), columns=2)
    return figure
