"""The lines `detect compare` prints: the two sides, what differs, AP per type under both protocols
and the tracking scores, each change with its interval and verdict, and box-for-box agreement."""

from __future__ import annotations

from collections.abc import Sequence

from detect.compare.comparison import Change, Comparison, SideFacts, TrackingComparison
from detect.core.names import counted


def summary_lines(comparison: Comparison) -> list[str]:
    lines = [_side_line("A", comparison.names[0], comparison.a), _side_line("B", comparison.names[1], comparison.b),
             f"{counted(comparison.images, 'common image')} ({counted(comparison.frames, 'frame')}); "
             f"differs: {', '.join(comparison.differs) or 'nothing recorded'}"]
    if comparison.labels:
        lines.extend(_ap_lines(comparison))
        lines.extend(tracking_lines(comparison.tracking))
    else:
        lines.append("no labels: agreement only")
    for name, agree in comparison.agreement.items():
        if not (agree.pairs or agree.only_a or agree.only_b):
            continue  # neither drew a box of this type
        corr = agree.score_correlation
        lines.append(f"{name}: {counted(agree.pairs, 'box')} in both, {agree.only_a} only in A, {agree.only_b} only in B"
                     + ("" if corr is None else f"; score correlation {corr:.2f}"))
    return lines


def bootstrap_line(comparison: Comparison) -> str:
    """"intervals: paired bootstrap over 1 block of consecutive frames (2 s or more); a verdict needs 10"."""
    bootstrap = comparison.bootstrap
    return (f"intervals: paired bootstrap over {counted(bootstrap.blocks, 'block')} of consecutive frames "
            f"({bootstrap.block_seconds:g} s or more); a verdict needs {bootstrap.min_blocks}")


def _ap_lines(comparison: Comparison) -> list[str]:
    lines = ["AP50: COCO's protocol (IoU 0.5); Waymo's is AP70 for VEHICLE, AP50 for the others",
             bootstrap_line(comparison),
             f"{'type':<11}{'labels':>6}  {'AP':<4}{'A':>11}{'B':>11}{'B - A':>8}  {'95% interval':<17}verdict"]
    for t in comparison.types:
        for n, (metric, _, change) in enumerate(t.ap_rows()):
            first = f"{t.name:<11}{t.labels:>6}" if n == 0 else " " * 17
            lines.append(f"{first}  {metric:<4}{_ap(change.a, t.outputs_a):>11}{_ap(change.b, t.outputs_b):>11}"
                         f"{_fmt(change.difference, '+'):>8}  {interval_text(change):<17}{change.verdict}")
    return lines


def tracking_lines(rows: Sequence[TrackingComparison]) -> list[str]:
    """The terminal table: per type and metric, A, B, B - A, the interval and the verdict."""
    if not rows:
        return []
    lines = ["tracking (track ids against the labels' object ids; the same resamples):",
             f"{'type':<11}{'metric':>7}{'A':>8}{'B':>8}{'B - A':>8}  {'95% interval':<18}verdict"]
    for row in rows:
        change = row.change
        lines.append(f"{row.name:<11}{row.metric:>7}{_fmt(change.a):>8}{_fmt(change.b):>8}"
                     f"{_fmt(change.difference, '+'):>8}  {interval_text(change):<18}{change.verdict}")
    return lines


def interval_text(change: Change) -> str:
    """"[-0.500, -0.300]", or "-" without an interval."""
    return "-" if change.low is None or change.high is None else f"[{change.low:+.3f}, {change.high:+.3f}]"


def _fmt(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.3f}"


def _ap(value: float | None, outputs: bool) -> str:
    return "not output" if not outputs else _fmt(value)


def _side_line(label: str, name: str, facts: SideFacts) -> str:
    """"A: tiles 512; CenterNet MobileNetV3 (results/tiled)": the side's name, its model, its folder."""
    model = "" if facts.model is None or name.startswith(facts.model) else f"; {facts.model}"
    return f"{label}: {name}{model} ({facts.results})"
