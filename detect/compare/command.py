"""`detect compare A B --out DIR`: two results folders over the same frames, side by side.

Writes DIR/compare.json (every number), DIR/compare.html (the page), an A | B animation per
camera and the frames where they disagree most; returns the summary lines the CLI prints.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from detect.compare import page, pictures
from detect.compare.sides import Pairing, Side, load_side, pair
from detect.compare.stats import Collected, average_precision, bootstrap_difference, collect
from detect.core.atomic import atomic_write_bytes
from detect.core.errors import UsageError
from detect.core.matching import COCO_PROTOCOL, Protocol
from detect.core.records import WaymoType
from detect.model.classmap import load_class_map
from detect.sinks.layout import real_folder

COMPARE_FILE, PAGE_FILE = "compare.json", "compare.html"
DEFAULT_REPLICATES = 1000
# Fewer frames than this give no interval: resampling 1-4 frames says nothing about the noise.
MIN_FRAMES = 5


@dataclasses.dataclass(frozen=True)
class TypeComparison:
    """One Waymo type: each side's AP (None: not evaluated), the difference and its interval."""

    name: str
    labels: int
    ap_a: float | None  # None: no labels, or the model cannot output the type
    ap_b: float | None
    difference: float | None  # B - A
    low: float | None  # 95% paired-bootstrap interval of the difference
    high: float | None
    found_by_both: int
    only_a: int
    only_b: int
    neither: int
    outputs_a: bool  # the model has a class of this type
    outputs_b: bool

    @property
    def verdict(self) -> str:
        if self.difference is None or self.low is None or self.high is None:
            return "-"
        if self.low > 0:
            return "B better"
        if self.high < 0:
            return "A better"
        return "within noise"


@dataclasses.dataclass(frozen=True)
class Result:
    comparison: dict[str, Any]
    lines: list[str]
    written: list[Path]
    notes: list[str]


def run_compare(a_path: Path, b_path: Path, out: Path, *, class_map_path: Path | None = None,
                protocol: Protocol = COCO_PROTOCOL, replicates: int = DEFAULT_REPLICATES, seed: int = 0,
                gt: str | None = None) -> Result:
    if replicates < 0:
        raise UsageError(f"--bootstrap {replicates}: must be 0 or more")
    class_map = load_class_map(class_map_path)
    a, b = load_side("A", a_path, class_map, gt), load_side("B", b_path, class_map, gt)
    pairing = pair(a, b)
    collected = collect(a, b, pairing.common, dict(pairing.labels) if pairing.labels else None, class_map, protocol)
    types = _types(a, b, pairing, collected, replicates, seed)
    comparison = _comparison(a, b, pairing, collected, types, protocol, replicates, seed)
    target = real_folder(Path(out))
    names = (_short(f"A: {a.facts()['model']}"), _short(f"B: {b.facts()['model']}"))
    frames_a = pictures.frame_files({n: s.directory for n, s in a.segments.items()})
    frames_b = pictures.frame_files({n: s.directory for n, s in b.segments.items()})
    notes = [*a.notes, *b.notes, *pairing.left_out_lines()]
    if not frames_a or not frames_b:
        notes.append(f"{'A' if not frames_a else 'B'} wrote no annotated frames (--no-png): no pictures to compare")
    animations = pictures.animations(pairing.common, frames_a, frames_b, names, target, notes)
    shown = pictures.gallery([d.key for d in collected.disagreement], frames_a, frames_b, names, target, notes)
    comparison["animations"] = [p.name for p in animations]
    comparison["gallery"] = [{"image": _key(k), "file": p.name, "frame_a": str(frames_a[k]), "frame_b": str(frames_b[k]),
                              "disagreement": next(d.count for d in collected.disagreement if d.key == k)}
                             for k, p in shown.items()]
    comparison["notes"] = notes
    data = atomic_write_bytes(target / COMPARE_FILE, (json.dumps(comparison, indent=2, allow_nan=False) + "\n").encode())
    html = page.write(target / PAGE_FILE, comparison, [k for k in shown], collected.disagreement, shown)
    return Result(comparison, summary_lines(comparison, types) + [f"page: {html}"], [data, html, *animations,
                                                                                      *shown.values()], notes)


def _types(a: Side, b: Side, pairing: Pairing, collected: Collected, replicates: int, seed: int) -> list[TypeComparison]:
    out: list[TypeComparison] = []
    if not pairing.labels:
        return out  # agreement only
    for waymo_type in sorted(set(a.types) | set(b.types)):
        if not any(int(np.count_nonzero(lab.types == waymo_type)) for lab in pairing.labels.values()):
            continue  # no labels of this type (SIGN, in Waymo's 2D labels): nothing to say
        rec_a, rec_b = collected.records["A"].get(waymo_type), collected.records["B"].get(waymo_type)
        ap_a = average_precision(rec_a) if rec_a is not None else None
        ap_b = average_precision(rec_b) if rec_b is not None else None
        labels = int((rec_a or rec_b).labels.sum()) if (rec_a or rec_b) is not None else 0  # type: ignore[union-attr]
        difference = low = high = None
        if ap_a is not None and ap_b is not None and rec_a is not None and rec_b is not None:
            difference = ap_b - ap_a
            if replicates and collected.frames >= MIN_FRAMES:
                diffs = bootstrap_difference(rec_a, rec_b, replicates, seed)
                diffs = diffs[~np.isnan(diffs)]
                if len(diffs):
                    low, high = (float(v) for v in np.percentile(diffs, [2.5, 97.5]))
        found = collected.found.get(waymo_type, np.zeros((0, 2), bool))
        out.append(TypeComparison(WaymoType(waymo_type).name, labels, ap_a, ap_b, difference, low, high,
                                  int((found[:, 0] & found[:, 1]).sum()), int((found[:, 0] & ~found[:, 1]).sum()),
                                  int((~found[:, 0] & found[:, 1]).sum()), int((~found[:, 0] & ~found[:, 1]).sum()),
                                  waymo_type in a.types, waymo_type in b.types))
    return out


def _comparison(a: Side, b: Side, pairing: Pairing, collected: Collected, types: list[TypeComparison],
                protocol: Protocol, replicates: int, seed: int) -> dict[str, Any]:
    facts_a, facts_b = a.facts(), b.facts()
    agreement = {}
    for waymo_type, agree in collected.agreement.items():
        agreement[WaymoType(waymo_type).name] = {"pairs": agree.pairs, "only_a": agree.only_a, "only_b": agree.only_b,
                                                 "score_correlation": _correlation(agree.scores)}
    return {
        "a": facts_a, "b": facts_b,
        "differs": sorted(k for k in facts_a if k not in ("results", "images/s", "detect ms/image")
                          and facts_a[k] != facts_b[k]),
        "images": len(pairing.common), "frames": collected.frames,
        "left_out": pairing.left_out_lines(),
        "labels": pairing.labels_from,
        "protocol": {"name": protocol.name, "title": protocol.describe(), "ap_name": protocol.ap_name},
        "bootstrap": {"replicates": replicates, "seed": seed, "unit": "frames (every camera of one timestamp)",
                      "min_frames": MIN_FRAMES,
                      "interval": "2.5th-97.5th percentile of AP(B) - AP(A)"},
        "types": [dataclasses.asdict(t) | {"verdict": t.verdict} for t in types],
        "agreement": agreement,
        "boxes_per_image": {"A": float(collected.drawn["A"].mean()), "B": float(collected.drawn["B"].mean())},
    }


def summary_lines(comparison: dict[str, Any], types: list[TypeComparison]) -> list[str]:
    a, b = comparison["a"], comparison["b"]
    lines = [f"A: {a['model']} ({a['results']})", f"B: {b['model']} ({b['results']})",
             f"{comparison['images']} common images ({comparison['frames']} frames); "
             f"differs: {', '.join(comparison['differs']) or 'nothing recorded'}"]
    if comparison["labels"]:
        ap = comparison["protocol"]["ap_name"]
        few = comparison["frames"] < MIN_FRAMES
        lines.append(f"{comparison['protocol']['title']}; intervals: paired bootstrap over frames"
                     + (f" (none: {comparison['frames']} frame(s), at least {MIN_FRAMES} needed)" if few else ""))
        lines.append(f"{'type':<11}{'labels':>7}{ap + ' A':>11}{ap + ' B':>11}{'B - A':>8}  {'95% interval':<18}verdict")
        for t in types:
            interval = "-" if t.low is None or t.high is None else f"[{t.low:+.3f}, {t.high:+.3f}]"
            lines.append(f"{t.name:<11}{t.labels:>7}{_ap(t.ap_a, t.outputs_a):>11}{_ap(t.ap_b, t.outputs_b):>11}"
                         f"{_fmt(t.difference, '+'):>8}  {interval:<18}{t.verdict}")
    else:
        lines.append("no labels: agreement only")
    for name, agree in comparison["agreement"].items():
        if not (agree["pairs"] or agree["only_a"] or agree["only_b"]):
            continue  # neither drew a box of this type
        corr = agree["score_correlation"]
        lines.append(f"{name}: {agree['pairs']} boxes in both, {agree['only_a']} only in A, {agree['only_b']} only in B"
                     + ("" if corr is None else f"; score correlation {corr:.2f}"))
    return lines


def _correlation(scores: tuple[tuple[float, float], ...]) -> float | None:
    if len(scores) < 3:
        return None
    values = np.asarray(scores)
    if values[:, 0].std() == 0 or values[:, 1].std() == 0:
        return None
    value = float(np.corrcoef(values[:, 0], values[:, 1])[0, 1])
    return None if math.isnan(value) else value


def _key(key: Any) -> dict[str, Any]:
    return {"segment": key.segment_context_name, "timestamp": key.frame_timestamp_micros, "camera": key.camera_name.name}


def _fmt(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.3f}"


def _ap(value: float | None, outputs: bool) -> str:
    return "not output" if not outputs else _fmt(value)


def _short(name: str, limit: int = 52) -> str:
    """A side's name as it fits above a 480-px picture."""
    return name if len(name) <= limit else name[: limit - 3] + "..."
