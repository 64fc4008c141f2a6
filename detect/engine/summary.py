"""What a run says when it ends: pure functions from reports and outcomes to lines of text."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from detect.core.names import counted, printable
from detect.engine.outcomes import SegmentOutcome, SegmentReport, Status
from detect.model.coco_classes import describe_classes
from detect.model.facts import ModelFacts
from detect.model.runtimes import title

FAILURES_SHOWN = 5


def model_label(facts: ModelFacts) -> str:
    """The model in a few words: what it is, which classes it knows (briefly: "80 COCO classes"; the
    manifest and `detect model` list them), the start of its checksum, what ran it."""
    classes = describe_classes(None if facts.knows_classes is None else list(facts.knows_classes))
    sha = facts.sha256[:12]
    name = facts.runtime_name
    ran = f"; on {title(name)} {facts.runtime.get('version')}" if name else ""
    return f"model: {facts.description}; knows {classes}" + (f"; sha256 {sha}" if sha else "") + ran


def summary_line(report: SegmentReport, kind: str = "real", model: str | None = None) -> str:
    """`detect segment`'s last line; the model (see `model_label`) and stand-ins are named at its end."""
    name = printable(report.segment_context_name)
    if report.already_complete:
        line = f"{name}: already complete in {report.segment_dir} (nothing to do)"
    else:
        resumed = f", {report.images_resumed} resumed" if report.images_resumed else ""
        failed = f", {len(report.failures)} FAILED" if report.failures else ""
        line = (f"{name}: {report.images_processed} images{resumed}{failed}, "
                f"{_boxes(report)}, {report.images_per_second:.1f} images/s -> {report.segment_dir}")
    if model:
        line += f" ({model})"
    return line if kind == "real" else f"{line} [{kind} model]"


def _boxes(report: SegmentReport) -> str:
    """"3 boxes drawn (at or above the threshold); 14 kept in detections.parquet": the table also
    keeps the low scores evaluation needs."""
    if report.drawn is None or report.drawn == report.detections:
        return counted(report.detections, 'detection')
    return (f"{counted(report.drawn, 'box')} drawn (at or above the threshold); "
            f"{report.detections} kept in the table (low scores too, for evaluation)")


def failure_lines(report: SegmentReport) -> list[str]:
    """The first failed frames, and where the rest are."""
    lines = [f"  failed {f.key}: {f.stage}: {f.error}" for f in report.failures[:FAILURES_SHOWN]]
    if len(report.failures) > FAILURES_SHOWN:
        lines.append(f"  ... and {len(report.failures) - FAILURES_SHOWN} more in {report.segment_dir / 'manifest.json'}")
    return lines


def invalid_boxes_warning(report: SegmentReport) -> str | None:
    """One line when the model emitted rows that were dropped as invalid."""
    if not report.invalid_boxes:
        return None
    return (f"warning: {printable(report.segment_context_name)}: the model emitted {report.invalid_boxes} invalid boxes "
            f"(NaN or infinite values, zero area inside the image, or a class that is not a whole number); they were "
            f"dropped and are counted per image in {report.segment_dir / 'manifest.json'}")


def format_table(outcomes: Sequence[SegmentOutcome], seconds: float) -> list[str]:
    """`detect run`'s table: one row per input, then the totals."""
    names = [printable(o.segment_context_name) if o.segment_context_name else Path(o.path).name for o in outcomes]
    width = max([len(n) for n in names] + [7])
    lines = [f"{'segment':<{width}}  {'status':<18} {'images':>7} {'drawn':>10} {'img/s':>7}"]
    for o, name in zip(outcomes, names, strict=True):
        rate = f"{o.images / o.seconds:.1f}" if o.seconds > 0 and o.images else "-"
        drawn = "-" if o.drawn is None else o.drawn  # the boxes the frames and pages show, at the threshold
        lines.append(f"{name:<{width}}  {o.status:<18} {o.images:>7} {drawn:>10} {rate:>7}")
        if o.error and o.status != Status.DONE:
            lines.append(f"{'':<{width}}  {o.error}")
    images = sum(o.images for o in outcomes)
    counts = {s: sum(o.status == s for o in outcomes) for s in Status}
    segments = counted(len(outcomes), 'segment')
    lines.append(
        f"{segments}: {counts[Status.DONE]} done, {counts[Status.PARTIAL]} with failed frames, "
        f"{counts[Status.SKIPPED]} skipped, {counts[Status.FAILED]} failed; {counted(images, 'image')} "
        f"in {seconds:.1f} s" + (f" ({images / seconds:.1f} images/s)" if seconds > 0 and images else "")
    )
    return lines
