"""`detect eval`'s pictures: precision-recall curves with the operating points, and the threshold
help (P, R and F1 against the drawing threshold; the scores of hits and false alarms). Drawn with
matplotlib's object API on the Agg canvas, legends outside the data, readable at 800 px. A curve
ends at the largest recall the detector reached (COCO's 101 recall points run on at precision 0
to recall 1, which reads as a measured line along the axis); a type with fewer than
`SMALL_SAMPLE` labels is starred, as in the tables; the score histograms count on a log scale,
so the few hits show beside hundreds of low-scoring false alarms."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from detect.core.matching import SMALL_SAMPLE
from detect.core.names import counted
from detect.evaluate.metrics import Evaluation
from detect.evaluate.thresholds import BINS, Sweep
from detect.render.plot_layout import Margins, place_panels

# The frames' colors are made for photos; on a white plot these read better (and apart, for
# color-blind readers: Okabe-Ito blue, vermillion, reddish purple, grey).
PLOT_COLORS = {"VEHICLE": "#0072B2", "PEDESTRIAN": "#D55E00", "CYCLIST": "#CC79A7", "SIGN": "#7f7f7f"}
HIT_COLOR, FALSE_ALARM_COLOR = "#56B4E9", "#D55E00"  # as the frames draw them


def plot_pr_curves(evaluation: Evaluation, path: Path) -> None:
    """`pr_curves_figure` as a PNG at `path`."""
    pr_curves_figure(evaluation).savefig(path, format="png")


def pr_curves_figure(evaluation: Evaluation) -> Figure:
    """Precision against recall per type (LEVEL_2, the protocol's IoU), the AP in the legend; a
    dot where the drawing threshold operates, a diamond at the F1-best threshold."""
    figure = Figure(figsize=(6.4, 5.4), dpi=125)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    protocol = evaluation.protocol
    rows = {row.name: row for row in evaluation.levels["LEVEL_2"]}
    small = False
    for name, curve in evaluation.pr_curves.items():
        color = PLOT_COLORS.get(name, "0.3")
        row = rows.get(name)
        ap = None if row is None else row.ap50 if protocol.name == "coco" else row.ap_waymo
        star = row is not None and 0 < row.labels < SMALL_SAMPLE
        small |= star
        recall, precision = reached(curve["recall"], curve["precision"])
        few = f" ({counted(row.labels, 'label')})" if star and row is not None else ""
        axes.plot(recall, precision, color=color, linewidth=2.2,
                  label=f"{name}{'*' if star else ''} {protocol.ap_name} {_fmt(ap)}{few}")
        if row is not None and row.precision is not None and row.recall is not None:
            axes.plot([row.recall], [row.precision], "o", color=color, markersize=9, markeredgecolor="black")
        best = evaluation.sweeps[name].best if name in evaluation.sweeps else None
        if best is not None:
            axes.plot([best.recall], [best.precision], "D", color=color, markersize=8, markeredgecolor="black")
    axes.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision")
    axes.set_title(f"Precision-recall, {protocol.describe()} (LEVEL_2)", fontsize=10)
    axes.grid(True, alpha=0.3)
    if evaluation.pr_curves:
        axes.plot([], [], "o", color="white", markeredgecolor="black", label=f"threshold {evaluation.threshold:g}")
        axes.plot([], [], "D", color="white", markeredgecolor="black", label="F1-best threshold")
        figure.legend(loc="lower center", ncol=2, fontsize=9, frameon=False,
                      bbox_to_anchor=(0.5, 0.035 if small else 0.0))
        if small:
            figure.text(0.5, 0.008, f"* fewer than {SMALL_SAMPLE} labels: too few for the AP to mean much",
                        ha="center", va="bottom", fontsize=8)
        # under the panel: its tick labels and xlabel, then the legend's three rows (and the note)
        place_panels(figure, Margins(left=0.7, right=0.2, top=0.35, bottom=1.55 if small else 1.4))
    else:
        axes.text(0.5, 0.5, "no labels of the evaluated types", ha="center", va="center")
        place_panels(figure, Margins(left=0.7, right=0.2, top=0.35, bottom=0.6))
    return figure


def plot_thresholds(evaluation: Evaluation, path: Path) -> None:
    """`thresholds_figure` as a PNG at `path`."""
    thresholds_figure(evaluation).savefig(path, format="png")


def thresholds_figure(evaluation: Evaluation) -> Figure:
    """One row per type with labels and detections: P, R and F1 against the threshold (the current
    one and the F1-best one marked), and the score histograms of hits and false alarms. A type the
    model never detected (its panels would be empty) is named under the plot instead."""
    sweeps = {name: s for name, s in evaluation.sweeps.items() if s.labels and _detected(s)}
    undetected = [name for name, s in evaluation.sweeps.items() if s.labels and not _detected(s)]
    figure = Figure(figsize=(8, 0.6 + 2.6 * max(1, len(sweeps))), dpi=110)
    FigureCanvasAgg(figure)
    if not sweeps:
        axes = figure.add_subplot()
        axes.axis("off")
        axes.text(0.5, 0.5, "no labels of the evaluated types", ha="center", va="center")
        return figure
    grid = figure.subplots(len(sweeps), 2, squeeze=False)
    centers = [(a + b) / 2 for a, b in zip(BINS[:-1], BINS[1:], strict=True)]
    for (name, found), (curve_axes, hist_axes) in zip(sweeps.items(), grid, strict=True):
        for values, label, style in ((found.precision, "precision", "-"), (found.recall, "recall", "--"),
                                     (found.f1, "F1", "-")):
            points = [(t, v) for t, v in zip(found.thresholds, values, strict=True) if v is not None]
            if points:
                curve_axes.plot([p[0] for p in points], [p[1] for p in points], style, label=label,
                                linewidth=2.4 if label == "F1" else 1.6,
                                color={"precision": "#0072B2", "recall": "#E69F00", "F1": "black"}[label])
        curve_axes.axvline(evaluation.threshold, color="0.4", linestyle=":", linewidth=1.5)
        if found.best is not None:
            curve_axes.plot([found.best.score], [found.best.f1], "D", color="black", markersize=7)
            curve_axes.annotate(f"best {found.best.suggested}", (found.best.score, found.best.f1), fontsize=8,
                                xytext=(4, 6), textcoords="offset points")
        star = 0 < found.labels < SMALL_SAMPLE
        curve_axes.set(xlim=(0, 1), ylim=(0, 1.05), xlabel="threshold",
                       ylabel=f"{name}*\n({counted(found.labels, 'label')})" if star else name)
        curve_axes.grid(True, alpha=0.3)
        width = (BINS[1] - BINS[0]) * 0.42
        hist_axes.bar([c - width / 2 for c in centers], found.hit_histogram, width=width, color=HIT_COLOR, label="hits")
        hist_axes.bar([c + width / 2 for c in centers], found.false_alarm_histogram, width=width,
                      color=FALSE_ALARM_COLOR, label="false alarms")
        hist_axes.axvline(evaluation.threshold, color="0.4", linestyle=":", linewidth=1.5)
        hist_axes.set_yscale("log")  # hundreds of false alarms under 0.1 beside a few hits higher up
        most = max([*found.hit_histogram, *found.false_alarm_histogram, 1])
        hist_axes.set(xlim=(0, 1), ylim=(0.7, most * 1.6), xlabel="score", ylabel="detections (log)")
        hist_axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    grid[0][0].set_title(f"P, R, F1 vs threshold (dotted: now {evaluation.threshold:g})", fontsize=9)
    grid[0][1].set_title("scores of hits and false alarms (log counts)", fontsize=9)
    handles = grid[0][0].get_legend_handles_labels()[0] + grid[0][1].get_legend_handles_labels()[0]
    figure.legend(handles=handles, loc="lower center", ncol=5, fontsize=8, frameon=False)
    notes = [f"not detected at any score: {', '.join(undetected)}"] if undetected else []
    if any(0 < s.labels < SMALL_SAMPLE for s in sweeps.values()):
        notes.append(f"* fewer than {SMALL_SAMPLE} labels: too few for the numbers to mean much")
    if notes:
        figure.text(0.5, 0.30 / figure.get_figheight(), "; ".join(notes), ha="center", fontsize=8)
    # left: a type's name (two lines when starred) and the tick labels; between the columns and
    # the rows: the next panel's tick labels and axis label; under the last row: its labels, the
    # legend and the notes
    place_panels(figure, Margins(left=0.86, right=0.15, top=0.3, bottom=1.05 if notes else 0.85,
                                 between_columns=0.95, between_rows=0.62), rows=len(sweeps), columns=2)
    return figure


def reached(recall: list[float], precision: list[float]) -> tuple[list[float], list[float]]:
    """A COCO precision curve up to the largest recall reached: the points after the last one with
    any precision are COCO's padding (recall the detector never reached, at precision 0)."""
    last = max((i for i, p in enumerate(precision) if p > 0), default=-1)
    return list(recall[: last + 1]), list(precision[: last + 1])


def _detected(sweep: Sweep) -> bool:
    """Whether a type has any detection to plot (a hit or a false alarm at some score)."""
    return any(sweep.hit_histogram) or any(sweep.false_alarm_histogram)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
