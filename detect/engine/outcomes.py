"""What happened to a segment: the report of one run of it, and its outcome in a many-segment run."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from pathlib import Path

from detect.core.records import FrameFailure, FrameKey, FrameResult, Labels
from detect.judge import ErrorRules
from detect.render.draw import DrawStyle
from detect.render.verdicts import boxes_drawn as image_boxes_drawn


class Status(enum.StrEnum):
    """A segment's outcome in `run.json` and the run table."""

    DONE = "done"
    PARTIAL = "done_with_failures"
    SKIPPED = "skipped"
    FAILED = "failed"


def boxes_drawn(results: Iterable[FrameResult], style: DrawStyle, rules: ErrorRules | None = None,
                labels: Callable[[FrameKey], Labels] | None = None) -> int:
    """The boxes the frames show, counted by the renderer's own rule (`detect.render.verdicts.boxes_drawn`:
    `--max-boxes`, `--classes`, a paired rider one box when errors are drawn with `rules` and each
    image's `labels`): what a run's manifest and a redraw's record as `counts.drawn`, and the pages and
    the summary show."""
    judged = rules if labels is not None else None
    return sum(image_boxes_drawn(r.detections, style, judged, None if labels is None else labels(r.key))
               for r in results)


@dataclasses.dataclass(frozen=True)
class SegmentReport:
    """One segment processed (or found complete): what the summary line and the run table show."""

    segment_context_name: str
    segment_dir: Path
    status: str  # the manifest's: complete / complete_with_failures
    images_planned: int
    images_processed: int
    images_resumed: int
    failures: tuple[FrameFailure, ...]
    detections: int
    seconds: float
    already_complete: bool = False
    invalid_boxes: int = 0  # model rows dropped as invalid (NaN, zero area, ...), over every image
    drawn: int | None = None  # boxes at or above the drawing threshold (the rest are in the table for eval)
    notes: tuple[str, ...] = ()  # lines for the user (e.g. frames drawn without track ids)

    @property
    def images_per_second(self) -> float:
        return self.images_processed / self.seconds if self.seconds > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class SegmentOutcome:
    """One input of a many-segment run, as `run.json` records it."""

    path: str
    segment_context_name: str | None
    status: Status
    images: int = 0
    detections: int = 0
    failed_images: int = 0
    seconds: float = 0.0
    error: str | None = None
    drawn: int | None = None  # boxes at or above the drawing threshold, as the frames and pages count them

    @property
    def is_failure(self) -> bool:
        return self.status in (Status.FAILED, Status.PARTIAL)


def outcome_of(uri: str, report: SegmentReport) -> SegmentOutcome:
    """The run's view of a segment report (one mapping for every engine)."""
    if report.already_complete:
        return SegmentOutcome(uri, report.segment_context_name, Status.SKIPPED, detections=report.detections,
                              error="already complete", drawn=report.drawn)
    status = Status.PARTIAL if report.failures else Status.DONE
    return SegmentOutcome(uri, report.segment_context_name, status, report.images_processed, report.detections,
                          len(report.failures), report.seconds, drawn=report.drawn)


def failed_outcome(uri: str, error: str, seconds: float = 0.0) -> SegmentOutcome:
    """A segment that could not run at all (no manifest; the journal keeps what was done)."""
    return SegmentOutcome(uri, None, Status.FAILED, seconds=seconds, error=error)
