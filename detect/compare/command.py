"""`detect compare A B --out DIR`: two results folders over the same frames, side by side.

Writes DIR/compare.json (every number), DIR/compare.html (the page), an A | B animation per
camera and the frames where they disagree most; returns the summary lines the CLI prints.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from detect.compare import frame_pairs, page
from detect.compare.close_ups import write_close_ups
from detect.compare.comparison import (
    AgreementRow,
    Bootstrap,
    Change,
    Comparison,
    GalleryEntry,
    TypeComparison,
    ap_metric,
)
from detect.compare.naming import side_names
from detect.compare.sides import Pairing, Side, load_side, pair
from detect.compare.stats import Collected, Mark, PairedAP, collect
from detect.compare.terminal import summary_lines
from detect.compare.track_scores import tracked_types
from detect.core.atomic import atomic_write_bytes
from detect.core.errors import UsageError
from detect.core.matching import COCO_PROTOCOL, PROTOCOLS, Protocol
from detect.core.records import WaymoType
from detect.core.resample import BlockBootstrap, Difference, FrameIndex
from detect.model.classmap import ClassMap, load_class_map
from detect.results.layout import real_folder

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
    comparison, collected, tracking_notes = _numbers(a, b, pairing, class_map, protocol, replicates, seed)
    target = real_folder(Path(out))
    names = (f"A: {comparison.names[0]}", f"B: {comparison.names[1]}")
    frames_a = frame_pairs.frame_files({n: s.directory for n, s in a.segments.items()})
    frames_b = frame_pairs.frame_files({n: s.directory for n, s in b.segments.items()})
    notes = [*a.notes, *b.notes, *pairing.left_out_lines(), *tracking_notes]
    if not frames_a or not frames_b:
        notes.append(f"{'A' if not frames_a else 'B'} wrote no annotated frames (--no-png): no pictures to compare")
    marks = {d.key: d.marks for d in collected.disagreement}
    animations = frame_pairs.animations(pairing.common, frames_a, frames_b, names, target, notes, marks)
    drawn = [d for d in collected.disagreement if d.key in frames_a and d.key in frames_b]
    chosen = {d.key: d for d in frame_pairs.spread(drawn)}
    shown = frame_pairs.gallery(list(chosen.values()), frames_a, frames_b, names, target, notes)
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
    return Result(comparison, summary_lines(comparison) + [f"page: {html}"],
                  [data, html, *animations, *shown.values(), *close_up_files], notes)


def _numbers(a: Side, b: Side, pairing: Pairing, class_map: ClassMap, protocol: Protocol, replicates: int,
             seed: int) -> tuple[Comparison, Collected, list[str]]:
    """Every number of the comparison: AP per type under both protocols and the tracking scores, each
    with its interval from one moving-block bootstrap over the common frames; agreement per type."""
    index = FrameIndex.of(pairing.common)
    bootstrap = BlockBootstrap.of(index)
    collected = collect(a, b, pairing.common, dict(pairing.labels) if pairing.labels else None, class_map, protocol,
                        index)
    ap = _paired_ap(a, b, pairing, collected)
    tracked, notes = tracked_types(a, b, pairing, index, class_map, protocol)
    differences: list[Difference] = [*(p.difference for per_metric in ap.values() for p in per_metric.values()),
                                     *(t.difference for t in tracked)]
    intervals = iter(bootstrap.intervals(differences, replicates, seed))
    blocks = bootstrap.blocks
    types = [_type_row(waymo_type, per_metric, intervals, blocks, a, b, collected) for waymo_type, per_metric in ap.items()]
    tracking = [row for t in tracked for row in t.rows(next(intervals), blocks)]
    agreement = {WaymoType(waymo_type).name: AgreementRow(agree.pairs, agree.only_a, agree.only_b,
                                                          _correlation(agree.scores))
                 for waymo_type, agree in collected.agreement.items()}
    facts_a, facts_b = a.facts(), b.facts()
    comparison = Comparison(
        a=facts_a, b=facts_b, names=side_names(facts_a, facts_b), images=len(pairing.common), frames=len(index),
        left_out=tuple(pairing.left_out_lines()), labels=pairing.labels_from, protocol=protocol,
        bootstrap=Bootstrap(replicates, seed, blocks), types=tuple(types), agreement=agreement,
        boxes_per_image=(float(collected.drawn["A"].mean()), float(collected.drawn["B"].mean())),
        tracking=tuple(tracking))
    return comparison, collected, notes


def _paired_ap(a: Side, b: Side, pairing: Pairing, collected: Collected) -> dict[int, dict[str, PairedAP]]:
    """Per type with labels on the common images (SIGN has none in Waymo's 2D labels: nothing to say),
    per AP ("AP50", "AP70" for VEHICLE under Waymo's protocol): both sides' records. Where both
    protocols ask the same IoU they are one AP, resampled once."""
    if not pairing.labels:
        return {}  # agreement only
    labeled = {int(t) for image in pairing.labels.values() for t in image.types}
    out: dict[int, dict[str, PairedAP]] = {}
    for t in sorted((set(a.types) | set(b.types)) & labeled):
        out[t] = {}
        for name, protocol in PROTOCOLS.items():
            out[t].setdefault(ap_metric(protocol, t), PairedAP(collected.records["A"][name].get(t),
                                                               collected.records["B"][name].get(t)))
    return out


def _type_row(waymo_type: int, per_metric: dict[str, PairedAP], intervals: Iterator[list[tuple[float, float] | None]],
              blocks: int, a: Side, b: Side, collected: Collected) -> TypeComparison:
    """One type's row: its labels, AP under each protocol with the change, the labels each side found."""
    changes = {}
    for metric, paired in per_metric.items():
        [interval] = next(intervals)
        changes[metric] = Change.of(*paired.values(), interval, blocks)
    ap = {name: changes[ap_metric(protocol, waymo_type)] for name, protocol in PROTOCOLS.items()}
    records = next((r for p in per_metric.values() for r in (p.a, p.b) if r is not None), None)
    found = collected.found.get(waymo_type, np.zeros((0, 2), bool))
    by_a, by_b = found[:, 0], found[:, 1]
    return TypeComparison(WaymoType(waymo_type).name, 0 if records is None else int(records.labels.sum()), ap,
                          int((by_a & by_b).sum()), int((by_a & ~by_b).sum()), int((~by_a & by_b).sum()),
                          int((~by_a & ~by_b).sum()), waymo_type in a.types, waymo_type in b.types)


def _correlation(scores: tuple[tuple[float, float], ...]) -> float | None:
    if len(scores) < 3:
        return None
    values = np.asarray(scores)
    if values[:, 0].std() == 0 or values[:, 1].std() == 0:
        return None
    value = float(np.corrcoef(values[:, 0], values[:, 1])[0, 1])
    return None if math.isnan(value) else value


def _found_by(marks: tuple[Mark, ...], side: str) -> int:
    return sum(1 for m in marks if m.found_by == side)
