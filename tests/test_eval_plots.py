"""`detect eval`'s plots read true: a PR curve ends at the largest recall reached, a type resting on
few labels is starred as in the tables, and the score histograms count on a log scale."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from helpers.plots import misplaced_texts
from matplotlib.figure import Figure

from detect.core.matching import SMALL_SAMPLE
from detect.evaluate.metrics import Evaluation, TypeMetrics
from detect.evaluate.pr_plots import pr_curves_figure, reached, thresholds_figure
from detect.evaluate.slice_plots import range_bands_figure
from detect.evaluate.thresholds import sweep
from detect.render.plot_layout import Margins, place_panels

RECALLS = [i / 100 for i in range(101)]


def metrics(name: str, labels: int, ap50: float) -> TypeMetrics:
    return TypeMetrics(name, labels, 10, ap50, ap50, ap50, None, {}, {}, 0.5, 0.5, 0.5, 1, 1)


def crafted() -> Evaluation:
    """VEHICLE: 40 labels, recall up to 0.6; CYCLIST: 3 labels, recall up to 0.33; 300 false
    alarms under 0.1 and a few hits above 0.5."""
    curves = {"VEHICLE": [0.9 if r <= 0.6 else 0.0 for r in RECALLS], "CYCLIST": [1.0 if r <= 0.33 else 0.0 for r in RECALLS]}
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.uniform(0.05, 0.1, 300), [0.6, 0.7, 0.8]])
    hits = np.concatenate([np.zeros(300, bool), np.ones(3, bool)])
    return Evaluation({"LEVEL_2": [metrics("VEHICLE", 40, 0.55), metrics("CYCLIST", 3, 0.33)]}, {},
                      {name: {"recall": RECALLS, "precision": p} for name, p in curves.items()}, [1, 4], 0.5, ["s"], 1, 0,
                      sweeps={"VEHICLE": sweep(scores, hits, 40), "CYCLIST": sweep(scores[-2:], hits[-2:], 3)})


def test_a_pr_curve_ends_at_the_largest_recall_reached_not_along_the_axis_to_one():
    assert reached(RECALLS[:4], [0.9, 0.8, 0.0, 0.0]) == ([0.0, 0.01], [0.9, 0.8])
    assert reached(RECALLS[:2], [0.0, 0.0]) == ([], [])
    axes = pr_curves_figure(crafted()).axes[0]
    curves = {line.get_label().split()[0]: line.get_xdata() for line in axes.get_lines() if len(line.get_xdata()) > 1}
    assert max(curves["VEHICLE"]) == 0.6 and max(curves["CYCLIST*"]) == 0.33


def test_a_type_with_fewer_than_ten_labels_is_starred_on_the_plots_as_in_the_tables():
    figure = pr_curves_figure(crafted())
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert "CYCLIST* AP50 0.330 (3 labels)" in legend and "VEHICLE AP50 0.550" in legend
    assert f"* fewer than {SMALL_SAMPLE} labels: too few for the AP to mean much" in [t.get_text() for t in figure.texts]
    rows = thresholds_figure(crafted()).axes
    assert [a.get_ylabel() for a in rows[::2]] == ["VEHICLE", "CYCLIST*\n(3 labels)"]


def test_the_score_histograms_count_on_a_log_scale_so_a_few_hits_show_beside_hundreds_of_false_alarms():
    vehicle_hist = thresholds_figure(crafted()).axes[1]
    assert vehicle_hist.get_yscale() == "log" and vehicle_hist.get_ylim()[0] < 1
    heights = sorted(patch.get_height() for patch in vehicle_hist.patches if patch.get_height() > 0)
    assert heights[0] == 1 and heights[-1] >= 100  # one hit in a bin and a bin of many false alarms, both drawn


def test_the_plots_place_their_panels_so_no_label_leaves_the_picture_or_covers_a_panel():
    """The panels are placed in fixed margins (not measured by a second drawing): a starred
    two-line name, log counts in the hundreds, the legend and the note still fit."""
    one_type = dataclasses.replace(crafted(), sweeps={"VEHICLE": crafted().sweeps["VEHICLE"]})
    bands = [SimpleNamespace(name=name, levels={"LEVEL_2": [metrics("VEHICLE", 12, 0.9), metrics("CYCLIST", 3, 0.5)]})
             for name in ("[0, 30)", "[30, 50)", "[50, inf)")]
    with_bands = dataclasses.replace(crafted(), slices={"range": bands})
    for figure in (pr_curves_figure(crafted()), thresholds_figure(crafted()), thresholds_figure(one_type),
                   range_bands_figure(with_bands)):
        assert misplaced_texts(figure) == []


def test_margins_that_leave_no_room_for_the_panels_are_refused():
    figure = Figure(figsize=(2, 2))
    figure.subplots(1, 2)
    with pytest.raises(ValueError, match=r"leave no room for 1x2 panels in 2.0x2.0 in"):
        place_panels(figure, Margins(left=0.8, right=0.8, top=0.2, bottom=0.2, between_columns=0.5), columns=2)
