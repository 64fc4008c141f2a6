"""What `--tile` costs: the pipeline (no outputs) with and without tiles, interleaved, on the real
frame's images; images per second and the ratio, medians over repeats.

    python -m detect.tools.bench_tiles [--images 20] [--tile 512] [--repeats 3]

`make bench` runs it after the COCO model's rates (`detect.tools.bench`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from detect.engine.loading import choose_settings, model_facts
from detect.model.detector import DEFAULT_BATCH_SIZE, Detector
from detect.model.inputs import parse_input_size
from detect.model.tiles import TileSpec, tile_layout
from detect.tools.bench_rows import TileImagesPerSecond, TileRates, TileRunsPerRepeat
from detect.tools.bench_runs import SHARED_FRAME, make_segments, pipeline

ROOT = Path(__file__).resolve().parents[2]


def tile_rates(model: Path, segment: Path, out: Path, *, tile: int = 512, repeats: int = 3,
               batch_size: int | None = None) -> TileRates:
    """Untiled and tiled pipeline rates (no outputs), each repeat one of each, back to back."""
    chosen = choose_settings(model)
    input_size = parse_input_size(chosen.input_size)
    detector = Detector(model, batch_size=batch_size or DEFAULT_BATCH_SIZE, nms_iou=chosen.nms_iou)
    facts = model_facts(detector, 0.0)
    spec = TileSpec(tile)
    plain, tiled = [], []
    for repeat in range(repeats):
        common = {"input_size": input_size, "write_frames": False, "gif": False}
        plain.append(pipeline(detector, facts, segment, out / "untiled", **common)[0])
        tiled.append(pipeline(detector, facts, segment, out / "tiled", tile=spec, **common)[0])
        print(f"  tiles repeat {repeat + 1}/{repeats}: untiled {plain[-1]:.2f}, tiled {tiled[-1]:.2f} images/s", flush=True)
    ratios = [p / t for p, t in zip(plain, tiled, strict=True)]
    return TileRates(model=facts.description, tile=spec.to_json(), tiles_per_1920x1280=len(tile_layout(1920, 1280, spec)),
                     tiles_per_1920x886=len(tile_layout(1920, 886, spec)),
                     images_per_s=TileImagesPerSecond(untiled=statistics.median(plain), tiled=statistics.median(tiled)),
                     slowdown=statistics.median(ratios), raw=TileRunsPerRepeat(untiled=plain, tiled=tiled))


def tile_lines(r: TileRates) -> list[str]:
    ips = r.images_per_s
    return ["", f"--tile {r.tile['size']} ({r.model}; {r.tiles_per_1920x1280} tiles + the whole image on a "
            f"1920x1280 frame, {r.tiles_per_1920x886} on 1920x886), pipeline without outputs:",
            f"  untiled {ips.untiled:.2f} images/s, tiled {ips.tiled:.2f} images/s: {r.slowdown:.1f}x slower "
            f"(median over repeats of each repeat's ratio)"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_tiles", description=__doc__.splitlines()[0])
    parser.add_argument("--coco-model", type=Path, default=ROOT / "models" / "centernet_mobilenetv3_coco")
    parser.add_argument("--frame", type=Path, default=SHARED_FRAME)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--tile", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.frame.exists() or not (args.coco_model / "saved_model.pb").exists():
        print(f"bench_tiles: needs the real frame ({args.frame}) and the COCO model (make coco-model)", file=sys.stderr)
        return 2
    segments = make_segments(args.frame, args.out, [args.images])
    for line in tile_lines(tile_rates(args.coco_model, segments[args.images], args.out / "tiles", tile=args.tile,
                                      repeats=args.repeats)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
