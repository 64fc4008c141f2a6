"""What an engine is to the runner (`detect.engine.runner.run_many`): it runs the segments that
need work and reports each one's outcome as it ends. `detect.engine.local_engine.LocalEngine` and
`detect.engine.ray.RayEngine` are the two."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from detect.engine.events import Reporter
from detect.engine.outcomes import SegmentOutcome
from detect.engine.spec import RunSpec
from detect.model.facts import ModelFacts
from detect.waymo.sources import SegmentSource

Record = Callable[[SegmentOutcome], None]


class Engine(Protocol):
    """Runs the segments that need work; calls `record` with each one's outcome as it ends, and
    returns the facts of the model it loaded."""

    name: str

    def run(self, todo: list[SegmentSource], spec: RunSpec, claims: dict[str, str], record: Record,
            reporter: Reporter) -> ModelFacts: ...
