"""One segment's life, the same for every engine: open -> record each frame -> finish.

`SegmentLifecycle.open` plans the images (duplicates become failures), claims and locks the
segment's directory, refuses, clears or reopens it (`--resume` checks the earlier settings and
reuses the journal), and says which images are still to do. `record` appends each finished frame
to the journal (so a killed run resumes exactly) or keeps its failure. `finish` writes the
detections table, rebuilds the animations from the frames when asked, and writes the manifest.
The local and the Ray engine both call these, so resume, failures, journal and manifest follow
one set of rules and both write the same files.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from detect.core.errors import DetectError, InputError, OutputError, UsageError
from detect.core.names import printable, segment_dir_name
from detect.core.records import FrameFailure, FrameKey, FrameResult
from detect.engine.outcomes import SegmentReport, boxes_drawn
from detect.engine.spec import ResumeModel, SegmentJob, SegmentSettings, SettingsRecord
from detect.engine.stages import StageTimings, count_invalid, plan_frames, sorted_failures
from detect.model.facts import ModelFacts
from detect.results import journal, layout
from detect.results.frames import frame_path
from detect.results.ground_truth import GROUND_TRUTH_FILE, write_ground_truth
from detect.results.layout import SegmentLock
from detect.results.manifest import (
    COMPLETE,
    COMPLETE_WITH_FAILURES,
    MANIFEST_FILE,
    failure_json,
    invalid_boxes,
    now_iso,
    versions,
)
from detect.results.results_folder import Manifest, read_manifest, write_manifest
from detect.results.table import DETECTIONS_FILE, label_counts, write_table
from detect.results.track_ids import live_tracking_notes, track_table, tracking_record
from detect.track.live import LiveTracks
from detect.waymo.camera_labels import SegmentLabels
from detect.waymo.context.read import read_context
from detect.waymo.context.segment import SegmentContext
from detect.waymo.readers import SegmentKeys
from detect.waymo.source_check import take_fingerprint
from detect.waymo.sources import recorded_path

Clock = Callable[[], float]
# (segment_dir, width=, mp4=, gif=, segment_context_name=) -> written paths; the Ray engine runs it remotely.
AnimationRebuilder = Callable[..., Any]
TIMINGS_NOTE = ("detect and *_wait/append are main-thread wall time; draw, frame_write, animation_prepare are "
                "worker CPU time")


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedDir:
    """A segment directory made ready for writing, locked by this process until `lock.release()`."""

    path: Path
    lock: SegmentLock
    resume_key: dict[str, object]
    done: dict[FrameKey, FrameResult]  # frames finished by an earlier run (resume)
    intact: int  # bytes of the journal that hold whole lines


def claim_directory(claims: dict[str, str] | None, segment: str, uri: str) -> None:
    """Refuse a second input whose segment would write the directory another input has in this run."""
    if claims is None:
        return
    name = segment_dir_name(segment)
    owner = claims.setdefault(name.casefold(), uri)  # `Abc` and `abc` share a folder on case-blind disks
    if owner != uri:
        raise InputError(f"{uri}: segment {printable(segment)} also comes from {owner} in this run; "
                         f"both would write {name}/: run them one at a time")


def prepare_segment_dir(out_root: Path, segment: str, settings: SegmentSettings, resume_key: dict[str, object]) -> PreparedDir:
    """Lock, then refuse, clear or reopen the segment's output directory; frames already done on resume."""
    try:
        Path(out_root).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{out_root}: cannot create the output directory ({err.strerror or err})") from None
    segment_dir = layout.segment_dir(out_root, segment)
    lock = SegmentLock(segment_dir)
    try:
        done, intact = _reopen(segment_dir, settings, resume_key, segment)
    except BaseException:
        lock.release()
        raise
    return PreparedDir(segment_dir, lock, resume_key, done, intact)


def _reopen(segment_dir: Path, settings: SegmentSettings, resume_key: dict[str, object],
            segment: str) -> tuple[dict[FrameKey, FrameResult], int]:
    refusal = reopen_refusal(segment_dir, settings, resume_key)
    if refusal is not None:
        raise refusal
    if settings.mode == "overwrite" and layout.has_content(segment_dir):
        layout.clear_outputs(segment_dir)
    if settings.mode != "resume":
        journal.save_settings(segment_dir, resume_key)
        return {}, 0
    journal.save_settings(segment_dir, resume_key)
    for stale in list(layout.temp_files(segment_dir)):
        stale.unlink()  # half-written files of a run that was killed
    if settings.animations and not settings.write_frames:
        return {}, 0  # animations are rebuilt from frames on disk; without frames, start over
    done, intact = journal.load(segment_dir, segment)
    if settings.write_frames:
        done = {k: v for k, v in done.items()
                if frame_path(segment_dir, k.camera_name, k.frame_timestamp_micros, settings.frame_format).exists()}
    return done, intact


def reopen_refusal(segment_dir: Path, settings: SegmentSettings, resume_key: dict[str, object],
                   known_keys_only: bool = False) -> DetectError | None:
    """Why the segment's folder cannot be opened for this run, or None: it holds outputs and the run
    asks neither --resume nor --overwrite, detect did not write them, or they were written with
    other settings (`resume_refusal`, a UsageError, with or without --resume). `known_keys_only`:
    compare only `resume_key`'s entries (before the input is opened, the ones the flags decide:
    `SegmentSettings.resume_key`). An unreadable settings file raises OutputError."""
    if settings.mode == "overwrite" or not layout.has_content(segment_dir):
        return None
    if not layout.is_marked(segment_dir):
        if settings.mode == "new":
            return OutputError(_EXISTS.format(segment_dir))
        return OutputError(f"{segment_dir} exists but was not written by detect; refusing to resume into it: "
                           f"move it away or choose another --out")
    previous = journal.load_settings(segment_dir)
    if previous is not None and known_keys_only:  # an unfinished redraw (its mark) is refused either way
        previous = {k: previous.get(k) for k in resume_key} | {k: v for k, v in previous.items() if k == "redraw"}
    if previous is not None and previous != resume_key:
        return UsageError(resume_refusal(segment_dir, previous, resume_key))
    return OutputError(_EXISTS.format(segment_dir)) if settings.mode == "new" else None


_EXISTS = "{} already exists; pass --resume to continue it or --overwrite to replace it"


# Resume-key entries `detect redraw` changes without the model, and its flag for each.
REDRAWABLE = {"draw_threshold": "--threshold", "draw_unscored": "--draw-unscored", "draw": "--draw", "errors": None}


def resume_refusal(segment_dir: Path, previous: dict[str, object], wanted: dict[str, object]) -> str:
    """Why a segment cannot be resumed with these settings, and what to do: `detect redraw` when
    only the drawing differs (or a redraw was left unfinished), else --overwrite."""
    changes = "; ".join(journal.differences({k: v for k, v in previous.items() if k != "redraw"}, wanted))
    if previous.get("redraw") is not None:
        return (f"{segment_dir}: a redraw of it did not finish; `detect redraw {segment_dir}` finishes it, "
                f"or use --overwrite to run the model again")
    changed = [k for k in set(previous) | set(wanted) if previous.get(k) != wanted.get(k)]
    if not all(k in REDRAWABLE for k in changed):
        return f"{segment_dir} was written with other settings ({changes}); use --overwrite to start again"
    flags = " ".join(f"{REDRAWABLE[k]} {wanted[k]}" for k in sorted(changed) if REDRAWABLE[k] is not None)
    return (f"{segment_dir} was drawn with other settings ({changes}); `detect redraw {segment_dir} {flags}` "
            f"redraws it without the model; use --overwrite to run the model again")


def finished_manifest(segment_dir: Path) -> Manifest | None:
    """The manifest a finished run wrote, or None: none yet, or one that cannot be read (the segment
    then counts as not finished, and its frames are checked against the journal)."""
    if not (segment_dir / MANIFEST_FILE).exists():
        return None
    try:
        return read_manifest(segment_dir)
    except InputError:
        return None


class SegmentLifecycle:
    """One segment in flight. Owned by one thread (the engine's driver); `record` in frame order
    for the journal to mirror the outputs, `finish` or `close` exactly once."""

    def __init__(self, keys: SegmentKeys, job: SegmentJob, model_facts: ModelFacts,
                 prepared: PreparedDir, planned: list[FrameKey], duplicates: list[FrameFailure],
                 clock: Clock, started: float, labels: SegmentLabels | None = None,
                 context: SegmentContext | None = None) -> None:
        self.keys = keys
        self.labels = labels
        self.context = context  # the boxes' ranges and the images' conditions in the tables
        self.job = job
        self.settings = job.settings
        self.model_facts = model_facts
        self.prepared = prepared
        self.planned = planned
        wanted = set(planned)
        self.done = {k: v for k, v in prepared.done.items() if k in wanted}
        self.results: dict[FrameKey, FrameResult] = dict(self.done)
        self.failures: list[FrameFailure] = list(duplicates)
        self.timings = StageTimings()
        self.clock = clock
        self.started = started
        self.started_at = now_iso()
        self._journal: journal.Journal | None = None
        self._track_ids: np.ndarray | None = None  # the track ids `finish` wrote into the table
        self.live: LiveTracks | None = None  # ids given while the frames are drawn (`track_live`)
        self._notes: list[str] = []
        # Taken when the segment opens (the file the run reads), so `detect redraw` can tell a changed one.
        self._source_fingerprint = take_fingerprint(keys.source.uri)

    @classmethod
    def open(cls, keys: SegmentKeys, out_root: Path, job: SegmentJob, model_facts: ModelFacts, *,
             claims: dict[str, str] | None = None, clock: Clock = time.perf_counter,
             labels: SegmentLabels | None = None,
             context: SegmentContext | None = None) -> SegmentLifecycle | SegmentReport:
        """Ready to record frames, or the report of a segment an earlier run already completed.

        `labels` (Waymo's, when the input has them) are drawn with `--gt` and always written to
        `ground_truth.parquet` at the end, so the results alone are enough to evaluate; `context`
        (the boxes' ranges and the images' conditions) is read from the source unless given.
        """
        started = clock()
        settings = job.settings
        if settings.needs_labels and labels is None:
            raise InputError(f"{keys.source.uri}: --gt asks for labels, but none were found (no camera_box file "
                             f"beside a v2 file, no camera_labels in a v1 file); name them with --gt PATH")
        segment = keys.segment_context_name
        if context is None:  # (the Ray engine reads it where it reads the keys)
            context = read_context(keys)  # a component that is not Waymo's is refused before anything is written
        planned, duplicates = plan_frames(keys, settings.frame_filter)
        claim_directory(claims, segment, keys.source.uri)
        prepared = prepare_segment_dir(out_root, segment, settings, job.resume_key(ResumeModel.of(model_facts), segment))
        try:
            lifecycle = cls(keys, job, model_facts, prepared, planned, duplicates, clock, started, labels, context)
            finished = finished_manifest(prepared.path) if settings.mode == "resume" else None
            if finished is not None and finished.status == COMPLETE and len(lifecycle.done) == len(planned):
                lifecycle.close()
                counts = finished.counts
                return SegmentReport(segment, prepared.path, COMPLETE, len(planned), 0, len(lifecycle.done), (),
                                     counts.detections or 0, clock() - started, already_complete=True,
                                     drawn=counts.drawn)
            if lifecycle.pending:
                lifecycle._journal = journal.Journal(prepared.path, prepared.intact)
        except BaseException:
            prepared.lock.release()
            raise
        return lifecycle

    @property
    def name(self) -> str:
        return self.keys.segment_context_name

    @property
    def segment_dir(self) -> Path:
        return self.prepared.path

    @property
    def pending(self) -> list[FrameKey]:
        """Planned images an earlier run did not finish, in order."""
        return [k for k in self.planned if k not in self.done]

    @property
    def processed(self) -> int:
        return len(self.results) - len(self.done)

    def track_live(self) -> LiveTracks | None:
        """Start tracking as images arrive, for an engine that draws them in order (None: nothing to
        track: --no-track, or one timestamp); images an earlier run finished go first."""
        params = self.settings.tracker
        if params is None or len({k.frame_timestamp_micros for k in self.planned}) < 2:
            return None
        self.live = LiveTracks(params, self.settings.class_map)
        self.live.seed({k: r.detections for k, r in self.done.items()})
        return self.live

    def record(self, item: FrameResult | FrameFailure) -> None:
        """A finished frame goes to the journal (its outputs are on disk); a failure is kept."""
        if isinstance(item, FrameFailure):
            self.failures.append(item)
            return
        if self._journal is None:
            raise ValueError(f"{self.name}: no frame was pending, nothing to record")
        self._journal.append(item)
        self.results[item.key] = item

    def finish(self, *, loop_seconds: float, engine: dict[str, object],
               rebuild: AnimationRebuilder | None = None) -> SegmentReport:
        """Table, animations (rebuilt from the frames when `rebuild` is given) and manifest; unlocks."""
        try:
            self._close_journal()
            settings, segment_dir, timings, clock = self.settings, self.segment_dir, self.timings, self.clock
            t = clock()
            if rebuild is not None:
                rebuild(segment_dir, width=settings.gif_width, mp4=settings.mp4, gif=settings.gif,
                        segment_context_name=self.name)
            timings.add("animation_rebuild", clock() - t)
            t = clock()
            rows = write_table(segment_dir / DETECTIONS_FILE, self.results.values(), self._track, self.context)
            if self.labels is not None:
                sizes = {key: (result.width, result.height) for key, result in self.results.items()}
                write_ground_truth(segment_dir / GROUND_TRUTH_FILE, self.labels.by_key, self.results, self.context,
                                   sizes)
            timings.add("table", clock() - t)
            failures = sorted_failures(self.failures)
            rules = self.job.rules
            drawn = boxes_drawn(self.results.values(), settings.style, rules,
                                self.labels.get if self.labels is not None and rules is not None else None)
            report = SegmentReport(self.name, segment_dir, COMPLETE_WITH_FAILURES if failures else COMPLETE,
                                   len(self.planned), self.processed, len(self.done), failures, rows,
                                   clock() - self.started, invalid_boxes=count_invalid(self.results.values()),
                                   drawn=drawn, notes=tuple(self._notes))
            write_manifest(segment_dir / MANIFEST_FILE, self._manifest(report, loop_seconds, engine))
            journal.save_settings(segment_dir, self.prepared.resume_key)
            return report
        finally:
            self.prepared.lock.release()

    def close(self) -> None:
        """Stop without finishing (the journal keeps what was done); unlocks."""
        self._close_journal()
        self.prepared.lock.release()

    def __enter__(self) -> SegmentLifecycle:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self.close()

    def _track(self, table: pa.Table) -> np.ndarray:
        """The table's track ids (kept for the manifest); all none with --no-track."""
        params = self.settings.tracker
        ids = np.full(table.num_rows, -1, np.int64) if params is None else track_table(table, self.settings.class_map,
                                                                                        params)
        self._track_ids = ids
        if (self.settings.write_frames or self.settings.animations) and params is not None and (ids >= 0).any():
            self._notes += live_tracking_notes(self.name, self.live, self.results, ids)
        return ids

    def _close_journal(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    def _manifest(self, report: SegmentReport, loop_seconds: float, engine: dict[str, object]) -> Manifest:
        source = self.keys.source
        outputs = sorted(p.name for p in report.segment_dir.iterdir() if p.is_file() and not p.name.startswith("."))
        values = self.timings.values
        per_image = {k: round(1000 * v / max(report.images_processed, 1), 2) for k, v in sorted(values.items())}
        invalid = invalid_boxes(self.results.values())
        return Manifest.from_json({
            "tool": "detect",
            "status": report.status,
            "segment_context_name": report.segment_context_name,
            "input": {"path": recorded_path(source), "format": source.format, "images_in_file": len(self.keys.index),
                      "fingerprint": None if self._source_fingerprint is None else self._source_fingerprint.to_json(),
                      "ground_truth": self.keys.labels if self.labels is None else self.labels.origin,
                      "labels": None if self.labels is None else
                      sum(len(self.labels.get(k)) for k in self.results),
                      "labels_dropped": 0 if self.labels is None else self.labels.dropped},
            "model": self.model_facts.to_json(),
            "engine": engine,
            "settings": SettingsRecord.of(self.job, self.model_facts).to_json(),
            "counts": {
                "images_planned": report.images_planned,
                "images_processed": report.images_processed,
                "images_resumed": report.images_resumed,
                "images_failed": len(report.failures),
                "detections": report.detections,
                "drawn": report.drawn,  # what the frames show (`boxes_drawn`): the pages and the summary count it
                "detections_by_label": label_counts(self.results.values()),
                "invalid_boxes": sum(r.detections.invalid for r in self.results.values()),
            },
            "failures": [failure_json(x) for x in report.failures],
            "invalid_boxes": invalid,
            "timings": {
                "total_s": round(report.seconds, 3),
                "pipeline_s": round(loop_seconds, 3),
                "images_per_second": round(report.images_processed / loop_seconds, 3) if loop_seconds > 0 else None,
                "stage_totals_s": {k: round(v, 3) for k, v in sorted(values.items())},
                "stage_ms_per_image": per_image,
                "note": TIMINGS_NOTE,
            },
            "tracking": tracking_record(self.settings.tracker, self._track_ids),
            "outputs": outputs,
            "versions": versions(),
            "started_at": self.started_at,
            "finished_at": now_iso(),
        }, report.segment_dir)
