"""Fingerprints of every file a run, its report and a comparison write, timing aside.

A restructuring must not change what users get: run this before and after it, on the same
machine, and the two listings must be equal. It runs `detect segment` twice on one input (the
real Waymo frame by default: threshold 0.3 and 0.4, so the comparison has two sides that differ),
`detect compare` of the two, and prints one line per file, `sha256  relative/path`.

What differs between two runs of the same code is left out of the fingerprint, so that only
behaviour shows: in JSON files, keys that hold clock readings (durations, rates, start and end
times, file modification times); in HTML pages, the same readings in the text; the time chart
(`stages.png`) and the lock file are listed without a digest.

    python -m detect.tools.pin_outputs --model models/centernet_mobilenetv3_coco > before.txt
    ... change the code ...
    python -m detect.tools.pin_outputs --model models/centernet_mobilenetv3_coco > after.txt
    diff before.txt after.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from detect.cli import main as detect

ROOT = Path(__file__).resolve().parents[2]
FRAME = ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"
# JSON keys whose values are clock readings (or derived from them).
CLOCK_KEYS = re.compile(r"(_s|_seconds|_at|_ns|per_second|_ms|seconds|stages|stage_ms|stage_seconds|timings?|images/s|ms/image)$")
CLOCK_TEXT = [
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"),  # ISO times
    re.compile(r"[\d.]+ images/s over [\d.]+ s \([\d.]+ s in all\)"),
    re.compile(r"[\d.]+ (?:images/s|ms/image|ms per image|s)\b"),
    # a table row of speeds: its label cell, then one cell per side
    re.compile(r"(<td>(?:images/s|detect ms/image)</td>)(?:<td[^>]*>[\d.]+</td>)+"),
]
UNSTABLE_FILES = {"stages.png", "lock"}


def _without_clocks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<clock>" if CLOCK_KEYS.search(k) else _without_clocks(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_clocks(v) for v in value]
    return value


def fingerprint(path: Path, work: Path) -> str:
    """The file's SHA-256, with clock readings and the work folder's path taken out of JSON and HTML first."""
    data = path.read_bytes()
    if path.suffix in (".json", ".html"):
        data = data.replace(str(work).encode(), b"<work>")
    if path.suffix == ".json":
        data = json.dumps(_without_clocks(json.loads(data)), sort_keys=True).encode()
    elif path.suffix == ".html":
        text = data.decode()
        for pattern in CLOCK_TEXT:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "<clock>", text)
        data = text.encode()
    return hashlib.sha256(data).hexdigest()


def listing(root: Path) -> list[str]:
    """`sha256  path` for every file under `root`, sorted by path (paths relative, work folder out)."""
    lines = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest = "-" * 64 if path.name in UNSTABLE_FILES else fingerprint(path, root)
        lines.append(f"{digest}  {path.relative_to(root)}")
    return lines


def run(model: Path, source: Path, work: Path, extra: list[str]) -> list[str]:
    """Both runs and their comparison under `work`; the listing of everything they wrote."""
    for name, threshold in (("a", "0.3"), ("b", "0.4")):
        code = detect(["segment", str(source), "--out", str(work / name), "--model", str(model), "--threshold", threshold,
                       "--quiet", *extra])
        if code:
            raise SystemExit(f"pin_outputs: detect segment exited {code}")
    code = detect(["compare", str(work / "a"), str(work / "b"), "--out", str(work / "compare"), "--quiet"])
    if code:
        raise SystemExit(f"pin_outputs: detect compare exited {code}")
    return listing(work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.pin_outputs", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "centernet_mobilenetv3_coco")
    parser.add_argument("--input", type=Path, default=FRAME)
    parser.add_argument("--keep", type=Path, help="write the runs here (default: a temporary folder, removed)")
    args, extra = parser.parse_known_args(argv)
    if args.keep:
        lines = run(args.model, args.input, args.keep, extra)
    else:
        with tempfile.TemporaryDirectory() as work:
            lines = run(args.model, args.input, Path(work), extra)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
