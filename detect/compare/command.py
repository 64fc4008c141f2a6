"""`detect compare A B --out DIR`: two results folders over the same frames, side by side.

Writes DIR/compare.json (every number), DIR/compare.html (the page), an A | B animation per
camera and the frames where they disagree most; returns the summary lines the CLI prints.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from detect.compare import page, pictures
from detect.compare.close_ups import write_close_ups
from detect.compare.comparison import (
    MIN_FRAMES,
    AgreementRow,
    Comparison,
    GalleryEntry,
    SideFacts,
    TypeComparison,
)
from detect.compare.naming import side_names
from detect.compare.sides import Pairing, Side, load_side, pair
from detect.compare.stats import Collected, Mark, average_precision, bootstrap_difference, collect
from detect.compare.tracking import compare_tracking, tracking_lines
from detect.core.atomic import atomic_write_bytes
from detect.core.errors import UsageError
from detect.core.matching import COCO_PROTOCOL, Protocol
from detect.core.names import counted
from detect.core.records import WaymoType
from detect.model.classmap import load_class_map
from detect.sinks.layout import real_folder

COMPARE_FILE, PAGE_FILE = "compare.json", "compare.html"
DEFAULT_REPLICATES = 1000


@dataclasses.dataclass(frozen=True)
class Result:
    comparison: Comparison
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
    tracking, tracking_notes = compare_tracking(a, b, pairing, class_map, protocol, replicates, seed)
    comparison = dataclasses.replace(_comparison(a, b, pairing, collected, types, protocol, replicates, seed),
                                     tracking=tuple(tracking))
    target = real_folder(Path(out))
    names = (f"A: {comparison.names[0]}", f"B: {comparison.names[1]}")
    frames_a = pictures.frame_files({n: s.directory for n, s in a.segments.items()})
    frames_b = pictures.frame_files({n: s.directory for n, s in b.segments.items()})
    notes = [*a.notes, *b.notes, *pairing.left_out_lines(), *tracking_notes]
    if not frames_a or not frames_b:
        notes.append(f"{'A' if not frames_a else 'B'} wrote no annotated frames (--no-png): no pictures to compare")
    marks = {d.key: d.marks for d in collected.disagreement}
    animations = pictures.animations(pairing.common, frames_a, frames_b, names, target, notes, marks)
    drawn = [d for d in collected.disagreement if d.key in frames_a and d.key in frames_b]
    chosen = {d.key: d for d in pictures.spread(drawn)}
    shown = pictures.gallery(list(chosen.values()), frames_a, frames_b, names, target, notes)
    ups = write_close_ups([chosen[k] for k in shown], a, b, frames_a, comparison.names, target, notes)
    gallery = tuple(GalleryEntry(k, p.name, str(frames_a[k]), str(frames_b[k]), chosen[k].count,
                                 _found_by(chosen[k].marks, "A"), _found_by(chosen[k].marks, "B"),
                                 tuple(c.file for c in ups.get(k, ())))
                    for k, p in shown.items())
    comparison = dataclasses.replace(comparison, animations=tuple(p.name for p in animations), gallery=gallery,
                                     notes=tuple(notes))
    data = atomic_write_bytes(target / COMPARE_FILE,
                              (json.dumps(comparison.to_json(), indent=2, allow_nan=False) + "\n").encode())
    html = page.write(target / PAGE_FILE, comparison, list(shown), list(chosen.values()), shown, ups)
    close_up_files = [target / c.file for found in ups.values() for c in found]
    return Result(comparison, summary_lines(comparison, types) + [f"page: {html}"],
                  [data, html, *animations, *shown.values(), *close_up_files], notes)


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
                protocol: Protocol, replicates: int, seed: int) -> Comparison:
    agreement = {WaymoType(waymo_type).name: AgreementRow(agree.pairs, agree.only_a, agree.only_b,
                                                          _correlation(agree.scores))
                 for waymo_type, agree in collected.agreement.items()}
    facts_a, facts_b = a.facts(), b.facts()
    return Comparison(a=facts_a, b=facts_b, names=side_names(facts_a, facts_b), images=len(pairing.common),
                      frames=collected.frames,
                      left_out=tuple(pairing.left_out_lines()), labels=pairing.labels_from, protocol=protocol,
                      replicates=replicates, seed=seed, types=tuple(types), agreement=agreement,
                      boxes_per_image=(float(collected.drawn["A"].mean()), float(collected.drawn["B"].mean())))


def summary_lines(comparison: Comparison, types: list[TypeComparison]) -> list[str]:
    a, b = comparison.a, comparison.b
    lines = [_side_line("A", comparison.names[0], a), _side_line("B", comparison.names[1], b),
             f"{counted(comparison.images, 'common image')} ({counted(comparison.frames, 'frame')}); "
             f"differs: {', '.join(comparison.differs) or 'nothing recorded'}"]
    if comparison.labels:
        ap = comparison.protocol.ap_name
        few = comparison.frames < MIN_FRAMES
        lines.append(f"{comparison.protocol.describe()}; intervals: paired bootstrap over frames"
                     + (f" (none: {counted(comparison.frames, 'frame')}, at least {MIN_FRAMES} needed)" if few else ""))
        lines.append(f"{'type':<11}{'labels':>7}{ap + ' A':>11}{ap + ' B':>11}{'B - A':>8}  {'95% interval':<18}verdict")
        for t in types:
            interval = "-" if t.low is None or t.high is None else f"[{t.low:+.3f}, {t.high:+.3f}]"
            lines.append(f"{t.name:<11}{t.labels:>7}{_ap(t.ap_a, t.outputs_a):>11}{_ap(t.ap_b, t.outputs_b):>11}"
                         f"{_fmt(t.difference, '+'):>8}  {interval:<18}{t.verdict}")
        lines.extend(tracking_lines(comparison.tracking))
    else:
        lines.append("no labels: agreement only")
    for name, agree in comparison.agreement.items():
        if not (agree.pairs or agree.only_a or agree.only_b):
            continue  # neither drew a box of this type
        corr = agree.score_correlation
        lines.append(f"{name}: {counted(agree.pairs, 'box')} in both, {agree.only_a} only in A, {agree.only_b} only in B"
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


def _fmt(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.3f}"


def _ap(value: float | None, outputs: bool) -> str:
    return "not output" if not outputs else _fmt(value)


def _side_line(label: str, name: str, facts: SideFacts) -> str:
    """"A: tiles 512; CenterNet MobileNetV3 (results/tiled)": the side's name, its model, its folder."""
    model = "" if facts.model is None or name.startswith(facts.model) else f"; {facts.model}"
    return f"{label}: {name}{model} ({facts.results})"


def _found_by(marks: tuple[Mark, ...], side: str) -> int:
    return sum(1 for m in marks if m.found_by == side)
