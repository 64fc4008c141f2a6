"""What each output costs on disk per camera image, measured on the real Waymo frame: the numbers
behind `detect.results.disk_cost.BYTES_PER_IMAGE` (`detect run` prints its estimate from them).

    python -m detect.tools.disk_sizes [--frame ../shared/fixtures/waymo_v1_one_frame.tfrecord]
                                      [--model models/centernet_mobilenetv3_coco]

Two `detect segment` runs of the frame's 5 images (3 at 1920x1280, 2 at 1920x886): PNG frames with
GIFs and MP4s, then JPEG frames. Each output's bytes over the images it holds; the frames' count
their mosaic tiles (`.detect/mosaic/`, written with them). A GIF frame is
encoded on its own (no inter-frame delta), so one frame's share is what every frame costs; an
MP4 of one frame is a key frame, an upper bound for the frames of a video.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from detect.results.disk_cost import ANIMATION_WIDTH
from detect.results.journal import STATE_DIR
from detect.results.mosaic_tiles import TILE_SUFFIX, TILES_DIR

ROOT = Path(__file__).resolve().parents[2]
FRAME = ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"
TABLES = ("detections.parquet", "ground_truth.parquet", "manifest.json")


def measure(frame: Path, model: Path | None) -> dict[str, int]:
    """Bytes per camera image of each output kind (a mosaic's share of its timestamp's frame)."""
    from detect.cli import main

    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, flags in (("png", ["--mp4"]), ("jpg", ["--frame-format", "jpg", "--no-gif"])):
            out = Path(tmp) / kind
            model_flags = ["--model", str(model)] if model else []
            code = main(["segment", str(frame), "--out", str(out), "--no-eval", "--no-report", "--quiet",
                         "--gif-width", str(ANIMATION_WIDTH), *model_flags, *flags])
            if code:
                raise SystemExit(f"disk_sizes: detect segment exited {code}")
            (segment,) = [p for p in out.iterdir() if (p / "manifest.json").is_file()]
            frames = sorted((segment / "frames").rglob(f"*.{kind}"))
            images = len(frames)
            tiles = sorted((segment / STATE_DIR / TILES_DIR).rglob(f"*{TILE_SUFFIX}"))  # kept with the frames
            sizes[kind] = round(sum(p.stat().st_size for p in frames + tiles) / images)
            if kind == "png":
                cameras = [p for p in segment.glob("*.gif") if p.stem != "mosaic"]
                sizes["gif"] = round(sum(p.stat().st_size for p in cameras) / images)
                sizes["mosaic_gif"] = round((segment / "mosaic.gif").stat().st_size / images)
                videos = list(segment.glob("*.mp4"))
                sizes["mp4"] = round(sum(p.stat().st_size for p in videos) / images)  # mosaic.mp4 too
                sizes["tables"] = round(sum((segment / name).stat().st_size for name in TABLES
                                            if (segment / name).is_file()) / images)
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.disk_sizes", description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=Path, default=FRAME)
    parser.add_argument("--model", type=Path, help="default: the model `detect segment` uses")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.frame, args.model), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
