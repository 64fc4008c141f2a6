"""What the COCO model's default input size costs: the model alone at its default size against the
512x512 letterbox it ran at before (issue 33: at most 2.6x), the sizes interleaved round by round.

    python -m detect.tools.bench_sizes [--coco-model models/centernet_mobilenetv3_coco] [--rounds 5]

`make bench` runs it after the COCO model's rates (`detect.tools.bench`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from detect.engine.loading import choose_settings
from detect.tools.bench_targets import verdict
from detect.tools.sweep import model_ms

ROOT = Path(__file__).resolve().parents[2]
BEFORE = "native"  # the full frame letterboxed into 512x512 inside the model
MAX_RATIO = 2.6


@dataclasses.dataclass(frozen=True)
class SizeCost:
    """Median ms per image of the model alone at its default size and at the 512 letterbox."""

    default_size: str
    default_ms: float
    before_ms: float

    @property
    def ratio(self) -> float:
        return self.default_ms / self.before_ms


def size_cost(model: Path, rounds: int = 5) -> SizeCost:
    default = choose_settings(model).input_size
    ms = model_ms(model, [BEFORE, default], rounds)
    return SizeCost(default, ms[default], ms[BEFORE])


def size_lines(cost: SizeCost) -> list[str]:
    return ["", f"input size: the model alone at its default {cost.default_size} {cost.default_ms:.0f} ms/image, at "
            f"the 512x512 letterbox {cost.before_ms:.0f} ms/image: {cost.ratio:.2f}x "
            f"{verdict(cost.ratio, MAX_RATIO, above=False)}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.bench_sizes", description=__doc__.splitlines()[0])
    parser.add_argument("--coco-model", type=Path, default=ROOT / "models" / "centernet_mobilenetv3_coco")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if not (args.coco_model / "saved_model.pb").is_file():
        print(f"bench_sizes: no converted model at {args.coco_model} (make coco-model)", file=sys.stderr)
        return 2
    for line in size_lines(size_cost(args.coco_model, args.rounds)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
