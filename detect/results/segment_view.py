"""One segment's results folder as every reader of it sees it: its manifest, its detections (the
one table reader, rows naming another segment left out with a note), and every image the run
processed. `detect eval` adds the labels to it (`evaluate.segment_results`), `detect report` the
pictures and the evaluation (`report.data`): both count the same boxes on the same images."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from detect.core.names import printable
from detect.core.records import FrameKey
from detect.results.detections_table import DetectionTable, read_detections
from detect.results.results_folder import Manifest, processed_images, read_manifest
from detect.results.results_tables import RowBudget, segment_budget
from detect.results.table import DETECTIONS_FILE


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentView:
    """A segment's manifest, its boxes and its processed images, and what reading left out."""

    directory: Path
    manifest: Manifest
    detections: DetectionTable  # the segment's own rows that are boxes, in the table's order
    images: frozenset[FrameKey]  # every image the run processed, boxes or not (`processed`)
    budget: RowBudget  # the row cap its tables are read under
    notes: tuple[str, ...] = ()  # one line each: rows that are not boxes, unusable track ids, other segments' rows

    @property
    def name(self) -> str:
        return self.manifest.segment_context_name

    def processed(self, *also: Iterable[FrameKey]) -> frozenset[FrameKey]:
        """Every image the run processed: its journal's; without one, the frames on disk, the
        table's images and those of `also` (its labels', say)."""
        return processed_images(self.directory, self.name, self.detections.keys, *also)


def read_segment_view(directory: Path, *, labels: bool = False, table_required: bool = True) -> SegmentView:
    """The segment folder at `directory` (`labels`: the boxes' class names too; without
    `table_required`, a folder without a detections table reads as one without boxes). The manifest
    is read first; an unreadable table is an `InputError` naming it."""
    manifest = read_manifest(directory)
    name = manifest.segment_context_name
    budget = segment_budget(directory, name)
    path = directory / DETECTIONS_FILE
    if table_required or path.is_file() or path.is_symlink():
        table = read_detections(path, budget, labels=labels)
    else:
        table = DetectionTable.empty(path, labels=labels)
    notes = [note for note in (table.not_boxes, table.track_note) if note is not None]
    own = np.array([s == name for s in table.segments], bool)
    if not own.all():
        notes.append(f"{path}: {int(len(own) - own.sum())} row(s) name another segment than {printable(name, 64)}; "
                     f"left out")
        table = table.take(own)
    images = processed_images(directory, name, table.keys)
    return SegmentView(directory, manifest, table, images, budget, tuple(notes))
