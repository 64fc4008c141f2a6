"""`detect eval` and `detect export coco`: from a results directory (one segment, or a whole run,
pooled) to numbers and files."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from detect.core.errors import InputError
from detect.core.matching import COCO_PROTOCOL, Protocol
from detect.core.names import printable
from detect.core.records import WaymoType
from detect.evaluate.export import Exported, write_coco
from detect.evaluate.metrics import Evaluation, evaluate
from detect.evaluate.outputs import MatchesWriter, library_version, to_json, write_outputs
from detect.evaluate.results import SegmentResults, find_segments, load_segment, no_labels_message
from detect.evaluate.tracking_table import TrackingWriter
from detect.model.classmap import ClassMap, load_class_map
from detect.model.coco_classes import label_for
from detect.sinks.fingerprint import Sources, computed_from
from detect.sinks.layout import MATCHES_FILE, TRACKING_FILE
from detect.sinks.results_folder import read_manifest


@dataclasses.dataclass(frozen=True, eq=False)
class EvalResult:
    evaluation: Evaluation
    report: dict[str, object]  # eval.json as written
    written: list[Path]
    notes: list[str]  # one line each: what was left out and why
    class_map: str  # where the class map came from
    library: str  # the evaluation library and its version

    def headline(self) -> str:
        e = self.evaluation
        return (f"detect eval: {len(e.segments)} segment(s), {e.images} images, types "
                f"{', '.join(WaymoType(t).name for t in e.types)} ({self.class_map}; {self.library})")


def run_eval(results: Path, gt: str | None = None, class_map_path: Path | None = None,
             out: Path | None = None, protocol: Protocol = COCO_PROTOCOL) -> EvalResult:
    """Evaluate every segment under `results` against its labels, pooled, reading one segment at a
    time; write the outputs to `out` (default: `results`)."""
    class_map = load_class_map(class_map_path)
    stream = _Stream(Path(results), gt, class_map, class_map_path is not None)
    types, threshold = stream.plan()
    target = Path(out or results)
    pooled_run = len(stream.directories) > 1 or stream.directories[0] != Path(results)

    def segment_pages(segment: SegmentResults, own: Evaluation) -> None:
        """In a run, each segment gets its own eval.json and curves too (its page shows them)."""
        if pooled_run and out is None:
            write_outputs(segment.directory, own, to_json(own, class_map) | computed_from([segment.source], segment.directory))

    with MatchesWriter(target / MATCHES_FILE) as matches, TrackingWriter(target / TRACKING_FILE, protocol) as tracks:
        evaluation = evaluate(stream.labeled(), class_map, types, threshold, on_matches=matches.write,
                              on_segment=segment_pages, protocol=protocol, on_tracks=tracks.write)
        if not evaluation.segments:  # nothing to evaluate: no matches.parquet is left behind either
            raise InputError(stream.nothing_message())
    report = to_json(evaluation, class_map) | computed_from(stream.evaluated, target)
    written = [*write_outputs(target, evaluation, report), target / MATCHES_FILE,
               *([target / TRACKING_FILE] if tracks.rows else [])]
    return EvalResult(evaluation, report, written, stream.finish_notes(evaluation.labels_dropped), class_map.source,
                      library_version())


def export_coco(results: Path, out: Path | None = None, gt: str | None = None,
                class_map_path: Path | None = None, images: bool = False) -> Exported:
    """`instances.json` (every label, LEVEL_2) and `detections.json` (mapped to Waymo types); with
    `images`, the source JPEGs they name (see `detect.evaluate.export`)."""
    segments, class_map, types, notes = _prepare(results, gt, class_map_path)
    exported = write_coco(segments, class_map, types, Path(out or results), images)
    return dataclasses.replace(exported, notes=notes + exported.notes)


def _prepare(results: Path, gt: str | None,
             class_map_path: Path | None) -> tuple[list[SegmentResults], ClassMap, list[int], list[str]]:
    """Every labeled segment at once (`detect export coco` writes them all in one JSON file)."""
    class_map = load_class_map(class_map_path)
    stream = _Stream(Path(results), gt, class_map, class_map_path is not None)
    types, _ = stream.plan()
    segments = list(stream.labeled())
    if not segments:
        raise InputError(stream.nothing_message())
    return segments, class_map, types, stream.finish_notes(sum(s.labels_dropped for s in segments))


class _Stream:
    """The segments of a results folder, read one at a time; what was left out, and why, as notes."""

    def __init__(self, results: Path, gt: str | None, class_map: ClassMap, custom_map: bool) -> None:
        self.results, self.gt, self.class_map, self.custom_map = results, gt, class_map, custom_map
        found = find_segments(results)
        self.directories = found.with_manifest()
        self.notes: list[str] = list(found.skipped)
        self.unlabeled: list[tuple[str, Path]] = []
        self.mismatched: dict[Path, str] = {}  # segment directory -> why the --gt labels are not its own
        self.stand_ins: set[str] = set()
        self.class_counts: dict[int, int] = {}
        self.thresholds: set[float] = set()
        self.read = 0
        self.evaluated: list[tuple[Path, Sources]] = []  # what eval.json records it was computed from

    def plan(self) -> tuple[list[int], float]:
        """Types and threshold from the first readable manifest (no detections read yet)."""
        for directory in self.directories:
            try:
                manifest = read_manifest(directory)
            except InputError:
                continue  # said when its segment is read
            known = manifest.model.knows_classes
            types = self.class_map.types_for(None if known is None else list(known))
            if not types:
                raise InputError(f"{self.results}: the model's classes map to no Waymo type with {self.class_map.source}; "
                                 f"give a --class-map FILE that maps them")
            self.threshold = manifest.threshold
            return types, self.threshold
        raise InputError(f"{self.results}: no segment could be read (no readable manifest.json)")

    def labeled(self) -> Iterator[SegmentResults]:
        for directory in self.directories:
            try:
                segment = load_segment(directory, self.gt)
            except InputError as err:  # one broken segment (or one missing --gt file) leaves the others evaluated
                self.notes.append(f"{printable(str(err), 300)}; left out")
                continue
            self.read += 1
            self.notes.extend(segment.notes)
            if not segment.labels:
                self.unlabeled.append((segment.name, segment.directory))
                if segment.labels_mismatch is not None:
                    self.mismatched[segment.directory] = segment.labels_mismatch
                continue
            if segment.threshold != self.threshold:
                self.thresholds.add(segment.threshold)
            kind = segment.manifest.model.kind
            if kind not in ("real", ""):  # "": not recorded
                self.stand_ins.add(kind)
            if self.custom_map:
                ids, counts = np.unique(segment.detections.class_ids, return_counts=True)
                for class_id, count in zip(ids.tolist(), counts.tolist(), strict=True):
                    if self.class_map.waymo_type(class_id) is None:
                        self.class_counts[class_id] = self.class_counts.get(class_id, 0) + count
            self.evaluated.append(segment.source)
            yield segment

    def nothing_message(self) -> str:
        if self.mismatched:
            return f"{next(iter(self.mismatched.values()))}; name the segment's own labels with --gt PATH"
        if self.unlabeled:
            return no_labels_message(self.results, self.unlabeled)
        return f"{self.results}: no segment could be read ({self.notes[0] if self.notes else 'none found'})"

    def finish_notes(self, labels_dropped: int) -> list[str]:
        notes = list(self.notes) + [f"{self.mismatched[directory]}; left out" if directory in self.mismatched
                                    else f"{printable(name)}: no labels, left out" for name, directory in self.unlabeled]
        if labels_dropped:
            notes.append(f"{labels_dropped} unusable label row(s) dropped (NaN, negative or empty boxes, types or "
                         f"cameras outside Waymo's enums); eval.json counts them")
        if self.thresholds:
            notes.append(f"the segments were drawn at different thresholds; P/R/F1 use the first one ({self.threshold:g})")
        if self.stand_ins:
            notes.append(f"these results come from a {' and a '.join(sorted(self.stand_ins))} model: its boxes are not "
                         f"detections, so the numbers measure nothing")
        if self.class_counts:
            named = ", ".join(f"{label_for(c)} ({n} box{'es' if n != 1 else ''})"
                              for c, n in sorted(self.class_counts.items(), key=lambda i: -i[1]))
            notes.append(f"--class-map {self.class_map.source} leaves out {len(self.class_counts)} class(es) the model "
                         f"detected: {named}; their boxes are not evaluated")
        return notes
