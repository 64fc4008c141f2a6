"""`detect info` (what a segment file holds) and `detect model` (what a model is, knows and defaults to)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TextIO

from detect.cli.console import event, say
from detect.cli.exit_codes import EXIT_OK
from detect.core.names import printable
from detect.engine.loading import default_model_path
from detect.model import formats
from detect.model.coco_classes import COCO_LABELS, label_for
from detect.model.onnx.layouts import LAYOUT_TITLES
from detect.model.runtimes import CpuPlan, cpu_plan, openvino
from detect.model.tfjs import HEADS
from detect.model.tfjs.heads import DEFAULTS_REASON
from detect.waymo.info import format_info, segment_info
from detect.waymo.sources import resolve


def cmd_info(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    infos = [segment_info(source, args.max_pixels) for source in resolve(args.path)]
    if args.json:
        payload = [i.to_json() for i in infos]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2), file=out)
    else:
        for n, info in enumerate(infos):
            if n:
                print(file=out)
            for line in format_info(info):
                event(line, out)
    return EXIT_OK


def cmd_model(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """What a model is, where it came from, the defaults it brings and every class it knows (no TensorFlow)."""
    path = args.path if args.path is not None else default_model_path()
    source = formats.locate(path)
    classes = list(source.classes) if source.classes is not None else sorted(c for c in COCO_LABELS if c)
    defaults = {k: v for k, v in dataclasses.asdict(source.defaults).items() if v is not None}
    plan = onnx_plan() if source.format == "onnx" else cpu_plan(path, source.kind, lambda: formats.checksum(source.path))
    if args.json:
        payload = {"path": str(path), "format": source.format, "kind": source.kind, "description": source.description,
                   "short_name": source.short_name, "source": source.origin, "defaults": defaults,
                   "runtime_on_cpu": _plan_json(plan), "classes": {str(c): label_for(c) for c in classes}}
        print(json.dumps(payload, indent=2), file=out)
        return EXIT_OK
    event(f"{printable(source.description, limit=200)} ({source.kind})", out)
    event(f"path: {path} ({source.format})", out)
    origin = source.origin or {}
    if source.format == "onnx":
        _onnx_lines(origin, out)
    where = " ".join(str(origin[k]) for k in ("registry", "package", "version") if origin.get(k))
    if where or origin.get("upstream"):
        extra = f"; license {origin['license']}" if origin.get("license") else ""
        upstream = f"; upstream {origin['upstream']}" if origin.get("upstream") else ""
        event(printable(f"source: {where or origin.get('file', '?')}{extra}{upstream}", limit=400), out)
    names = {"input_size": "input size", "threshold": "threshold", "nms_iou": "NMS IoU"}
    shown = ", ".join(f"{names[k]} {v}" for k, v in defaults.items()) or "none (the tool's own)"
    event(f"defaults: {shown}", out)
    if HEADS.get(str(origin.get("head"))) is not None:
        # What the sweep over input sizes measured, and why the defaults: docs/models.md (a model
        # converted before they moved there records its reason in its sidecar).
        reason = origin.get(DEFAULTS_REASON)
        why = reason if isinstance(reason, str) and reason else "the --input-size sweep in docs/models.md"
        say(printable(f"  why: {why}", limit=600), out)
    if origin.get("built_in"):
        event(printable(f"inside the model: {origin['built_in']}", limit=300), out)
    event(_plan_line(plan), out)
    event(f"classes ({len(classes)}): " + ", ".join(f"{c} {label_for(c)}" for c in classes), out)
    return EXIT_OK


def _onnx_lines(origin: dict[str, object], out: TextIO) -> None:
    """What `detect.model.onnx` recognised: layout, input, boxes and classes, each with where it came from."""
    opsets = origin.get("opsets")
    made = ", ".join(f"{domain} {version}" for domain, version in opsets.items()) if isinstance(opsets, dict) else "?"
    event(printable(f"ONNX: made by {origin.get('producer') or 'an unnamed producer'}, opsets {made}", limit=300), out)
    event(printable(f"layout: {LAYOUT_TITLES.get(str(origin.get('layout')), origin.get('layout'))}", limit=300), out)
    for key, name in (("input", "input"), ("boxes_from", "boxes"), ("classes_from", "classes from")):
        say(printable(f"  {name}: {origin.get(key)}", limit=400), out)


def onnx_plan() -> CpuPlan:
    """An ONNX model runs on OpenVINO, which reads the file itself: nothing converted, no TensorFlow runtime."""
    version = openvino.version()
    return CpuPlan("openvino" if version else "none", "ONNX runs on OpenVINO only", version)


def _plan_line(plan: CpuPlan) -> str:
    if plan.why == "ONNX runs on OpenVINO only":
        return (f"runtime: OpenVINO {plan.version}, reading the ONNX file itself (nothing converted; no TensorFlow "
                f"runtime for ONNX)" if plan.version else "runtime: none: ONNX runs on OpenVINO, which is not installed")
    if plan.runtime != "openvino":
        return f"runtime on a CPU: TensorFlow ({plan.why})"
    if not plan.converted:
        return (f"runtime on a CPU: OpenVINO {plan.version}; not converted yet: the first run converts the "
                f"network (3-10 s) into {plan.cache}")
    shapes = ", ".join("x".join(str(d) for d in n.shape) for n in plan.converted)
    return (f"runtime on a CPU: OpenVINO {plan.version}; network converted for inputs {shapes} "
            f"(an even batch runs as two halves) in {plan.cache}")


def _plan_json(plan: CpuPlan) -> dict:
    return {"runtime": plan.runtime, "why": plan.why, "version": plan.version,
            "cache": str(plan.cache) if plan.cache else None,
            "converted": [{"input_shape": list(n.shape), "dtype": n.dtype} for n in plan.converted]}
