"""`detect run`: many segments, resumable by default, on this machine or on a Ray cluster.

Every segment lands in `OUT/<segment>/` exactly as `detect segment` writes it; `OUT/run.json`
records what happened to each input so a rerun skips finished work without reopening files.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from detect.sinks.atomic import atomic_write_bytes
from detect.core.errors import OutputError, UsageError
from detect.core.names import printable, segment_dir_name
from detect.sinks.manifest import COMPLETE, COMPLETE_WITH_FAILURES, MANIFEST_FILE, now_iso, read_manifest
from detect.waymo.sources import SegmentSource, resolve

RUN_FILE = "run.json"
DONE, SKIPPED, FAILED, PARTIAL = "done", "skipped", "failed", "done_with_failures"


@dataclasses.dataclass(frozen=True)
class SegmentOutcome:
    path: str
    segment_context_name: str | None
    status: str
    images: int = 0
    detections: int = 0
    failed_images: int = 0
    seconds: float = 0.0
    error: str | None = None


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'1/4' -> (1, 4): every 4th segment starting at the second (0-based)."""
    if text is None:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text!r}: need 0 <= I < N")
    return index, count


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


def run_file_name(shard: tuple[int, int] | None) -> str:
    """One run file per shard, so shards sharing an output directory never write the same file."""
    return RUN_FILE if shard is None else f"run-shard-{shard[0]}-of-{shard[1]}.json"


def previous_outcomes(out: Path, run_file: str = RUN_FILE) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((out / run_file).read_text())
    except (OSError, ValueError):
        return {}
    return {entry["path"]: entry for entry in data.get("segments", []) if "path" in entry}


def carried_over(out: Path, source: SegmentSource, previous: dict[str, Any] | None, retry_failed: bool) -> SegmentOutcome | None:
    """The outcome of an earlier run that stands, or None if the segment needs work now.

    Judged from the run file and the segment's own manifest, without opening the input.
    """
    if not previous:
        return None
    name = previous.get("segment_context_name")
    if previous.get("status") == FAILED and not name:
        if retry_failed:
            return None
        return SegmentOutcome(source.uri, None, FAILED, error=f"{previous.get('error')} (not retried; use --retry-failed)")
    if not name:
        return None
    manifest = read_manifest(out / segment_dir_name(name) / MANIFEST_FILE)
    if not manifest:
        return None
    if manifest.get("status") == COMPLETE:
        return SegmentOutcome(source.uri, name, SKIPPED, error="already complete")
    if manifest.get("status") == COMPLETE_WITH_FAILURES and not retry_failed:
        failed = len(manifest.get("failures", []))
        return SegmentOutcome(source.uri, name, PARTIAL, failed_images=failed,
                              error=f"{failed} failed frames (not retried; use --retry-failed)")
    return None


def carry_over(out: Path, source: SegmentSource, previous: dict[str, Any] | None, retry_failed: bool,
               claims: dict[str, str]) -> SegmentOutcome | None:
    """`carried_over`, and the directory of a segment that stands is claimed for its input in this run."""
    outcome = carried_over(out, source, previous, retry_failed)
    if outcome is not None and outcome.segment_context_name:
        claims.setdefault(segment_dir_name(outcome.segment_context_name), source.uri)
    return outcome


def run_many(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from detect.engine.loading import model_kind, settings_from_args, watermark

    parse_shard(args.shard)  # usage errors before anything touches the model
    settings_from_args(args)
    if args.engine == "ray":
        from detect.engine.ray import import_ray

        import_ray()
    settings = settings_from_args(args, watermark(model_kind(args)))
    if settings.mode == "new":  # resumable by default
        settings = dataclasses.replace(settings, mode="resume")
    sources = plan_sources(args.paths, parse_shard(args.shard))
    root = Path(args.out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{root}: cannot create the output directory ({error.strerror or error})") from None
    run_file = run_file_name(args.shard and parse_shard(args.shard))
    previous = previous_outcomes(root, run_file)
    started = time.perf_counter()
    outcomes: list[SegmentOutcome] = []
    claims: dict[str, str] = {}
    try:
        if args.engine == "ray":
            from detect.engine.ray import run_on_ray

            outcomes += run_on_ray(sources, root, settings, args, previous, err, claims)
        else:
            _run_local(sources, root, settings, args, previous, err, claims, outcomes)
    finally:  # also when interrupted: what finished is recorded
        _write_run_file(root / run_file, outcomes, previous, time.perf_counter() - started, args)
    seconds = time.perf_counter() - started
    if not args.quiet:
        for line in format_table(outcomes, seconds):
            print(line, file=out)
    bad = any(o.status in (FAILED, PARTIAL) for o in outcomes)
    return 1 if bad else 0


def _run_local(sources, root, settings, args, previous, err, claims, outcomes: list[SegmentOutcome]) -> None:
    from detect.engine.loading import invalid_boxes_warning, load_detector, model_facts, model_notice, progress_factory
    from detect.engine.local import process_segment
    from detect.engine.ray_stages import error_text

    detector = facts = None
    for number, source in enumerate(sources, 1):
        before = None if settings.mode == "overwrite" else carry_over(root, source, previous.get(source.uri), args.retry_failed, claims)
        if before is not None:
            outcomes.append(before)
            continue
        if detector is None:  # load once, and only if some segment needs it
            t = time.perf_counter()
            detector = load_detector(args)
            facts = model_facts(detector, time.perf_counter() - t)
            notice = model_notice(detector)
            if notice and not args.quiet:
                print(notice, file=err)
        t = time.perf_counter()
        try:
            report = process_segment(source, root, detector, settings, model_facts=facts, claims=claims,
                                     progress=progress_factory(err, args.quiet, f"[{number}/{len(sources)}]"))
        except Exception as error:  # one broken segment never stops the others, whatever broke it
            message = error_text(error)
            outcomes.append(SegmentOutcome(source.uri, None, FAILED, seconds=time.perf_counter() - t, error=message))
            if not args.quiet:
                print(f"detect: segment failed: {message}", file=err)
            continue
        warning = invalid_boxes_warning(report)
        if warning and not args.quiet:
            print(warning, file=err)
        status = PARTIAL if report.failures else (SKIPPED if report.already_complete else DONE)
        outcomes.append(SegmentOutcome(source.uri, report.segment_context_name, status, report.images_processed,
                                       report.detections, len(report.failures), report.seconds))


def _write_run_file(path: Path, outcomes: list[SegmentOutcome], previous: dict[str, dict[str, Any]], seconds: float,
                    args: argparse.Namespace) -> None:
    merged = dict(previous)
    for outcome in outcomes:
        carried = outcome.images == 0 and outcome.path in previous and outcome.seconds == 0
        merged[outcome.path] = {**previous[outcome.path], "note": outcome.error} if carried else dataclasses.asdict(outcome)
    images = sum(o.images for o in outcomes)
    data = {
        "updated_at": now_iso(),
        "engine": args.engine,
        "shard": args.shard,
        "this_run": {
            "done": sum(o.status == DONE for o in outcomes),
            "done_with_failures": sum(o.status == PARTIAL for o in outcomes),
            "skipped": sum(o.status == SKIPPED for o in outcomes),
            "failed": sum(o.status == FAILED for o in outcomes),
            "images": images,
            "detections": sum(o.detections for o in outcomes),
            "seconds": round(seconds, 2),
            "images_per_second": round(images / seconds, 2) if seconds > 0 else None,
        },
        "segments": sorted(merged.values(), key=lambda e: e["path"]),
    }
    atomic_write_bytes(path, (json.dumps(data, indent=2) + "\n").encode())


def format_table(outcomes: list[SegmentOutcome], seconds: float) -> list[str]:
    names = [printable(o.segment_context_name) if o.segment_context_name else Path(o.path).name for o in outcomes]
    width = max([len(n) for n in names] + [7])
    lines = [f"{'segment':<{width}}  {'status':<18} {'images':>7} {'detections':>10} {'img/s':>7}"]
    for o, name in zip(outcomes, names, strict=True):
        rate = f"{o.images / o.seconds:.1f}" if o.seconds > 0 and o.images else "-"
        lines.append(f"{name:<{width}}  {o.status:<18} {o.images:>7} {o.detections:>10} {rate:>7}")
        if o.error and o.status != DONE:
            lines.append(f"{'':<{width}}  {o.error}")
    images = sum(o.images for o in outcomes)
    counts = {s: sum(o.status == s for o in outcomes) for s in (DONE, PARTIAL, SKIPPED, FAILED)}
    lines.append(
        f"{len(outcomes)} segments: {counts[DONE]} done, {counts[PARTIAL]} with failed frames, "
        f"{counts[SKIPPED]} skipped, {counts[FAILED]} failed; {images} images in {seconds:.1f} s"
        + (f" ({images / seconds:.1f} images/s)" if seconds > 0 and images else "")
    )
    return lines
