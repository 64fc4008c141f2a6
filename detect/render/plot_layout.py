"""Fixed margins for the plots (`detect eval`'s and the report's), in inches: where the labels, titles and legends go is
known when a figure is made, so the panels are placed once instead of by matplotlib's
`tight_layout`, which draws the whole figure an extra time to measure its texts (about half of
each plot's cost: 0.65 -> 0.35 CPU-s for the threshold plot of three types)."""

from __future__ import annotations

import dataclasses

from matplotlib.figure import Figure


@dataclasses.dataclass(frozen=True)
class Margins:
    """Inches around and between a figure's grid of panels: `left` holds the first column's tick
    labels and axis label, `bottom` the last row's and whatever sits under the panels (a legend,
    notes), `between_columns` / `between_rows` the labels of the panel to the right / below."""

    left: float
    right: float
    top: float
    bottom: float
    between_columns: float = 0.0
    between_rows: float = 0.0


def place_panels(figure: Figure, margins: Margins, rows: int = 1, columns: int = 1) -> None:
    """Place `figure`'s grid of `rows` x `columns` panels inside `margins` (matplotlib's
    `subplots_adjust`, which takes fractions of the figure and gaps as fractions of a panel)."""
    width, height = figure.get_size_inches()
    panel_width = (width - margins.left - margins.right - (columns - 1) * margins.between_columns) / columns
    panel_height = (height - margins.top - margins.bottom - (rows - 1) * margins.between_rows) / rows
    if panel_width <= 0 or panel_height <= 0:
        raise ValueError(f"margins {margins} leave no room for {rows}x{columns} panels in {width}x{height} in")
    figure.subplots_adjust(left=margins.left / width, right=1 - margins.right / width,
                           bottom=margins.bottom / height, top=1 - margins.top / height,
                           wspace=margins.between_columns / panel_width, hspace=margins.between_rows / panel_height)
