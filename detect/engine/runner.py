"""Many segments, resumable by default, with an engine (`detect.engine.protocol`): this machine's
(`detect.engine.local_engine`) or Ray's. The refusals before a model loads are here too.

Every segment lands in `OUT/<segment dir>/` exactly as `detect segment` writes it; `OUT/run.json`
(one file per shard) records what happened to each input, so a rerun skips finished work without
reopening files. One broken segment never stops the others, and the run file is written even
when the run is interrupted.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from detect.core.errors import DetectError, OutputError, UsageError
from detect.core.names import segment_dir_name
from detect.core.signals import Terminated
from detect.engine.events import SILENT, Reporter
from detect.engine.lifecycle import finished_manifest, reopen_refusal
from detect.engine.loading import expected_facts, model_kind, watermark
from detect.engine.outcomes import SegmentOutcome, Status
from detect.engine.protocol import Engine
from detect.engine.spec import RunSpec, SegmentSettings
from detect.model.facts import ModelFacts
from detect.results import journal, layout
from detect.results.layout import RunLock
from detect.results.manifest import COMPLETE, COMPLETE_WITH_FAILURES, now_iso
from detect.results.run_record import RunRecord, read_run_record, run_file_name, write_run_record
from detect.waymo.readers import SegmentKeys, read_keys
from detect.waymo.sources import SegmentSource, resolve, resolve_one


@dataclasses.dataclass(frozen=True)
class RunResult:
    outcomes: tuple[SegmentOutcome, ...]  # in the order of the inputs
    seconds: float
    model: ModelFacts | None = None  # the model's facts, when some segment needed it

    @property
    def failed(self) -> bool:
        return any(o.is_failure for o in self.outcomes)


def marked_for(settings: SegmentSettings, kind: str) -> SegmentSettings:
    """Stand-in models (stub, benchmark) watermark every frame they touch: the settings say so."""
    return dataclasses.replace(settings, style=dataclasses.replace(settings.style, watermark=watermark(kind)))


def refuse_segment(spec: RunSpec, keys: SegmentKeys | None = None) -> SegmentKeys:
    """`detect segment`'s refusals that need no model, raised before it loads: its folder in OUT
    holds a run's outputs (without --resume or --overwrite), or outputs of other settings (the
    `detect redraw` command when only the drawing differs). The input's keys (read when not given)."""
    (path,) = spec.inputs
    keys = keys or read_keys(resolve_one(path))
    refusals = reopen_refusals(spec, [keys.segment_context_name])
    if refusals:
        raise refusals[0]
    return keys


def refuse_rerun(spec: RunSpec, sources: Sequence[SegmentSource]) -> None:
    """`detect run`'s refusal before the model loads: a segment the run file names was written with
    other settings (UsageError: what differs, and the `detect redraw` command when only the drawing
    does, or --overwrite). A usage error of the whole run: no segment is marked failed for it."""
    previous = previous_outcomes(Path(spec.out) / run_file_name(spec.shard))
    names = [name for s in sources if isinstance(name := (previous.get(s.uri) or {}).get("segment_context_name"), str)
             and name]
    refusals = [str(r) for r in reopen_refusals(spec, names) if isinstance(r, UsageError)]
    if len(refusals) > 1:
        raise UsageError(f"{refusals[0]} ({len(refusals) - 1} more segment(s) in {spec.out} too: "
                         f"`detect redraw {spec.out}` with the same flags redraws them all)")
    if refusals:
        raise UsageError(refusals[0])


def reopen_refusals(spec: RunSpec, names: Sequence[str]) -> list[DetectError]:
    """Why the folders of these segments in OUT cannot be reopened with `spec`'s settings, as far as
    the flags decide (`reopen_refusal`); a settings file that cannot be read is left to the segment."""
    settings = marked_for(spec.settings, model_kind(spec.model))
    model = expected_facts(spec.model)
    refusals = []
    for name in dict.fromkeys(names):
        try:
            refusal = reopen_refusal(layout.segment_dir(Path(spec.out), name), settings, settings.resume_key(model, name),
                                     known_keys_only=True)
        except OutputError:
            continue
        if refusal is not None:
            refusals.append(refusal)
    return refusals


def run_many(spec: RunSpec, engine: Engine, reporter: Reporter = SILENT,
             clock: Callable[[], float] = time.perf_counter) -> RunResult:
    """Every segment named by `spec.inputs` (this shard's share), with `engine`."""
    sources = plan_sources(spec.inputs, spec.shard)
    refuse_rerun(spec, sources)
    spec = dataclasses.replace(spec, settings=marked_for(spec.settings, model_kind(spec.model)))
    root = Path(spec.out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{root}: cannot create the output directory ({error.strerror or error})") from None
    run_file = root / run_file_name(spec.shard)
    lock = RunLock(root, run_file.name)  # a second run on this OUT (and shard) stops here, its records untouched
    try:
        return _run_locked(spec, engine, reporter, clock, sources, root, run_file)
    finally:
        lock.release()


def _run_locked(spec: RunSpec, engine: Engine, reporter: Reporter, clock: Callable[[], float],
                sources: list[SegmentSource], root: Path, run_file: Path) -> RunResult:
    previous = previous_outcomes(run_file)
    started = clock()
    outcomes: dict[str, SegmentOutcome] = {}
    claims: dict[str, str] = {}
    model = expected_facts(spec.model)
    for source in sources:
        before = None if spec.settings.mode == "overwrite" else carried_over(
            root, source, previous.get(source.uri), spec.retry_failed,
            expected=lambda name: spec.settings.resume_key(model, name))
        if before is not None:
            outcomes[source.uri] = before
            if before.segment_context_name:
                claims.setdefault(segment_dir_name(before.segment_context_name).casefold(), source.uri)

    def record(outcome: SegmentOutcome) -> None:
        outcomes[outcome.path] = outcome

    todo = [s for s in sources if s.uri not in outcomes]
    facts = None
    stopped_by = None
    try:
        if todo:
            facts = engine.run(todo, spec, claims, record, reporter)
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM (see detect.core.signals): recorded, then passed on
        stopped_by = "SIGTERM" if isinstance(stop, Terminated) else "SIGINT"
        raise
    finally:  # also when interrupted: what finished is recorded
        done = [outcomes[s.uri] for s in sources if s.uri in outcomes]
        write_run_file(run_file, done, previous, clock() - started, spec, stopped_by)
    return RunResult(tuple(outcomes[s.uri] for s in sources), clock() - started, facts)


def plan_sources(paths: Sequence[str], shard: tuple[int, int] | None) -> list[SegmentSource]:
    """Every segment file named by `paths`, deduplicated, sorted, then this shard's share."""
    seen: dict[str, SegmentSource] = {}
    for path in paths:
        for source in resolve(path):
            seen.setdefault(source.uri, source)
    sources = sorted(seen.values(), key=lambda s: s.uri)
    if shard is not None:
        index, count = shard
        sources = sources[index::count]
    return sources


def previous_outcomes(run_file: Path) -> dict[str, Mapping[str, object]]:
    """The entries of an earlier run file by input; an unreadable file counts as none (the
    segments' own manifests still say what is complete)."""
    record = read_run_record(run_file)
    return {} if record is None else record.by_input()


def carried_over(out: Path, source: SegmentSource, previous: Mapping[str, object] | None, retry_failed: bool,
                 expected: Callable[[str], dict[str, object]] | None = None) -> SegmentOutcome | None:
    """The outcome of an earlier run that stands, or None if the segment needs work now.

    Judged from the run file and the segment's own manifest, without opening the input.
    """
    if not previous:
        return None
    name = previous.get("segment_context_name")
    if previous.get("status") == Status.FAILED and not name:
        if retry_failed:
            return None
        return SegmentOutcome(source.uri, None, Status.FAILED, error=f"{previous.get('error')} (not retried; use --retry-failed)")
    if not isinstance(name, str) or not name:
        return None
    segment_dir = out / segment_dir_name(name)
    manifest = finished_manifest(segment_dir)
    if manifest is None:
        return None
    try:
        changes = [] if expected is None else changed_settings(segment_dir, expected(name))
    except OutputError as error:  # a corrupt settings file: refused, never skipped unchecked
        return SegmentOutcome(source.uri, name, Status.FAILED, error=str(error))
    if changes:  # never skipped as done: the run folder would mix settings (`refuse_rerun` refuses the run)
        return None
    if manifest.status == COMPLETE:
        return SegmentOutcome(source.uri, name, Status.SKIPPED, error="already complete")
    if manifest.status == COMPLETE_WITH_FAILURES and not retry_failed:
        failed = len(manifest.failures)
        return SegmentOutcome(source.uri, name, Status.PARTIAL, failed_images=failed,
                              error=f"{failed} failed frames (not retried; use --retry-failed)")
    return None


def changed_settings(segment_dir: Path, expected: dict[str, object]) -> list[str]:
    """How the settings recorded in a finished segment differ from this run's (none recorded: none).

    Only `expected`'s keys are compared: before an input is opened that is the settings' resume key,
    which includes the model, threshold and tiling; the rules that judge errors depend on the
    input's labels, known once it is opened (`SegmentJob.resume_key`)."""
    recorded = journal.load_settings(segment_dir)
    if recorded is None:
        return []
    return journal.differences({k: recorded.get(k) for k in expected}, expected)


def write_run_file(path: Path, outcomes: list[SegmentOutcome], previous: dict[str, Mapping[str, object]], seconds: float,
                   spec: RunSpec, stopped_by: str | None = None) -> None:
    merged = dict(previous)
    for outcome in outcomes:
        carried = outcome.images == 0 and outcome.path in previous and outcome.seconds == 0
        merged[outcome.path] = {**previous[outcome.path], "note": outcome.error} if carried else dataclasses.asdict(outcome)
    images = sum(o.images for o in outcomes)
    data = {
        "updated_at": now_iso(),
        "engine": spec.engine,
        "shard": f"{spec.shard[0]}/{spec.shard[1]}" if spec.shard else None,
        "stopped_by": stopped_by,  # SIGINT or SIGTERM when the run was stopped; `--resume` continues it
        "this_run": {
            "done": sum(o.status == Status.DONE for o in outcomes),
            "done_with_failures": sum(o.status == Status.PARTIAL for o in outcomes),
            "skipped": sum(o.status == Status.SKIPPED for o in outcomes),
            "failed": sum(o.status == Status.FAILED for o in outcomes),
            "images": images,
            "detections": sum(o.detections for o in outcomes),
            "seconds": round(seconds, 2),
            "images_per_second": round(images / seconds, 2) if seconds > 0 else None,
        },
        "segments": sorted(merged.values(), key=lambda e: str(e["path"])),
    }
    write_run_record(path, RunRecord.from_json(data, path.name))
