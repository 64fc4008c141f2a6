"""CPU per image of each output stage of a stub-model `detect segment` run (PNG frames, default
outputs unless told otherwise), from a profile of every thread in thread CPU time.

    python -m detect.tools.bench_stages [--images 200] [--repeats 3] [--no-png] [--no-gif]

The stub model (near free, like a GPU) on a synthetic segment of the real frame's five JPEGs, in
this process with one render thread (so every stage runs here); a first run warms up. Each stage
is the thread CPU time of the functions named in `STAGES`, timed by wrappers, exclusive: a stage
called inside another (the chips inside the drawing) counts only as itself. "rest" is the
process's CPU (os.times: TensorFlow's native decode threads, the reader, the queues) less the
stages; the decode, with and without the model's input resize, is then measured alone on the same
images, to show what of "rest" is TensorFlow's. Where the whole run's functions go: `python -m
cProfile -s tottime` of the same run.
The stages are found by name, so the same command against an older checkout (PYTHONPATH) gives
the "before" (a stage its code lacks shows 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import inspect
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from detect.engine.tuning import keep_freed_memory
from detect.tools.bench_runs import SHARED_FRAME, cpu_seconds, make_segments

ROOT = Path(__file__).resolve().parents[2]
# stage -> (module under detect, function or Class.method) pairs; `a|b`: a module that moved (the
# first found is timed).
STAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "draw (boxes, verdicts, watermark)": (("render.draw", "draw_detections"), ("render.verdicts", "judge"),
                                          ("render.verdicts", "draw_errors"), ("render.draw", "paint_watermark")),
    "chips (layout)": (("render.chip_layout", "lay_out_chips"),),
    "chips (paint)": (("render.chips", "paint_chip_at"),),
    "trails": (("render.trails", "paint_trails"), ("render.trails", "trail_rects")),
    "mosaic tile (shrink the raw frame)": (("render.mosaic_tile", "shrink"),),
    "mosaic tile (draw)": (("render.mosaic_tile", "draw_mosaic_tile"),),
    "PNG frame (fpng + write)": (("results.frames", "write_frame"),),
    "JPEG tile (encode, write, read back)": (("results.mosaic_tiles", "write_tile"),),
    "GIF frame (camera: shrink, quantize, LZW)": (("results.animations", "prepare_animation_frame"),),
    "mosaic frame (compose, quantize, LZW)": (("results.animations", "render_mosaic_frame"),),
    "GIF files (append, write)": (("results.gif", "GifWriter.append"),),
    "track (live, for the pictures)": (("track.live", "LiveTracks.update"),),
    "track (the table, at the end)": (("results.track_ids|results.tracks", "track_table"),),
    "table (detections.parquet)": (("results.table", "write_table"),),
    "journal": (("results.journal", "Journal.append"),),
    "decode (tf.data's Python side, frame copies)": (("model.inputs", "decode_stream"),),
}


@dataclasses.dataclass
class StageClock:
    """Thread CPU seconds per stage, exclusive: time a stage spends inside another stage counts there."""

    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    local: threading.local = dataclasses.field(default_factory=threading.local)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def wrap(self, stage: str, func: Callable[..., Any]) -> Callable[..., Any]:
        """`func` timed into `stage`; a generator function's time is that of each item it yields."""
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def timed_items(*args: Any, **kwargs: Any) -> Iterator[Any]:
                items = func(*args, **kwargs)
                while True:
                    try:
                        item = self.call(stage, next, items)
                    except StopIteration:
                        return
                    yield item
            return timed_items

        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            return self.call(stage, func, *args, **kwargs)
        return timed

    def call(self, stage: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        stack = self.local.__dict__.setdefault("stack", [])
        stack.append(0.0)  # the time of stages nested in this call
        start = time.thread_time()
        try:
            return func(*args, **kwargs)
        finally:
            spent = time.thread_time() - start
            nested = stack.pop()
            if stack:
                stack[-1] += spent
            with self.lock:
                self.seconds[stage] = self.seconds.get(stage, 0.0) + spent - nested


def _module(name: str) -> Any:
    """`detect.<name>` (`a|b`: the first of these there), or where an older checkout had it (results/
    was sinks/); None when none is there."""
    for candidate in [c for n in name.split("|") for c in (n, n.replace("results.", "sinks.", 1))]:
        try:
            return importlib.import_module(f"detect.{candidate}")
        except ModuleNotFoundError:
            continue
    return None


def install(clock: StageClock) -> Callable[[], None]:
    """Every function of `STAGES` timed by `clock`, wherever a loaded detect module holds it (its
    own module, modules that imported it by name, the class of a method); returns the undo."""
    undo: list[tuple[object, str, object]] = []
    for stage, names in STAGES.items():
        for module_name, qualname in names:
            module = _module(module_name)
            if module is None:  # not in this checkout
                continue
            owner_name, _, attr = qualname.rpartition(".")
            owner = getattr(module, owner_name, None) if owner_name else module
            original = getattr(owner, attr, None)
            if original is None:  # not in this checkout
                continue
            timed = clock.wrap(stage, original)
            holders = [owner] if owner_name else [m for n, m in list(sys.modules.items())
                                                  if n.startswith("detect.") and getattr(m, attr, None) is original]
            for holder in holders:
                undo.append((holder, attr, original))
                setattr(holder, attr, timed)

    def restore() -> None:
        for holder, attr, original in reversed(undo):
            setattr(holder, attr, original)
    return restore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_stages", description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=ROOT / "models" / "build", help="where the stub model is (built)")
    parser.add_argument("--frame", type=Path, default=SHARED_FRAME, help="the real Waymo frame to build inputs from")
    parser.add_argument("--out", type=Path, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--no-gif", action="store_true")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as the `detect` command does
    if args.out is None:
        with tempfile.TemporaryDirectory() as scratch:
            return measure(args, Path(scratch))
    return measure(args, args.out)


def measure(args: argparse.Namespace, out: Path) -> int:
    from detect.engine.loading import load_model
    from detect.engine.local import process_segment
    from detect.engine.spec import ModelSpec, SegmentSettings
    from detect.waymo.sources import resolve_one

    stub = args.models / "stub_dynamic"
    if not (stub / "saved_model.pb").exists():
        import subprocess
        subprocess.run([sys.executable, str(ROOT / "models" / "build_stub.py"), "--out", str(args.models)], check=True)
    segment = make_segments(args.frame, out, [args.images])[args.images]
    loaded = load_model(ModelSpec(path=stub))
    settings = SegmentSettings(mode="overwrite", workers=1, render="threads", write_frames=not args.no_png,
                               gif=not args.no_gif)

    def run() -> int:
        report = process_segment(resolve_one(str(segment)), out / "runs", loaded.detector, settings,
                                 model_facts=loaded.facts)
        return report.images_processed

    run()  # warm-up: graphs traced, caches filled
    rows: dict[str, list[float]] = {}
    inside: dict[str, list[float]] = {}
    for _ in range(args.repeats):
        clock = StageClock()
        restore = install(clock)
        before = os.times()
        try:
            images = run()
        finally:
            restore()
        after = os.times()
        cpu_ms = 1000 * (after.user + after.system - before.user - before.system) / images
        stages = {stage: 1000 * clock.seconds.get(stage, 0.0) / images for stage in STAGES}
        stages["rest (the process's CPU less the stages)"] = cpu_ms - sum(stages.values())
        stages["whole process"] = cpu_ms
        for stage, ms in stages.items():
            rows.setdefault(stage, []).append(ms)
        for stage, ms in inside_rest(segment, settings).items():
            inside.setdefault(stage, []).append(ms)
    outputs = "frames" if not args.no_png else "no frames"
    outputs += ", GIFs" if not args.no_gif else ", no GIFs"
    print(f"CPU ms an image by stage, stub model, {args.images} images ({outputs}), median of {args.repeats} runs")
    for stage, values in rows.items():
        print(f"  {stage:<46} {statistics.median(values):7.2f}")
    print("inside the rest, measured alone on the same images (process CPU: TensorFlow's threads)")
    for stage, values in inside.items():
        print(f"  {stage:<46} {statistics.median(values):7.2f}")
    return 0


def inside_rest(segment: Path, settings: Any) -> dict[str, float]:
    """CPU ms an image of the decode alone (tf.data, the full frame kept as the run keeps it), with
    and without the model's input resize: the part of "rest" that is TensorFlow's native work."""
    from detect.model.inputs import decode_stream
    from detect.waymo.readers import iter_frames

    def cpu_ms(input_size: Any) -> float:
        items = ((i, f.jpeg) for i, f in enumerate(iter_frames(str(segment))))
        start, images = cpu_seconds(), 0
        for _ in decode_stream(items, input_size=input_size, keep_full=True):  # each frame dropped at once
            images += 1
        return 1000 * (cpu_seconds() - start) / images

    resized, decoded = cpu_ms(settings.input_size), cpu_ms(None)
    return {"JPEG decode (tf.data)": decoded, "the model's input resize": resized - decoded}


if __name__ == "__main__":
    raise SystemExit(main())
