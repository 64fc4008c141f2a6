"""`detect segment` and `detect run`: the flags become one typed `RunSpec`, the engines do the work."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from detect.cli.console import event, note, say, visible
from detect.cli.console import status as say_status
from detect.cli.disk_check import check_disk, still_to_do
from detect.cli.exit_codes import EXIT_FRAMES_FAILED, EXIT_OK
from detect.cli.flag_values import AUTO_GT
from detect.cli.followup import FollowUp, follow_up
from detect.core.cameras import UnknownCameraError, parse_cameras
from detect.core.errors import UsageError
from detect.engine.events import Progress, ProgressFactory
from detect.engine.loading import choose_settings
from detect.engine.local_engine import LocalEngine, run_segment
from detect.engine.protocol import Engine
from detect.engine.ray import RayEngine, check_spec
from detect.engine.ray_cluster import import_ray
from detect.engine.runner import plan_sources, refuse_rerun, refuse_segment, run_many
from detect.engine.spec import Mode, ModelSpec, RayOptions, RunSpec, SegmentSettings, parse_shard
from detect.engine.summary import failure_lines, format_table, invalid_boxes_warning, model_label, summary_line
from detect.model.classmap import load_class_map
from detect.model.inputs import parse_input_size
from detect.model.runtimes import default_runtime
from detect.model.tiles import TileSpec
from detect.render.draw import DrawStyle
from detect.results.source_images import NamedSources
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import absolute


def cmd_segment(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = run_spec(args, [args.path])  # flag errors before the slow model load
    keys = refuse_segment(spec)  # and a folder of OUT it must not reopen
    if args.disk_check:
        check_disk(spec, [keys.source], lambda text: say_status(text, err, args.quiet))
    report, model = run_segment(spec, TerminalReporter(err, args.quiet), keys=keys)
    after = _follow_up(args, report.segment_dir, pooled=False, err=err, inputs=[args.path])
    if not args.quiet:
        _notes(after.notes, err)
        say(summary_line(report, model.kind), out)
        say(model_label(model.facts), out)
        for line in after.lines:
            say(line, out)
        for line in failure_lines(report):
            event(line, err)
        warning = invalid_boxes_warning(report)
        if warning:
            event(warning, err)
    return EXIT_FRAMES_FAILED if report.failures else EXIT_OK


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = run_spec(args, args.paths)
    if spec.settings.mode == "new":  # resumable by default
        spec = dataclasses.replace(spec, settings=dataclasses.replace(spec.settings, mode="resume"))
    reporter = TerminalReporter(err, args.quiet)
    if spec.engine == "ray":
        import_ray()  # a missing Ray is a usage error before anything starts
        check_spec(spec)
        engine: Engine = RayEngine(progress_bars=reporter.bars)
    else:
        engine = LocalEngine()
    sources = plan_sources(spec.inputs, spec.shard)
    refuse_rerun(spec, sources)  # a segment written with other settings: before the estimate and the model
    if args.disk_check:
        check_disk(spec, still_to_do(spec, sources), reporter.status)
    result = run_many(spec, engine, reporter)
    after = _follow_up(args, spec.out, pooled=True, err=err, inputs=args.paths)
    if not args.quiet:
        _notes(after.notes, err)
        if result.model is not None:
            say(model_label(result.model), out)
        for line in format_table(result.outcomes, result.seconds):
            event(line, out)  # a failed segment's row holds its error: whole in a log
        for line in after.lines:
            say(line, out)
    return EXIT_FRAMES_FAILED if result.failed else EXIT_OK


def _follow_up(args: argparse.Namespace, results: Path, pooled: bool, err: TextIO, inputs: Sequence[str]) -> FollowUp:
    """Evaluate and write the report, as the flags allow (see `detect.cli.followup`); the report's
    close-ups read the inputs the user named."""
    return follow_up(results, evaluate=args.evaluate, report=args.report, class_map=args.class_map,
                     protocol=args.protocol, pooled=pooled, status=lambda text: say_status(text, err, args.quiet),
                     sources=NamedSources(tuple(inputs)))


def run_spec(args: argparse.Namespace, inputs: Sequence[str]) -> RunSpec:
    """The one typed description of a job, built from the flags (engines never see argparse)."""
    try:
        cameras = parse_cameras(args.cameras)
    except UnknownCameraError as err:
        raise UsageError(str(err)) from None
    mode: Mode = "resume" if args.resume else "overwrite" if args.overwrite else "new"
    if args.input_size is not None:
        parse_input_size(args.input_size)  # a bad flag is named before the model is looked for
    chosen = choose_settings(args.model, threshold=args.threshold, input_size=args.input_size,
                             nms_iou="model" if args.nms is None else None if args.nms == "off" else args.nms)
    style = DrawStyle(threshold=chosen.threshold, show_labels=args.show_labels, show_scores=args.show_scores,
                      unscored=args.draw_unscored,
                      line_width=args.line_width, max_boxes=args.max_boxes)
    settings = SegmentSettings(
        frame_filter=FrameFilter(cameras=cameras, first_frame=args.first_frame, max_frames=args.max_frames),
        input_size=parse_input_size(chosen.input_size),
        write_frames=args.write_frames,
        frame_format=args.frame_format,
        gif=args.gif,
        mp4=args.mp4,
        gif_width=args.gif_width,
        style=style,
        mode=mode,
        max_pixels=args.max_pixels,
        draw_mode=args.draw or ("errors" if args.gt is not None else "auto"),
        ground_truth=None if args.gt in (None, AUTO_GT) else absolute(args.gt),  # recorded: from any folder
        class_map=load_class_map(args.class_map),
        tile=None if args.tile is None else TileSpec(args.tile, args.tile_overlap),
        track=args.track,
        protocol=args.protocol,
        **({"workers": args.workers} if args.workers else {}),  # else the core-scaled default
        render=args.render,
    )
    model = ModelSpec(path=args.model, threshold=chosen.threshold, score_floor=min(args.score_floor, chosen.threshold),
                      classes=tuple(args.classes) if args.classes else None, strategy=args.strategy,
                      batch_size=args.batch_size, nms_iou=chosen.nms_iou, runtime=args.runtime or default_runtime())
    return RunSpec(
        inputs=tuple(inputs), out=args.out, model=model, settings=settings,
        engine=getattr(args, "engine", "local"), shard=parse_shard(getattr(args, "shard", None)),
        retry_failed=getattr(args, "retry_failed", False),
        ray=RayOptions(address=getattr(args, "ray_address", None), actors=getattr(args, "ray_actors", None)),
        debug=args.debug,
    )


class TerminalReporter:
    """Messages to stderr (none with --quiet); a tqdm bar per segment when stderr is a terminal."""

    def __init__(self, err: TextIO, quiet: bool) -> None:
        self.err = err
        self.quiet = quiet
        self.bars = not quiet and _isatty(err)

    def message(self, text: str) -> None:
        if not self.quiet:
            event(text, self.err)

    def status(self, text: str) -> None:
        say_status(text, self.err, self.quiet)

    def progress(self, label: str) -> ProgressFactory | None:
        # The bar needs carriage returns: it writes to the raw stream, its label made visible first.
        err, disable, desc = getattr(self.err, "raw", self.err), not self.bars, visible(label)

        def make(total: int, initial: int) -> Progress:
            return tqdm(total=total, initial=initial, unit="img", desc=desc, file=err, disable=disable,
                        dynamic_ncols=True, smoothing=0.1)

        return make


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _notes(notes: list[str], err: TextIO) -> None:
    for line in notes:
        note(line, err)
