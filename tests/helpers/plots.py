"""What a test asks of a matplotlib figure: that its texts stay inside it and off the other panels."""

from __future__ import annotations

from matplotlib.figure import Figure


def misplaced_texts(figure: Figure) -> list[str]:
    """Every tick label, axis label and title of `figure`'s panels that reaches outside the figure or
    into another panel, and every legend or note that reaches outside or into a panel."""
    renderer = figure.canvas.get_renderer()
    figure.draw(renderer)
    page = figure.bbox
    panels = [a.get_window_extent(renderer) for a in figure.axes]
    bad = []
    for index, axes in enumerate(figure.axes):
        (x0, x1), (y0, y1) = sorted(axes.get_xlim()), sorted(axes.get_ylim())
        texts = [*(t for t in axes.get_xticklabels() if x0 <= t.get_position()[0] <= x1),
                 *(t for t in axes.get_yticklabels() if y0 <= t.get_position()[1] <= y1),
                 axes.xaxis.label, axes.yaxis.label, axes.title]
        for text in (t for t in texts if t.get_visible() and t.get_text()):
            box = text.get_window_extent(renderer)
            if box.x0 < page.x0 - 1 or box.x1 > page.x1 + 1 or box.y0 < page.y0 - 1 or box.y1 > page.y1 + 1:
                bad.append(f"outside: {text.get_text()!r}")
            bad += [f"over panel {other}: {text.get_text()!r}" for other, panel in enumerate(panels)
                    if other != index and box.overlaps(panel)]
    for legend in figure.legends:
        box = legend.get_window_extent(renderer)
        bad += ["legend over a panel" for panel in panels if box.overlaps(panel)]
    for note in figure.texts:
        box = note.get_window_extent(renderer)
        bad += [f"note over a panel: {note.get_text()!r}" for panel in panels if box.overlaps(panel)]
    return bad
