"""The two results folders `detect compare` reads, and the images they have in common.

A side is a segment's or a run's results folder: its segments (detections, labels, the manifest's
facts), the Waymo types its model can output and its drawing threshold. The comparison is over
the images both processed (same segment, timestamp and camera); the images and segments only one
side has are named and left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from detect.compare.comparison import SideFacts
from detect.core.errors import InputError, UsageError
from detect.core.names import printable
from detect.core.records import FrameKey, Labels
from detect.evaluate.segment_results import SegmentResults, find_segments, load_segment
from detect.model.classmap import ClassMap
from detect.model.coco_classes import describe_classes
from detect.model.facts import COCO_LABEL_MAP
from detect.results.results_folder import Manifest


@dataclasses.dataclass(frozen=True, eq=False)
class Side:
    """One results folder."""

    label: str  # "A" or "B"
    root: Path
    segments: dict[str, SegmentResults]
    types: tuple[int, ...]  # the Waymo types its model can output
    threshold: float
    notes: tuple[str, ...]

    @property
    def manifest(self) -> Manifest:
        return next(iter(self.segments.values())).manifest

    @property
    def images(self) -> frozenset[FrameKey]:
        return frozenset(k for s in self.segments.values() for k in s.images)

    def facts(self) -> SideFacts:
        """What a reader compares first: the model and the settings that change what it finds."""
        manifest = self.manifest
        model = manifest.model
        settings, timings = manifest.settings, manifest.timings
        return SideFacts(
            results=str(self.root), model=model.short_name or model.description or None,
            description=model.description or None, sha256=model.sha256[:12] or None,
            classes=_classes(model.knows_classes), input_size=settings.get("input_size"), threshold=self.threshold,
            score_floor=settings.get("score_floor"), nms_iou=model.nms_iou,
            tiles=(_mapping(settings.get("tile")).get("size") or "none") if settings.get("tile") else "none",
            runtime=_runtime(model.runtime), images_per_second=timings.images_per_second,
            detect_ms_per_image=timings.detect_ms_per_image)


def load_side(label: str, root: Path, class_map: ClassMap, gt: str | None = None) -> Side:
    """Every readable segment under `root` (a broken one is a note, as `detect eval` treats it)."""
    root = Path(root)
    found = find_segments(root)
    segments: dict[str, SegmentResults] = {}
    notes = [f"{label}: {line}" for line in found.skipped]
    for directory in found.with_manifest():
        try:
            segment = load_segment(directory, gt)
        except InputError as err:
            notes.append(f"{label}: {printable(str(err), 300)}; left out")
            continue
        if segment.name in segments:
            notes.append(f"{label}: {directory}: segment {printable(segment.name)} again (first in "
                         f"{segments[segment.name].directory}); left out")
            continue
        segments[segment.name] = segment
        notes.extend(f"{label}: {line}" for line in segment.notes)
        if segment.labels_mismatch is not None:
            notes.append(f"{label}: {segment.labels_mismatch}: agreement only for it")
    if not segments:
        raise InputError(f"{root}: no segment results could be read ({notes[0] if notes else 'none found'})")
    first = next(iter(segments.values()))
    types = tuple(class_map.types_for(first.model_classes))
    return Side(label, root, segments, types, first.threshold, tuple(notes))


@dataclasses.dataclass(frozen=True, eq=False)
class Pairing:
    """The images both sides processed, in order, and what only one of them has."""

    common: list[FrameKey]
    only_a: list[FrameKey]
    only_b: list[FrameKey]
    labels: Mapping[FrameKey, Labels]  # for the common images (empty: no labels on either side)
    labels_from: str | None  # "A", "B" or None

    def left_out_lines(self) -> list[str]:
        lines = []
        for side, keys in (("A", self.only_a), ("B", self.only_b)):
            if keys:
                segments = sorted({k.segment_context_name for k in keys})
                named = ", ".join(printable(s, 64) for s in segments[:3]) + ("..." if len(segments) > 3 else "")
                lines.append(f"{len(keys)} image(s) only in {side} (segment(s) {named}): left out")
        return lines


def pair(a: Side, b: Side) -> Pairing:
    """The common images; labels from A's results, else B's (the same frames have the same labels)."""
    images_a, images_b = a.images, b.images
    common = sorted(images_a & images_b, key=lambda k: k.order)
    if not common:
        raise UsageError(f"{a.root} and {b.root} have no image in common (same segment, timestamp and camera): "
                         f"nothing to compare")
    labels: dict[FrameKey, Labels] = {}
    origin = None
    for side in (a, b):
        found = {k: lab for s in side.segments.values() for k, lab in s.labels.items() if k in images_a & images_b}
        if found:
            labels, origin = found, side.label
            break
    return Pairing(common, sorted(images_a - images_b, key=lambda k: k.order),
                   sorted(images_b - images_a, key=lambda k: k.order), labels, origin)


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _classes(known: tuple[int, ...] | None) -> str:
    """"80 COCO classes", "person", ... (the manifest lists them all)."""
    return COCO_LABEL_MAP if known is None else describe_classes(list(known))


def _runtime(runtime: Mapping[str, object]) -> str | None:
    """"openvino 2026.4.1" from the manifest's model.runtime (None for runs from before runtimes)."""
    name = runtime.get("name")
    return " ".join(str(v) for v in (name, runtime.get("version")) if v) if isinstance(name, str) and name else None
