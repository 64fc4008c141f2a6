"""The declarative part: every command, its flags and its handler."""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from detect import __version__
from detect.cli.console import event
from detect.cli.exit_codes import EXIT_USAGE
from detect.cli.flag_values import (
    AUTO_GT,
    FRAME_FORMATS,
    MAX_BATCH_SIZE,
    MAX_BOOTSTRAP,
    bounded_float,
    bounded_int,
    frame_format,
    nms_iou,
    non_negative_int,
    positive_float,
    positive_int,
    slice_dimensions,
    unit_float,
)
from detect.core.matching import PROTOCOLS
from detect.engine.loading import DEFAULT_MODEL_HELP, MODEL_ENV
from detect.engine.spec import DEFAULT_SCORE_FLOOR, DRAW_MODES, MAX_WORKERS, RENDER_MODES
from detect.model.runtimes import BACKENDS, RUNTIME_ENV, RUNTIMES
from detect.model.tiles import MAX_TILE, MIN_TILE
from detect.render.draw import MAX_BOXES, MAX_LINE_WIDTH, UNSCORED
from detect.render.mosaic import MAX_ANIMATION_WIDTH, MIN_ANIMATION_WIDTH
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line: what is wrong (and the flag or command meant,
    when a misspelled one is close to one), without the usage (18 lines for `detect segment`) that
    hid it; `--help` still prints the usage."""

    def parse(self, args: Sequence[str] | None = None) -> argparse.Namespace:
        """`parse_args`, with an unknown flag named by its command's parser (argparse's top-level
        parser names it, knowing none of the command's flags)."""
        parsed, extras = self.parse_known_args(args)
        if extras:  # the command's parser names them, with the flags it knows
            command = self._subcommands().get(getattr(parsed, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(extras)}{_meant(extras, list(command._option_string_actions))}")
        return parsed

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice:  # "invalid choice: 'segmnet' (choose from ...)": the one meant, when one is close
            close = difflib.get_close_matches(choice["value"], _CHOICE.findall(choice["choices"]), n=1)
            if close:
                message = message[:choice.start("choices") - 2] + f"; did you mean {close[0]!r}?"
        if message.startswith("the following arguments are required"):
            message += f" (`{self.prog} --help` shows its usage)"
        event(f"{self.prog}: error: {message}", sys.stderr)
        self.exit(EXIT_USAGE)

    def _subcommands(self) -> dict[str, Parser]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \((?P<choices>choose from [^)]*)\)$")
_CHOICE = re.compile(r"'([^']*)'")


def _meant(extras: Sequence[str], options: Sequence[str]) -> str:
    """"; did you mean --threshold?" for the first unknown flag close to one the command knows."""
    names = {option.lstrip("-"): option for option in options if option.startswith("--")}
    for word in extras:
        flag = word.split("=", 1)[0]
        close = difflib.get_close_matches(flag.lstrip("-"), list(names), n=1) if flag.startswith("--") else []
        if close:
            return f"; did you mean {names[close[0]]}?"
    return ""


def build_parser() -> Parser:
    parser = Parser(
        prog="detect",
        description="Run an object detector over Waymo Open Dataset camera video and see what it saw: annotated "
        "frames, animations, a detections table, AP against Waymo's labels, report pages. Without --model, the model is "
        f"{DEFAULT_MODEL_HELP}.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="what a segment file holds", description="Describe a Waymo segment file.")
    info.add_argument("path", metavar="PATH", help="v2 camera_image Parquet, v1 TFRecord, or a directory of them")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    _max_pixels(info)
    _common(info)
    info.set_defaults(handler=_handler("detect.cli.info_and_model", "cmd_info"))

    model = commands.add_parser("model", help="what a model is, knows and defaults to",
                                description="Describe a model without loading it: what it is, where it came from, the "
                                "settings it brings (input size, threshold, NMS) and every class it can output.")
    model.add_argument("path", metavar="PATH", nargs="?", type=Path,
                       help=f"a model directory, .pb or TF.js model.json (default: the one `detect segment` uses, "
                       f"${MODEL_ENV} first)")
    model.add_argument("--json", action="store_true", help="print JSON instead of text")
    _common(model)
    model.set_defaults(handler=_handler("detect.cli.info_and_model", "cmd_model"))

    segment = commands.add_parser(
        "segment", help="detect objects in one segment",
        description="Run the detector over one segment and write annotated frames, animations, "
        "a detections table and a manifest under OUT/<segment>/.",
    )
    segment.add_argument("path", metavar="PATH", help="v2 camera_image Parquet or v1 TFRecord (or a directory holding "
                         "one; `detect run` takes a directory of many)")
    _job_options(segment)
    segment.set_defaults(handler=_handler("detect.cli.segment_and_run", "cmd_segment"))

    run = commands.add_parser(
        "run", help="detect objects in many segments (resumable)",
        description="Run the detector over every segment named by PATHs (files, directories, globs, URIs).",
    )
    run.add_argument("paths", metavar="PATH", nargs="+")
    _job_options(run)
    run.add_argument("--engine", choices=("local", "ray"), default="local", help="local (default) or a Ray cluster")
    run.add_argument("--ray-address", metavar="ADDR", help="attach to this Ray cluster (default: start one locally)")
    run.add_argument("--ray-actors", type=positive_int, metavar="N",
                     help="detector actors for --engine ray (default: one per GPU, else one per node)")
    run.add_argument("--shard", metavar="I/N", help="process every N-th segment starting at I (0-based)")
    run.add_argument("--retry-failed", action="store_true", help="run segments whose manifest records failures again")
    run.set_defaults(handler=_handler("detect.cli.segment_and_run", "cmd_run"))

    evaluate = commands.add_parser(
        "eval", help="how good the detections are against Waymo's labels",
        description="COCO-style metrics per Waymo type (AP50, AP, AR100, AP by size; LEVEL_1 and LEVEL_2; per "
        "camera; precision/recall/F1 at the drawing threshold) for one segment's results or a whole run (pooled). "
        "Writes eval.json, matches.parquet and pr_curves.png into RESULTS.",
    )
    evaluate.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    _eval_options(evaluate)
    evaluate.add_argument("--by", type=slice_dimensions, default=(), metavar="DIMENSIONS",
                          help="also print the slices by these, comma-separated: range (0-30, 30-50, 50+ m), "
                               "time_of_day, location, weather (eval.json holds them all)")
    evaluate.set_defaults(handler=_handler("detect.cli.over_results", "cmd_eval"))

    export = commands.add_parser("export", help="labels and detections for other tools",
                                 description="Write the labels and the detections as COCO JSON (instances.json, "
                                 "detections.json; image ids stable from Waymo's keys) so any COCO tool can check them.")
    export.add_argument("format", choices=("coco",), help="coco: COCO JSON, as pycocotools and faster-coco-eval read it")
    export.add_argument("results", metavar="RESULTS", type=Path,
                        help="a segment's or a run's output directory (a run's segments go in one file)")
    export.add_argument("--out", type=Path, help="where to write (default: RESULTS)")
    export.add_argument("--images", action="store_true",
                        help="also copy each image's original JPEG out of the input file its manifest names, to the "
                        "images/ path its file_name gives (for FiftyOne, CVAT, ...)")
    _source(export, "with --images, read the images from these segment files")
    _eval_options(export, quiet="nothing but the notes (default: a line with what was written)")
    export.set_defaults(handler=_handler("detect.cli.over_results", "cmd_export"))

    report = commands.add_parser(
        "report", help="web pages of the results",
        description="Write report.html in each segment directory (animations, detections over time, scores, counts, "
        "run facts, failed frames, evaluation) and index.html at the top of a run directory. Relative links only: "
        "copy, zip or serve the directory as it is.")
    report.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    _source(report, "cut the close-ups from these segment files' images")
    _common(report)
    report.set_defaults(handler=_handler("detect.cli.over_results", "cmd_report"))

    compare = commands.add_parser(
        "compare", help="two results folders over the same frames, side by side",
        description="Compare two detectors, or one detector with two settings, on the frames both results folders "
        "hold (a segment's or a run's): AP per Waymo type for each with a paired bootstrap interval of the difference, "
        "the objects one found and the other missed, box-for-box agreement, an A | B animation per camera and the "
        "frames where they disagree most. Writes OUT/compare.html and compare.json.")
    compare.add_argument("a", metavar="A", type=Path, help="the first results folder")
    compare.add_argument("b", metavar="B", type=Path, help="the second results folder")
    compare.add_argument("--out", type=Path, required=True, help="where to write compare.html and its pictures")
    compare.add_argument("--bootstrap", type=bounded_int(0, MAX_BOOTSTRAP), default=1000, metavar="N",
                         help=f"resamples of the frames for the interval of each difference (default 1000; 0: none; "
                               f"at most {MAX_BOOTSTRAP:,})")
    compare.add_argument("--seed", type=non_negative_int, default=0, help="the resampling's seed (default 0)")
    compare.add_argument("--quiet", action="store_true", help="no table")
    compare.add_argument("--gt", metavar="PATH", help="labels from this camera_box file or folder")
    _matching(compare)
    _common(compare)
    compare.set_defaults(handler=_handler("detect.cli.compare", "cmd_compare"))

    gif = commands.add_parser(
        "gif", help="rebuild animations from annotated frames on disk",
        description="Rebuild <CAMERA>.gif and mosaic.gif (and MP4s) for every segment under RESULTS_DIR.",
    )
    gif.add_argument("results", metavar="RESULTS_DIR")
    gif.add_argument("--width", type=bounded_int(MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH), default=640,
                     help=f"animation width in pixels, {MIN_ANIMATION_WIDTH}-{MAX_ANIMATION_WIDTH} (default 640)")
    gif.add_argument("--fps", type=positive_float, help="frame rate (default: from the timestamps)")
    gif.add_argument("--mp4", action="store_true", help="also write H.264 MP4s")
    _common(gif)
    gif.set_defaults(handler=_handler("detect.cli.over_results", "cmd_gif"))

    track = commands.add_parser(
        "track", help="track ids again from the detections, without the model",
        description="Run the tracker again over each segment's detections.parquet under RESULTS (seconds, not the "
        "model's minutes) and rewrite its track_id column and the manifest's tracking facts, each atomically.")
    track.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    track.add_argument("--threshold", type=unit_float, metavar="T",
                       help="the score the tracker trusts (high; a new track asks T + 0.1; default: the run's drawing "
                            "threshold)")
    track.add_argument("--lost-seconds", type=bounded_float(0.0, 3600.0), metavar="S",
                       help="how long a track that lost its object waits for it (default 1.0)")
    track.add_argument("--class-map", type=Path, metavar="FILE",
                       help="which classes track together (a Waymo type's classes share ids; default: COCO -> Waymo)")
    _common(track)
    track.set_defaults(handler=_handler("detect.cli.over_results", "cmd_track"))

    redraw = commands.add_parser(
        "redraw", help="frames, animations, table, eval and report again at a new threshold, without the model",
        description="Redraw each finished segment under RESULTS from its source images and its recorded boxes "
        "(every box down to the score floor): frames, GIFs, mosaic and MP4s as the run wrote them, the track ids "
        "for the new threshold, then the evaluation and the report. Seconds, not the model's minutes; in each "
        "segment's lock; the source file must be the one the run read.")
    redraw.add_argument("results", metavar="RESULTS", type=Path, help="a segment's or a run's output directory")
    redraw.add_argument("--threshold", type=unit_float, metavar="SCORE",
                        help="minimum score to draw a box (default: the run's)")
    redraw.add_argument("--draw", choices=DRAW_MODES, help="what the frames show (default: as the run drew them)")
    redraw.add_argument("--draw-unscored", choices=UNSCORED,
                        help="classes with no Waymo type: thin boxes, chips or none (default: as the run drew them)")
    redraw.add_argument("--workers", type=bounded_int(1, MAX_WORKERS), metavar="N",
                        help="workers drawing and encoding frames (default: as `detect segment`)")
    redraw.add_argument("--no-eval", dest="evaluate", action="store_false", help="do not evaluate afterwards")
    redraw.add_argument("--no-report", dest="report", action="store_false", help="do not rewrite the report")
    redraw.add_argument("--quiet", action="store_true", help="no status lines, no summary")
    _source(redraw, "read the images from these segment files")
    _matching(redraw, the_runs=True)
    _common(redraw)
    redraw.set_defaults(handler=_handler("detect.cli.redraw_command", "cmd_redraw"))
    return parser


def _source(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--source", nargs="+", metavar="PATH",
                        help=f"{what} (files, folders, globs or URIs, as `detect run` takes them; a segment's is the "
                             "one named like the file its manifest records, or the only one). Default: the file its "
                             "manifest records, when that is a local file: a results folder never makes detect go "
                             "online")


def _max_pixels(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-pixels", type=bounded_int(MIN_SIDE * MIN_SIDE, MAX_SIDE * MAX_SIDE), default=DEFAULT_MAX_PIXELS,
                        metavar="N", help=f"skip images whose header claims more pixels, before decoding them "
                        f"(default {DEFAULT_MAX_PIXELS:,}: 4096x4096)")


def _eval_options(parser: argparse.ArgumentParser, quiet: str = "no table") -> None:
    parser.add_argument("--gt", metavar="PATH", help="labels from this camera_box file or folder instead of the "
                        "ground_truth.parquet the run wrote")
    _matching(parser)
    parser.add_argument("--allow-mixed", action="store_true",
                        help="pool what is refused by default: one segment found in several folders under RESULTS, or "
                             "segments run with different models or settings (model, input size, tiles, NMS, score "
                             "floor, classes)")
    parser.add_argument("--quiet", action="store_true", help=quiet)
    _common(parser)


def _matching(parser: argparse.ArgumentParser, the_runs: bool = False) -> None:
    """--class-map and --protocol; `the_runs`: their defaults are those the run recorded (redraw)."""
    parser.add_argument("--class-map", type=Path, metavar="FILE",
                        help="JSON from model classes to Waymo types (default: " + ("the run's" if the_runs else
                        "car/truck/bus/motorcycle -> VEHICLE, person -> PEDESTRIAN, bicycle -> CYCLIST, stop sign -> "
                        "SIGN") + ")")
    parser.add_argument("--protocol", choices=tuple(PROTOCOLS), default=None if the_runs else "coco",
                        help="the IoU a detection needs to match a label: coco (0.5 for every type"
                        f"{'' if the_runs else ', default'}) or waymo "
                        "(Waymo's 2D protocol: 0.7 for VEHICLE, 0.5 for PEDESTRIAN and CYCLIST); both APs are "
                        "always reported, this one decides hits and misses, P/R/F1 and thresholds"
                        + ("; default: the run's (the frames and the evaluation judge alike)" if the_runs else ""))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show tracebacks and TensorFlow's logs")


def _job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("results"), help="output directory (default: results/)")
    parser.add_argument("--model", type=Path, metavar="PATH",
                        help="a SavedModel directory (TF2, or a TF1 zoo saved_model/), a TF1 frozen graph .pb or a "
                        f"TF.js model.json (default: {DEFAULT_MODEL_HELP})")
    parser.add_argument("--threshold", type=unit_float, metavar="SCORE",
                        help="minimum score to draw a box (default: the model's own, from its detect_model.json; else 0.5)")
    parser.add_argument("--score-floor", type=unit_float, default=DEFAULT_SCORE_FLOOR, metavar="SCORE",
                        help=f"minimum score to keep a box in detections.parquet, for `detect eval` "
                        f"(default {DEFAULT_SCORE_FLOOR}; at most --threshold)")
    parser.add_argument("--gt", nargs="?", const=AUTO_GT, metavar="PATH",
                        help="Waymo's labels: draw errors and evaluate, an error when there are none; PATH names a "
                        "camera_box file or folder when it is not beside a v2 input (labels beside a v2 input or in "
                        "a v1 file are used without it)")
    parser.add_argument("--draw", choices=DRAW_MODES,
                        help="what the frames show: errors (hits solid blue, false alarms dashed vermillion, missed "
                        "labels dotted yellow), detections (a color per class), or auto (default): errors where the "
                        "segment has labels")
    parser.add_argument("--no-eval", dest="evaluate", action="store_false",
                        help="do not evaluate against the labels at the end (default: evaluate when there are labels)")
    parser.add_argument("--no-report", dest="report", action="store_false",
                        help="do not write report.html (default: write it)")
    parser.add_argument("--classes", nargs="+", metavar="CLASS", help="keep only these classes (COCO names or ids)")
    parser.add_argument("--cameras", nargs="+", metavar="CAMERA", help="FRONT, FRONT_LEFT, ... or 1-5 (default: all)")
    parser.add_argument("--first-frame", type=non_negative_int, default=0, metavar="N", help="skip the first N frames")
    parser.add_argument("--max-frames", type=positive_int, metavar="N", help="process at most N frames")
    parser.add_argument("--batch-size", type=bounded_int(1, MAX_BATCH_SIZE), metavar="N",
                        help=f"images per model call, 1-{MAX_BATCH_SIZE} (default: measured best)")
    parser.add_argument("--input-size", metavar="SIZE",
                        help="resize frames to SIZExSIZE or WxH (width x height) before the model, fit:WxH to fit "
                        "each camera inside WxH keeping its scale (sides multiples of 32), 'native' for full frames "
                        "(default: the model's own, e.g. fit:960x640 for CenterNet; else 320)")
    parser.add_argument("--tile", type=bounded_int(MIN_TILE, MAX_TILE), metavar="SIZE",
                        help="also run the model over overlapping SIZExSIZE tiles of the full-resolution frame and merge "
                        "the boxes with the whole frame's (finds far, small objects; 5-12x the model time; e.g. 512)")
    parser.add_argument("--tile-overlap", type=unit_float, default=0.2, metavar="SHARE",
                        help="how much neighbouring tiles overlap, 0-0.9 of a tile (default 0.2)")
    parser.add_argument("--nms", type=nms_iou, metavar="IOU",
                        help="class-aware non-maximum suppression after the model at this IoU, or 'off' "
                        "(default: the model's own, e.g. 0.7 for CenterNet; else off)")
    _matching(parser)
    _max_pixels(parser)
    parser.add_argument("--strategy", choices=("none", "mirrored"), default="none",
                        help="mirrored: replicate the model over all GPUs with tf.distribute")
    parser.add_argument("--runtime", choices=RUNTIMES,
                        help=f"what runs the model: {', '.join(b.help for b in BACKENDS)}, tensorflow "
                        f"(GPUs, --strategy mirrored, any model), or auto: {' else '.join(b.title for b in BACKENDS)} "
                        f"on a machine without a GPU when the model converts (default: ${RUNTIME_ENV}, else auto)")
    parser.add_argument("--no-png", dest="write_frames", action="store_false", help="do not write annotated frames")
    parser.add_argument("--no-gif", dest="gif", action="store_false", help="do not write GIF animations")
    parser.add_argument("--mp4", action="store_true", help="also write H.264 MP4 animations")
    parser.add_argument("--frame-format", type=frame_format, choices=FRAME_FORMATS, default="png",
                        help="annotated frame format: png (~3 MB a 1920x1280 image) or jpg (or jpeg: ~0.45 MB)")
    parser.add_argument("--no-disk-check", dest="disk_check", action="store_false",
                        help="start even when the free space of --out looks too small for the outputs (the estimate "
                             "is printed at the start either way)")
    parser.add_argument("--gif-width", type=bounded_int(MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH), default=640, metavar="PX",
                        help=f"animation width, {MIN_ANIMATION_WIDTH}-{MAX_ANIMATION_WIDTH} (default 640)")
    parser.add_argument("--line-width", type=bounded_int(1, MAX_LINE_WIDTH), metavar="PX",
                        help=f"box line width, 1-{MAX_LINE_WIDTH} (default: scaled to the image)")
    parser.add_argument("--no-labels", dest="show_labels", action="store_false", help="draw boxes without label chips")
    parser.add_argument("--no-scores", dest="show_scores", action="store_false", help="label chips without scores")
    parser.add_argument("--no-track", dest="track", action="store_false",
                        help="no track ids in detections.parquet (default: each object of a camera keeps one id "
                             "across the segment's timestamps; `detect track` runs it again later)")
    parser.add_argument("--draw-unscored", choices=UNSCORED, default="boxes",
                        help="with labels: classes that map to no Waymo type (traffic lights, benches, ...) drawn "
                             "thin without a chip (boxes, the default), with their chip (chips), or not at all (none)")
    parser.add_argument("--max-boxes", type=bounded_int(1, MAX_BOXES), default=100, metavar="N",
                        help="draw at most N boxes per image")
    parser.add_argument("--workers", type=bounded_int(1, MAX_WORKERS), metavar="N",
                        help=f"workers drawing and encoding frames, 1-{MAX_WORKERS} (default: 2, or all cores but two "
                             "above 4 cores)")
    parser.add_argument("--render", choices=RENDER_MODES, default="auto",
                        help="run those workers as processes (frames shared, not copied through pipes; they scale with "
                             "the cores) or threads (they share one core's worth of Python); auto: processes for 2+ workers")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue a run into an existing output directory")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing output directory")
    # the default now; kept for scripts
    parser.add_argument("--report", action="store_true", default=True, help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no summary")
    _common(parser)


Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _handler(module: str, name: str) -> Handler:
    """A command's handler, imported when the command runs, not when the parser is built: `detect
    info` or `detect redraw` does not load what `detect compare` needs."""
    def handler(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
        command: Handler = getattr(importlib.import_module(module), name)
        return int(command(args, out, err))

    return handler
