"""`detect eval` and `detect export coco`: from a results directory (one segment, or a whole run,
pooled) to numbers and files.

A pool is one detector's numbers over distinct segments: a folder holding the same segment twice
(a tiled and an untiled run side by side) or segments run with other models or settings is refused
(`MixedPoolError`) unless the caller allows it (`--allow-mixed`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from detect.core.errors import InputError
from detect.core.matching import COCO_PROTOCOL, Protocol
from detect.core.names import printable
from detect.core.records import WaymoType
from detect.evaluate.export import Exported, write_coco
from detect.evaluate.image_counts import ImagesWriter, image_counts
from detect.evaluate.matches import Match
from detect.evaluate.metrics import Evaluation, evaluate
from detect.evaluate.outputs import MatchesWriter, library_version, to_json, write_outputs
from detect.evaluate.segment_results import SegmentResults, find_segments, load_segment, no_labels_message
from detect.evaluate.tracking_table import TrackingWriter
from detect.model.classmap import ClassMap, load_class_map
from detect.model.coco_classes import label_for
from detect.results.fingerprint import Sources, computed_from
from detect.results.layout import IMAGES_FILE, MATCHES_FILE, TRACKING_FILE
from detect.results.results_folder import Manifest, read_manifest
from detect.results.source_images import NamedSources

FOLDERS_NAMED = 3  # a refusal names this many folders, then counts the rest


class MixedPoolError(InputError):
    """Segments that must not be pooled: one segment in several folders, or different models or settings."""


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
             out: Path | None = None, protocol: Protocol = COCO_PROTOCOL, allow_mixed: bool = False) -> EvalResult:
    """Evaluate every segment under `results` against its labels, pooled, reading one segment at a
    time; write the outputs to `out` (default: `results`). A mixed pool is refused (the module
    docstring) unless `allow_mixed`."""
    class_map = load_class_map(class_map_path)
    stream = _Stream(Path(results), gt, class_map, class_map_path is not None, allow_mixed)
    types, threshold = stream.plan()
    target = Path(out or results)
    pooled_run = len(stream.directories) > 1 or stream.directories[0] != Path(results)

    first_pictures: dict[str, bytes] = {}  # the first segment's pictures, by file name
    pages_written: list[Path] = []

    def segment_pages(segment: SegmentResults, own: Evaluation) -> None:
        """In a run, each segment gets its own eval.json and curves too (its page shows them)."""
        if pooled_run and out is None:
            pages_written.append(segment.directory)
            write_outputs(segment.directory, own, to_json(own, class_map) | computed_from([segment.source], segment.directory),
                          pictures=first_pictures if len(pages_written) == 1 else None)

    with (MatchesWriter(target / MATCHES_FILE) as matches, ImagesWriter(target / IMAGES_FILE) as images,
          TrackingWriter(target / TRACKING_FILE, protocol) as tracks):
        def write_matches(segment: SegmentResults, found: list[Match]) -> None:
            matches.write(found)
            images.write(image_counts(segment.images, found, types, threshold, segment.conditions))

        evaluation = evaluate(stream.labeled(), class_map, types, threshold, on_matches=write_matches,
                              on_segment=segment_pages, protocol=protocol, on_tracks=tracks.write)
        if not evaluation.segments:  # nothing to evaluate: no matches.parquet is left behind either
            raise InputError(stream.nothing_message())
    report = to_json(evaluation, class_map) | computed_from(stream.evaluated, target)
    # a pool of one segment draws what the segment drew: its pictures are written again, not drawn
    same = first_pictures if len(pages_written) == 1 and len(evaluation.segments) == 1 else None
    written = [*write_outputs(target, evaluation, report, pictures=same), target / MATCHES_FILE, target / IMAGES_FILE,
               *([target / TRACKING_FILE] if tracks.rows else [])]
    return EvalResult(evaluation, report, written, [*stream.finish_notes(evaluation.labels_dropped), *evaluation.notes],
                      class_map.source, library_version())


def export_coco(results: Path, out: Path | None = None, gt: str | None = None,
                class_map_path: Path | None = None, images: bool = False, allow_mixed: bool = False,
                sources: NamedSources = NamedSources()) -> Exported:
    """`instances.json` (every label, LEVEL_2) and `detections.json` (mapped to Waymo types); with
    `images`, the source JPEGs they name (see `detect.evaluate.export`), from the segment files
    named in `sources` when given."""
    segments, class_map, types, notes = _prepare(results, gt, class_map_path, allow_mixed)
    exported = write_coco(segments, class_map, types, Path(out or results), images, sources)
    return dataclasses.replace(exported, notes=notes + exported.notes)


def _prepare(results: Path, gt: str | None, class_map_path: Path | None,
             allow_mixed: bool) -> tuple[list[SegmentResults], ClassMap, list[int], list[str]]:
    """Every labeled segment at once (`detect export coco` writes them all in one JSON file)."""
    class_map = load_class_map(class_map_path)
    stream = _Stream(Path(results), gt, class_map, class_map_path is not None, allow_mixed)
    types, _ = stream.plan()
    segments = list(stream.labeled())
    if not segments:
        raise InputError(stream.nothing_message())
    return segments, class_map, types, stream.finish_notes(sum(s.labels_dropped for s in segments))


class _Stream:
    """The segments of a results folder, read one at a time; what was left out, and why, as notes."""

    def __init__(self, results: Path, gt: str | None, class_map: ClassMap, custom_map: bool,
                 allow_mixed: bool = False) -> None:
        self.results, self.gt, self.class_map, self.custom_map = results, gt, class_map, custom_map
        found = find_segments(results)
        self.directories = found.with_manifest()
        if not allow_mixed and len(self.directories) > 1:
            check_pool(results, self.directories)
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
        why = "no readable manifest.json"
        for directory in self.directories:
            try:
                manifest = read_manifest(directory)
            except InputError as err:
                why = str(err) if why.startswith("no ") else why  # the first one says why
                continue  # said when its segment is read
            known = manifest.model.knows_classes
            types = self.class_map.types_for(None if known is None else list(known))
            if not types:
                raise InputError(f"{self.results}: the model's classes map to no Waymo type with {self.class_map.source}; "
                                 f"give a --class-map FILE that maps them")
            self.threshold = manifest.threshold
            return types, self.threshold
        raise InputError(f"{self.results}: no segment could be read ({why})")

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


def check_pool(results: Path, directories: Sequence[Path]) -> None:
    """Refuse to pool one segment from several folders, or segments whose runs differ in what
    shapes the boxes (`pool_settings`): one line naming them (MixedPoolError). An unreadable
    manifest is left to the reading, which leaves its segment out with a note."""
    manifests: list[Manifest] = []
    for directory in directories:
        try:
            manifests.append(read_manifest(directory))
        except InputError:
            continue
    folders: dict[str, list[Path]] = {}
    for manifest in manifests:
        folders.setdefault(manifest.segment_context_name, []).append(manifest.directory)
    repeated = {name: places for name, places in folders.items() if len(places) > 1}
    if repeated:
        name, places = min(repeated.items())
        more = f" (and {len(repeated) - 1} more segment(s) like it)" if len(repeated) > 1 else ""
        raise MixedPoolError(f"{results}: segment {printable(name, 64)} is in {len(places)} folders, "
                             f"{_named(results, places)}{more}: pooled, it would count {len(places)} times; "
                             f"evaluate one of them, or pass --allow-mixed")
    runs: dict[tuple[tuple[str, str], ...], list[Path]] = {}
    for manifest in manifests:
        runs.setdefault(pool_settings(manifest), []).append(manifest.directory)
    if len(runs) > 1:
        (first, ones), (second, others) = list(runs.items())[:2]
        changed = "; ".join(f"{what} {a} vs {b}" for (what, a), (_, b) in zip(first, second, strict=True) if a != b)
        raise MixedPoolError(f"{results}: its segments ran with different models or settings ({changed}: "
                             f"{_named(results, ones[:1])} vs {_named(results, others[:1])}); evaluate each "
                             f"run's folder on its own, or pass --allow-mixed")


def pool_settings(manifest: Manifest) -> tuple[tuple[str, str], ...]:
    """What shapes a run's boxes, as its manifest records it: the model (its checksum), the input
    size, tiles, NMS, the lowest score kept and --classes. Not the drawing threshold (AP does not
    depend on it; a note says which one P/R/F1 use) nor the cameras or frames (a subset of images)."""
    model, settings = manifest.model, manifest.settings
    return (("model", model.sha256[:12] or model.path or "?"),
            ("input size", _compact(settings.get("input_size"))),
            ("tile", _compact(settings.get("tile"))),
            ("NMS IoU", _compact(model.nms_iou)),
            ("score floor", _compact(model.score_floor)),
            ("classes", _compact(list(model.classes) if model.classes is not None else None)))


def _compact(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, dict) and "size" in value:  # a tile record: its size and overlap say it
        return f"{value.get('size')} (overlap {value.get('overlap')})"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _named(results: Path, places: Sequence[Path]) -> str:
    """Folders relative to `results`, the first few of them."""
    names = [str(p.relative_to(results)) if p.is_relative_to(results) else str(p) for p in places]
    shown = ", ".join(printable(n, 80) for n in names[:FOLDERS_NAMED])
    return shown + (f" and {len(names) - FOLDERS_NAMED} more" if len(names) > FOLDERS_NAMED else "")
