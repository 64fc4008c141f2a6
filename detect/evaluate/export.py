"""`detect export coco`: instances.json and detections.json, and with `--images` the camera JPEGs
they name, copied byte for byte out of the segment files the run read.

`instances.json` holds every label of every Waymo type present (a COCO tool sees the whole ground
truth); `detections.json` holds the model's boxes in the types its classes map to, and
`info.evaluated_category_ids` names those types: what `detect eval` evaluates. Each image names its
source frame (`images/<segment>/<CAMERA>/<timestamp>.jpg`, relative to the JSON), its size as the
run decoded it (the journal), and the segment file it comes from (`input_path`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path

from detect.core.atomic import atomic_write_bytes
from detect.core.errors import DependencyError, InputError
from detect.core.names import printable
from detect.core.records import FrameKey
from detect.evaluate import coco
from detect.evaluate.results import SegmentResults
from detect.model.classmap import ClassMap
from detect.sinks.journal import JOURNAL, STATE_DIR
from detect.sinks.layout import real_file, real_folder
from detect.sinks.source_images import NamedSources, source_uri
from detect.waymo.images import jpeg_size
from detect.waymo.readers import iter_frames, read_keys
from detect.waymo.selection import FrameFilter

INSTANCES_FILE, DETECTIONS_JSON = "instances.json", "detections.json"


@dataclasses.dataclass(frozen=True)
class Exported:
    written: list[Path]  # the two JSON files (and the images folder, with --images)
    notes: list[str]  # one line each: what is missing from the export, and why
    images: int = 0  # in instances.json
    labels: int = 0  # its annotations
    detections: int = 0  # in detections.json
    copied: int | None = None  # JPEGs written with --images (None: not asked)


def write_coco(segments: list[SegmentResults], class_map: ClassMap, types: list[int], target: Path,
               images: bool = False, sources: NamedSources = NamedSources()) -> Exported:
    """Write the export into `target`; `types` are the Waymo types the model's classes map to. The
    images come from the segment files the user named among `sources`, else from the one each
    manifest records when it is local (`detect.sinks.source_images.source_uri`)."""
    target = Path(target)
    notes: list[str] = []
    written: list[Path] = []
    copied: int | None = None
    if images:
        found = [_copy_images(segment, target, notes, sources) for segment in segments]
        segments = [dataclasses.replace(s, sizes={**sizes, **s.sizes}) for s, (sizes, _) in zip(segments, found, strict=True)]
        written.append(target / coco.IMAGES_DIR)
        copied = sum(n for _, n in found)
    instances = coco.ground_truth(segments, sorted(set(types) | set(coco.label_types(segments))))
    instances["info"]["evaluated_category_ids"] = types
    dets = coco.detections(segments, class_map, types)
    notes += _unsized(segments, images)
    # allow_nan=False: JSON has no NaN or Infinity; the rows are checked on the way in, and a value
    # that still slipped through must fail here rather than write a file other tools cannot parse.
    return Exported([atomic_write_bytes(target / INSTANCES_FILE, json.dumps(instances, allow_nan=False).encode()),
                     atomic_write_bytes(target / DETECTIONS_JSON, json.dumps(dets, allow_nan=False).encode()),
                     *written], notes, len(instances["images"]), len(instances["annotations"]), len(dets), copied)


def _copy_images(segment: SegmentResults, target: Path, notes: list[str],
                 sources: NamedSources) -> tuple[dict[FrameKey, tuple[int, int]], int]:
    """Copy the segment's processed images out of its input file: their sizes from the JPEG headers,
    and how many were written."""
    wanted = segment.images
    name = printable(segment.name, 64)
    if segment.input_path is None and not sources:
        notes.append(f"{segment.directory}: its manifest names no input file; the images of {name} are not written")
        return {}, 0
    if not wanted:
        return {}, 0
    uri, problem = source_uri(segment.manifest, sources)
    if uri is None:
        where = "" if sources else f"its input file {printable(segment.input_path or '?', 200)} "
        notes.append(f"{segment.directory}: {where}{problem}; the images of {name} are not written")
        return {}, 0
    times = [k.frame_timestamp_micros for k in wanted]
    selection = FrameFilter(cameras=tuple(sorted({k.camera_name for k in wanted})), min_timestamp=min(times),
                            max_timestamp=max(times))
    sizes: dict[FrameKey, tuple[int, int]] = {}
    copied: set[FrameKey] = set()
    folders: set[Path] = set()
    try:
        keys = read_keys(uri)
        for frame in iter_frames(keys.source, selection, keys):
            if frame.key not in wanted or frame.key in copied:
                continue
            path = target / coco.image_file_name(frame.key)
            if path.parent not in folders:  # each folder on the way a real one, never a planted link
                target.mkdir(parents=True, exist_ok=True)
                for folder in reversed(path.relative_to(target).parents[:-1]):
                    real_folder(target / folder)
                folders.add(path.parent)
            atomic_write_bytes(real_file(path), frame.jpeg)
            copied.add(frame.key)
            size = jpeg_size(frame.jpeg)
            if size is not None:
                sizes[frame.key] = size
    except (InputError, DependencyError) as err:  # this segment's input; a refused write (OutputError) stops all
        notes.append(f"{printable(str(err), 300)}; the images of {name} are not all written")
        return sizes, len(copied)
    if len(copied) < len(wanted):
        notes.append(f"{printable(uri, 200)}: {len(wanted) - len(copied)} of the {len(wanted)} image(s) of {name} are "
                     f"not in it; not written")
    return sizes, len(copied)


def _unsized(segments: Iterable[SegmentResults], images: bool) -> list[str]:
    """One line when some images have no width and height (results without their journal)."""
    unsized = {s.name: sum(k not in s.sizes for k in s.images) for s in segments}
    unsized = {name: n for name, n in unsized.items() if n}
    if not unsized:
        return []
    names = ", ".join(printable(n, 64) for n in list(unsized)[:3]) + ("..." if len(unsized) > 3 else "")
    hint = "" if images else "; --images reads their sizes from the input files"
    return [f"{sum(unsized.values())} image(s) of {names} have no recorded size (no {STATE_DIR}/{JOURNAL} in the "
            f"results): their entries have no width and height{hint}"]
