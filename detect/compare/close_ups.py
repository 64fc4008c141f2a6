"""Close-ups of the objects one side found and the other did not, under each "disagree most"
picture: a small object ringed on a 480-px half is hard to make out, so each is also cut from the
camera image (re-read from the segment file, `detect.results.source_images`: A's, else B's),
centred and enlarged, with only its box drawn. When neither file can give the image back, the
close-up is cut from A's drawn frame and a note says why."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from PIL import Image

from detect.compare.frame_pairs import MARK
from detect.compare.sides import Side
from detect.compare.stats import Disagreement, Mark
from detect.core.atomic import atomic_path
from detect.core.errors import first_line
from detect.core.files import UnreadableFileError
from detect.core.records import FrameKey
from detect.render.crop import Outline, close_up
from detect.results.frames import read_frame
from detect.results.source_images import read_source_images

PER_PICTURE = 4  # close-ups under one A | B picture, the largest objects first


@dataclasses.dataclass(frozen=True)
class CloseUp:
    """One object's close-up: its file (in the comparison's folder) and what it shows."""

    file: str
    caption: str


def caption(mark: Mark, names: tuple[str, str]) -> str:
    """"only B (tiles 512): VEHICLE 40x18 px"."""
    width, height = mark.xyxy[2] - mark.xyxy[0], mark.xyxy[3] - mark.xyxy[1]
    name = names[0] if mark.found_by == "A" else names[1]
    return f"only {mark.found_by} ({name}): {mark.type_name} {width:.0f}x{height:.0f} px"


def write_close_ups(chosen: Sequence[Disagreement], a: Side, b: Side, frames_a: Mapping[FrameKey, Path],
                    names: tuple[str, str], out: Path, notes: list[str]) -> dict[FrameKey, list[CloseUp]]:
    """For each picture, up to `PER_PICTURE` close-ups of its marks as JPEGs in `out`
    (`disagree_<n>_<m>.jpg`, n the picture's place in `chosen`)."""
    images = _camera_images([d.key for d in chosen if d.marks], (a, b), notes)
    written: dict[FrameKey, list[CloseUp]] = {}
    for n, item in enumerate(chosen):
        picture = images.get(item.key)
        if picture is None and item.marks and item.key in frames_a:
            try:
                picture = read_frame(frames_a[item.key])
            except UnreadableFileError as err:
                notes.append(f"frame {item.key} left out of the close-ups: {first_line(err)}")
        if picture is None:
            continue
        marks = sorted(item.marks, key=lambda m: -(m.xyxy[2] - m.xyxy[0]) * (m.xyxy[3] - m.xyxy[1]))
        for m, mark in enumerate(marks[:PER_PICTURE]):
            path = out / f"disagree_{n}_{m}.jpg"
            with atomic_path(path) as tmp:
                close_up(picture, Outline(mark.xyxy, MARK)).save(tmp, "JPEG", quality=90)
            written.setdefault(item.key, []).append(CloseUp(path.name, caption(mark, names)))
    return written


def _camera_images(keys: Sequence[FrameKey], sides: Sequence[Side], notes: list[str]) -> dict[FrameKey, Image.Image]:
    """The images of `keys` from each segment's source file: A's, then B's for what A's could not
    give; one note per segment whose images come from A's drawn frames instead."""
    found: dict[FrameKey, Image.Image] = {}
    for segment in sorted({k.segment_context_name for k in keys}):
        wanted = {k for k in keys if k.segment_context_name == segment}
        problems = []
        for side in sides:
            results = side.segments.get(segment)
            missing = wanted - set(found)
            if results is None or not missing:
                continue
            read = read_source_images(results.manifest, missing)
            found.update(read.images)
            if read.problem:
                problems.append(f"{side.label}: {read.problem}")
        if wanted - set(found) and problems:
            notes.append(f"{'; '.join(problems)}: close-ups of segment {segment} cut from A's drawn frames")
    return found
