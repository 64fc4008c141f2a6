"""The `detect` command: parse arguments, build a `RunSpec`, call the library, print, exit.

The only module that knows argparse, prints or exits. Exit codes: 0 all good; 1 some frames (or
segments) failed and are listed in the manifest / run file; 2 usage, input, model or output
errors and unexpected ones (one line on stderr; the traceback only with --debug); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from detect import __version__
from detect.core.cameras import UnknownCameraError, parse_cameras
from detect.core.errors import DetectError, UsageError
from detect.core.tf_env import set_verbose
from detect.engine.events import Progress, ProgressFactory
from detect.engine.loading import MODEL_ENV, choose_settings
from detect.engine.ray import RayEngine, check_spec, import_ray
from detect.engine.runner import Engine, LocalEngine, run_many, run_segment
from detect.engine.spec import (
    DEFAULT_SCORE_FLOOR,
    RENDER_MODES,
    Mode,
    ModelSpec,
    RayOptions,
    RunSpec,
    SegmentSettings,
    parse_shard,
)
from detect.engine.summary import failure_lines, format_table, invalid_boxes_warning, model_label, summary_line
from detect.engine.tuning import keep_freed_memory
from detect.evaluate.commands import export_coco, run_eval
from detect.evaluate.outputs import table_lines
from detect.model.inputs import parse_input_size
from detect.render.draw import DrawStyle
from detect.report.build import build_reports
from detect.sinks.animations import rebuild_all
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE
from detect.waymo.info import format_info, segment_info
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import resolve

EXIT_OK, EXIT_FRAMES_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# Upper bounds on flags that size memory or threads: a typo must not ask for 28 GB. 256 full
# 1920x1280 frames are 1.9 GB; 64 drawing threads keep a 64-core box busy.
MAX_BATCH_SIZE = 256
MAX_WORKERS = 64
MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH = 16, 7680
AUTO_GT = "auto"  # `--gt` without a path: the labels beside the input


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse already printed usage, help or version
        return EXIT_USAGE if exit_.code else EXIT_OK
    if args.debug:
        set_verbose(True)
    keep_freed_memory()
    try:
        return int(args.handler(args, out, err))
    except DetectError as error:
        if args.debug:
            raise
        print(f"detect: error: {one_line(str(error))}", file=err)
        return EXIT_USAGE
    except BrokenPipeError:  # `detect info ... | head`
        return EXIT_OK
    except KeyboardInterrupt:
        print("detect: interrupted; rerun with --resume to continue where it stopped", file=err)
        return EXIT_INTERRUPTED
    except OSError as error:  # read-only or full disk, no permission, OUT is a file...
        if args.debug:
            raise
        print(f"detect: error: {os_error_line(error)}", file=err)
        return EXIT_USAGE
    except Exception as error:  # a bug: still one line, the traceback with --debug
        if args.debug:
            raise
        print(f"detect: error: unexpected {type(error).__name__}: {one_line(str(error))} "
              f"(rerun with --debug for the traceback, and please report it)", file=err)
        return EXIT_USAGE


def one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def os_error_line(error: OSError) -> str:
    """`path: reason` for an operating-system error, as one line."""
    reason = error.strerror or one_line(str(error)) or type(error).__name__
    where = error.filename if error.filename is not None else None
    return f"{where}: {reason}" if where else reason


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="detect",
        description="Run an SSD MobileNet v2 detector over Waymo Open Dataset camera video.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="what a segment file holds", description="Describe a Waymo segment file.")
    info.add_argument("path", metavar="PATH", help="v2 camera_image Parquet, v1 TFRecord, or a directory of them")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    _max_pixels(info)
    _common(info)
    info.set_defaults(handler=_cmd_info)

    segment = commands.add_parser(
        "segment", help="detect objects in one segment",
        description="Run the detector over one segment and write annotated frames, animations, "
        "a detections table and a manifest under OUT/<segment>/.",
    )
    segment.add_argument("path", metavar="PATH", help="v2 camera_image Parquet or v1 TFRecord")
    _job_options(segment)
    segment.set_defaults(handler=_cmd_segment)

    run = commands.add_parser(
        "run", help="detect objects in many segments (resumable)",
        description="Run the detector over every segment named by PATHs (files, directories, globs, URIs).",
    )
    run.add_argument("paths", metavar="PATH", nargs="+")
    _job_options(run)
    run.add_argument("--engine", choices=("local", "ray"), default="local", help="local (default) or a Ray cluster")
    run.add_argument("--ray-address", metavar="ADDR", help="attach to this Ray cluster (default: start one locally)")
    run.add_argument("--ray-actors", type=_positive_int, metavar="N",
                     help="detector actors for --engine ray (default: one per GPU, else one per node)")
    run.add_argument("--shard", metavar="I/N", help="process every N-th segment starting at I (0-based)")
    run.add_argument("--retry-failed", action="store_true", help="run segments whose manifest records failures again")
    run.set_defaults(handler=_cmd_run)

    evaluate = commands.add_parser(
        "eval", help="how good the detections are against Waymo's labels",
        description="COCO-style metrics per Waymo type (AP50, AP, AR100, AP by size; LEVEL_1 and LEVEL_2; per "
        "camera; precision/recall/F1 at the drawing threshold) for one segment's results or a whole run (pooled). "
        "Writes eval.json, matches.parquet and pr_curves.png into RESULTS.",
    )
    evaluate.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    _eval_options(evaluate)
    evaluate.set_defaults(handler=_cmd_eval)

    export = commands.add_parser("export", help="labels and detections for other tools",
                                 description="Write the labels and the detections as COCO JSON (instances.json, "
                                 "detections.json; image ids stable from Waymo's keys) so any COCO tool can check them.")
    export.add_argument("format", choices=("coco",), help="coco")
    export.add_argument("results", metavar="RESULTS", type=Path)
    export.add_argument("--out", type=Path, help="where to write (default: RESULTS)")
    _eval_options(export)
    export.set_defaults(handler=_cmd_export)

    report = commands.add_parser(
        "report", help="web pages of the results",
        description="Write report.html in each segment directory (animations, detections over time, scores, counts, "
        "run facts, failed frames, evaluation) and index.html at the top of a run directory. Relative links only: "
        "copy, zip or serve the directory as it is.")
    report.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    _common(report)
    report.set_defaults(handler=_cmd_report)

    gif = commands.add_parser(
        "gif", help="rebuild animations from annotated frames on disk",
        description="Rebuild <CAMERA>.gif and mosaic.gif (and MP4s) for every segment under RESULTS_DIR.",
    )
    gif.add_argument("results", metavar="RESULTS_DIR")
    gif.add_argument("--width", type=_bounded_int(MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH), default=640,
                     help=f"animation width in pixels, {MIN_ANIMATION_WIDTH}-{MAX_ANIMATION_WIDTH} (default 640)")
    gif.add_argument("--fps", type=_positive_float, help="frame rate (default: from the timestamps)")
    gif.add_argument("--mp4", action="store_true", help="also write H.264 MP4s")
    _common(gif)
    gif.set_defaults(handler=_cmd_gif)
    return parser


def _max_pixels(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-pixels", type=_bounded_int(MIN_SIDE * MIN_SIDE, MAX_SIDE * MAX_SIDE), default=DEFAULT_MAX_PIXELS,
                        metavar="N", help=f"skip images whose header claims more pixels, before decoding them "
                        f"(default {DEFAULT_MAX_PIXELS:,}: 4096x4096)")


def _eval_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gt", metavar="PATH", help="labels from this camera_box file or folder instead of the "
                        "ground_truth.parquet the run wrote")
    parser.add_argument("--class-map", type=Path, metavar="FILE",
                        help="JSON from model classes to Waymo types (default: car/truck/bus/motorcycle -> VEHICLE, "
                        "person -> PEDESTRIAN, bicycle -> CYCLIST, stop sign -> SIGN)")
    parser.add_argument("--quiet", action="store_true", help="no table")
    _common(parser)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show tracebacks and TensorFlow's logs")


def _job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: results/)")
    parser.add_argument("--model", type=Path, metavar="PATH",
                        help=f"a SavedModel directory (TF2, or a TF1 zoo saved_model/) or a TF1 frozen graph .pb "
                        f"(default: ${MODEL_ENV}, else models/ssd_mobilenet_v2/, else models/ssdlite_mobilenet_v2_person/)")
    parser.add_argument("--threshold", type=_unit_float, metavar="SCORE",
                        help="minimum score to draw a box (default: the model's own, from its detect_model.json; else 0.5)")
    parser.add_argument("--score-floor", type=_unit_float, default=DEFAULT_SCORE_FLOOR, metavar="SCORE",
                        help=f"minimum score to keep a box in detections.parquet, for `detect eval` "
                        f"(default {DEFAULT_SCORE_FLOOR}; at most --threshold)")
    parser.add_argument("--gt", nargs="?", const=AUTO_GT, metavar="PATH",
                        help="draw Waymo's labels under the detections (dashed, one color per type); PATH names a "
                        "camera_box file or folder when it is not beside a v2 input")
    parser.add_argument("--classes", nargs="+", metavar="CLASS", help="keep only these classes (COCO names or ids)")
    parser.add_argument("--cameras", nargs="+", metavar="CAMERA", help="FRONT, FRONT_LEFT, ... or 1-5 (default: all)")
    parser.add_argument("--first-frame", type=_non_negative_int, default=0, metavar="N", help="skip the first N frames")
    parser.add_argument("--max-frames", type=_positive_int, metavar="N", help="process at most N frames")
    parser.add_argument("--batch-size", type=_bounded_int(1, MAX_BATCH_SIZE), metavar="N",
                        help=f"images per model call, 1-{MAX_BATCH_SIZE} (default: measured best)")
    parser.add_argument("--input-size", metavar="SIZE",
                        help="resize frames to SIZExSIZE or WxH (width x height) before the model, "
                        "'native' for full frames (default: the model's own; else 320)")
    parser.add_argument("--nms", type=_nms_iou, metavar="IOU",
                        help="class-aware non-maximum suppression after the model at this IoU, or 'off' "
                        "(default: the model's own, e.g. 0.7 for CenterNet; else off)")
    _max_pixels(parser)
    parser.add_argument("--strategy", choices=("none", "mirrored"), default="none",
                        help="mirrored: replicate the model over all GPUs with tf.distribute")
    parser.add_argument("--no-png", dest="write_frames", action="store_false", help="do not write annotated frames")
    parser.add_argument("--no-gif", dest="gif", action="store_false", help="do not write GIF animations")
    parser.add_argument("--mp4", action="store_true", help="also write H.264 MP4 animations")
    parser.add_argument("--frame-format", choices=("png", "jpg"), default="png", help="annotated frame format")
    parser.add_argument("--gif-width", type=_bounded_int(MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH), default=640, metavar="PX",
                        help=f"animation width, {MIN_ANIMATION_WIDTH}-{MAX_ANIMATION_WIDTH} (default 640)")
    parser.add_argument("--line-width", type=_bounded_int(1, 64), metavar="PX", help="box line width, 1-64 (default: scaled to the image)")
    parser.add_argument("--no-labels", dest="show_labels", action="store_false", help="draw boxes without label chips")
    parser.add_argument("--no-scores", dest="show_scores", action="store_false", help="label chips without scores")
    parser.add_argument("--max-boxes", type=_bounded_int(1, 10_000), default=100, metavar="N", help="draw at most N boxes per image")
    parser.add_argument("--workers", type=_bounded_int(1, MAX_WORKERS), metavar="N",
                        help=f"workers drawing and encoding frames, 1-{MAX_WORKERS} (default: 2, or all cores but two above 4 cores)")
    parser.add_argument("--render", choices=RENDER_MODES, default="auto",
                        help="run those workers as processes (frames shared, not copied through pipes; they scale with "
                             "the cores) or threads (they share one core's worth of Python); auto: processes for 2+ workers")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue a run into an existing output directory")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    parser.add_argument("--report", action="store_true", help="also write report.html (and index.html for a run)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    _common(parser)


def _cmd_info(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    infos = [segment_info(source, args.max_pixels) for source in resolve(args.path)]
    if args.json:
        payload = [i.to_json() for i in infos]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2), file=out)
    else:
        for n, info in enumerate(infos):
            if n:
                print(file=out)
            print("\n".join(format_info(info)), file=out)
    return EXIT_OK


def _cmd_segment(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = run_spec(args, [args.path])  # flag errors before the slow model load
    report, model = run_segment(spec, TerminalReporter(err, args.quiet))
    if args.report:
        build_reports(report.segment_dir)
    if not args.quiet:
        print(summary_line(report, model.kind, model_label(model.facts)), file=out)
        for line in failure_lines(report):
            print(line, file=err)
        warning = invalid_boxes_warning(report)
        if warning:
            print(warning, file=err)
    return EXIT_FRAMES_FAILED if report.failures else EXIT_OK


def _cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
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
    result = run_many(spec, engine, reporter)
    if args.report:
        build_reports(spec.out)
    if not args.quiet:
        if result.model is not None:
            print(model_label(result.model), file=out)
        for line in format_table(result.outcomes, result.seconds):
            print(line, file=out)
    return EXIT_FRAMES_FAILED if result.failed else EXIT_OK


def _cmd_eval(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    result = run_eval(args.results, gt=args.gt, class_map_path=args.class_map)
    for note in result.notes:
        print(f"detect: note: {note}", file=err)
    if not args.quiet:
        report = result.report
        print(f"detect eval: {len(report['segments'])} segment(s), {report['images']} images, types "
              f"{', '.join(report['types'])} ({report['class_map']['source']}; {report['library']['name']} "
              f"{report['library']['version']})", file=out)
        for line in table_lines(result.evaluation):
            print(line, file=out)
        print("wrote " + ", ".join(str(p) for p in result.written), file=out)
    return EXIT_OK


def _cmd_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    for path in export_coco(args.results, args.out, gt=args.gt, class_map_path=args.class_map):
        print(path, file=out)
    return EXIT_OK


def _cmd_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    for path in build_reports(args.results):
        print(path, file=out)
    return EXIT_OK


def _cmd_gif(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    written = rebuild_all(args.results, width=args.width, fps=args.fps, mp4=args.mp4)
    for path in written:
        print(path, file=out)
    return EXIT_OK


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
        draw_labels=args.gt is not None,
        ground_truth=None if args.gt in (None, AUTO_GT) else args.gt,
        **({"workers": args.workers} if args.workers else {}),  # else the core-scaled default
        render=args.render,
    )
    model = ModelSpec(path=args.model, threshold=chosen.threshold, score_floor=min(args.score_floor, chosen.threshold),
                      classes=tuple(args.classes) if args.classes else None, strategy=args.strategy,
                      batch_size=args.batch_size, nms_iou=chosen.nms_iou)
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
            print(text, file=self.err)

    def progress(self, label: str) -> ProgressFactory | None:
        err, disable = self.err, not self.bars

        def make(total: int, initial: int) -> Progress:
            return tqdm(total=total, initial=initial, unit="img", desc=label, file=err, disable=disable,
                        dynamic_ncols=True, smoothing=0.1)

        return make


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = _int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}, got {text}")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _nms_iou(text: str) -> float | str:
    if text.strip().lower() in ("off", "none", "0"):
        return "off"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number or 'off': {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 (excluded) and 1, or 'off', got {text}")
    return value


def _unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


if __name__ == "__main__":
    sys.exit(main())
