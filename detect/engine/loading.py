"""Glue between CLI flags and the library: settings, the model, progress and the summary line."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, TextIO

from detect.core.cameras import UnknownCameraError, parse_cameras
from detect.core.errors import ModelError, UsageError
from detect.core.names import printable
from detect.waymo.selection import FrameFilter

MODEL_ENV = "DETECT_MODEL"
DEFAULT_MODEL = Path("models") / "ssd_mobilenet_v2"


def default_model_path(cwd: Path | None = None) -> Path:
    """$DETECT_MODEL, else ./models/ssd_mobilenet_v2, else the one beside this checkout."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV])
    here = (cwd or Path.cwd()) / DEFAULT_MODEL
    if here.exists():
        return here
    checkout = Path(__file__).resolve().parents[2] / DEFAULT_MODEL
    if checkout.exists():
        return checkout
    raise ModelError(
        f"no model at {DEFAULT_MODEL}/: run `make model` to download SSD MobileNet v2, "
        f"or pass --model DIR (or set {MODEL_ENV})"
    )


def settings_from_args(args: argparse.Namespace, watermark: str | None = None):
    from detect.model.inputs import parse_input_size
    from detect.render.draw import DrawStyle
    from detect.engine.local import SegmentSettings

    try:
        cameras = parse_cameras(args.cameras)
    except UnknownCameraError as err:
        raise UsageError(str(err)) from None
    mode = "resume" if args.resume else "overwrite" if args.overwrite else "new"
    style = DrawStyle(
        threshold=args.threshold,
        show_labels=args.show_labels,
        show_scores=args.show_scores,
        line_width=args.line_width,
        max_boxes=args.max_boxes,
        watermark=watermark,
    )
    return SegmentSettings(
        frame_filter=FrameFilter(cameras=cameras, first_frame=args.first_frame, max_frames=args.max_frames),
        input_size=parse_input_size(args.input_size),
        write_frames=args.write_frames,
        frame_format=args.frame_format,
        gif=args.gif,
        mp4=args.mp4,
        gif_width=args.gif_width,
        style=style,
        mode=mode,
        max_pixels=args.max_pixels,
        **({"workers": args.workers} if args.workers else {}),  # else the core-scaled default
    )


def model_kind(args: argparse.Namespace) -> str:
    """"real", "stub" or "benchmark" from the model's sidecar file, without loading TensorFlow."""
    from detect.model.contract import check_is_saved_model, read_sidecar

    path = Path(args.model or default_model_path())
    check_is_saved_model(path)
    return read_sidecar(path)[0]


def load_detector(args: argparse.Namespace):
    from detect.model.labels import UnknownClassError
    from detect.model.detector import DEFAULT_BATCH_SIZE, Detector

    model = args.model or default_model_path()
    try:
        return Detector(
            model,
            threshold=args.threshold,
            classes=args.classes,
            strategy=args.strategy,
            batch_size=args.batch_size or DEFAULT_BATCH_SIZE,
        )
    except UnknownClassError as err:
        raise UsageError(str(err)) from None


def model_facts(detector: Any, load_seconds: float) -> dict[str, Any]:
    info = detector.info
    return {
        "path": str(Path(info.path).resolve()),
        "kind": info.kind,
        "description": info.description,
        "call_style": info.call_style,
        "model_batch": info.batch_size if info.batch_size else "dynamic",
        "batch_size": detector.batch_size,
        "pinned_input": [info.input_width, info.input_height] if info.input_height else None,
        "outputs": list(info.output_keys),
        "threshold": detector.threshold,
        "classes": sorted(detector.class_ids) if detector.class_ids else None,
        "strategy": detector.strategy_name,
        "replicas": detector.num_replicas,
        "load_seconds": round(load_seconds, 2),
    }


def progress_factory(err: TextIO, quiet: bool, label: str):
    from tqdm import tqdm

    disable = quiet or not _isatty(err)

    def make(total: int, initial: int):
        return tqdm(total=total, initial=initial, unit="img", desc=label, file=err, disable=disable,
                    dynamic_ncols=True, smoothing=0.1)

    return make


def watermark(kind: str) -> str | None:
    """Frames drawn with a stand-in model ("stub", "benchmark") say so on the picture itself."""
    if kind == "stub":
        return "STUB MODEL: fixed boxes, not detections"
    if kind == "benchmark":
        return "BENCHMARK MODEL: random weights, boxes meaningless"
    return None


def model_notice(detector: Any) -> str | None:
    info = detector.info
    if info.kind == "real":
        return None
    return f"note: using a {info.description} from {info.path}; its boxes are not real detections"


def run_segment_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import time

    from detect.engine.local import process_segment
    from detect.waymo.sources import resolve_one

    settings_from_args(args)  # flag errors before the slow model load
    source = resolve_one(args.path)
    t = time.perf_counter()
    detector = load_detector(args)
    facts = model_facts(detector, time.perf_counter() - t)
    settings = settings_from_args(args, watermark(detector.info.kind))
    notice = model_notice(detector)
    if notice and not args.quiet:
        print(notice, file=err)
    report = process_segment(
        source, args.out, detector, settings, model_facts=facts,
        progress=progress_factory(err, args.quiet, "detect"),
    )
    if not args.quiet:
        print(summary_line(report) + ("" if detector.info.kind == "real" else f" [{detector.info.kind} model]"), file=out)
        for failure in report.failures[:5]:
            print(f"  failed {failure.key}: {failure.stage}: {failure.error}", file=err)
        if len(report.failures) > 5:
            print(f"  ... and {len(report.failures) - 5} more in {report.segment_dir / 'manifest.json'}", file=err)
        warning = invalid_boxes_warning(report)
        if warning:
            print(warning, file=err)
    return 1 if report.failures else 0


def invalid_boxes_warning(report: Any) -> str | None:
    """One line when the model emitted rows that were dropped as invalid."""
    if not report.invalid_boxes:
        return None
    return (f"warning: {printable(report.segment_context_name)}: the model emitted {report.invalid_boxes} invalid boxes "
            f"(NaN or infinite values, zero area inside the image, or a class that is not a whole number); they were "
            f"dropped and are counted per image in {report.segment_dir / 'manifest.json'}")


def summary_line(report: Any) -> str:
    name = printable(report.segment_context_name)
    if report.already_complete:
        return f"{name}: already complete in {report.segment_dir} (nothing to do)"
    resumed = f", {report.images_resumed} resumed" if report.images_resumed else ""
    failed = f", {len(report.failures)} FAILED" if report.failures else ""
    return (
        f"{name}: {report.images_processed} images{resumed}{failed}, "
        f"{report.detections} detections, {report.images_per_second:.1f} images/s -> {report.segment_dir}"
    )


def run_many_command(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from detect.engine.runner import run_many

    return run_many(args, out, err)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
