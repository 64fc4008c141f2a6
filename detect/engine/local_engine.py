"""This machine's engine: `LocalEngine` (segments one after the other, each through the overlapped
local pipeline of `detect.engine.local`) and `detect segment` (`run_segment`: one input with it)."""

from __future__ import annotations

import time

from detect.core.errors import error_text
from detect.core.signals import raise_if_interrupted
from detect.engine.events import SILENT, Reporter
from detect.engine.loading import LoadedModel, load_model, loading_line
from detect.engine.local import process_segment
from detect.engine.outcomes import SegmentReport, failed_outcome, outcome_of
from detect.engine.protocol import Record
from detect.engine.runner import marked_for, refuse_segment
from detect.engine.spec import RunSpec
from detect.engine.summary import invalid_boxes_warning
from detect.model.facts import ModelFacts
from detect.waymo.readers import SegmentKeys
from detect.waymo.sources import SegmentSource


def run_segment(spec: RunSpec, reporter: Reporter = SILENT, model: LoadedModel | None = None,
                keys: SegmentKeys | None = None) -> tuple[SegmentReport, LoadedModel]:
    """`detect segment`: the one input of `spec` with the local engine; the report and the model.
    `keys`: the input's, when the caller read them (`refuse_segment` did)."""
    keys = refuse_segment(spec, keys)  # before the model loads
    if model is None:
        reporter.status(loading_line(spec.model))
        model = load_model(spec.model)
    for line in model.notices:
        reporter.message(line)
    report = process_segment(keys.source, spec.out, model.detector, marked_for(spec.settings, model.kind),
                             model_facts=model.facts, progress=reporter.progress("detect"), keys=keys)
    return report, model


class LocalEngine:
    """Segments one after the other on this machine, each through the overlapped local pipeline."""

    name = "local"

    def __init__(self, model: LoadedModel | None = None) -> None:
        self._model = model

    def run(self, todo: list[SegmentSource], spec: RunSpec, claims: dict[str, str], record: Record,
            reporter: Reporter) -> ModelFacts:
        model = self._model
        if model is None:  # loaded once, only when some segment needs work
            reporter.status(loading_line(spec.model))
            model = load_model(spec.model)
        for line in model.notices:
            reporter.message(line)
        for number, source in enumerate(todo, 1):
            raise_if_interrupted()  # a Ctrl-C a library swallowed (while the model loaded...) stops the run here
            started = time.perf_counter()
            try:
                report = process_segment(source, spec.out, model.detector, spec.settings, model_facts=model.facts,
                                         claims=claims, progress=reporter.progress(f"[{number}/{len(todo)}]"))
            except Exception as error:  # one broken segment never stops the others, whatever broke it
                message = error_text(error)
                record(failed_outcome(source.uri, message, time.perf_counter() - started))
                reporter.message(f"detect: segment failed: {message}")
                continue
            for note in (invalid_boxes_warning(report), *report.notes):
                if note:
                    reporter.message(note)
            record(outcome_of(source.uri, report))
        raise_if_interrupted()
        return model.facts
