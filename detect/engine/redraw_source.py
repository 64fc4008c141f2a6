"""The segment file `detect redraw` reads a finished segment's images from, and the proof that it
is still the file the run read.

The file is the one the user names (`--source`), else the one the manifest records, opened only
when that is a local file named by its absolute path (`detect.sinks.source_images.source_uri`: a
results folder never makes detect go online, nor take a host or options from the folder). It is
checked before anything is written:
- by the fingerprint the run recorded (`detect.waymo.source_check`): its size and its ends;
- a run that recorded none (made before fingerprints were, or an edited manifest) is checked by
  what the journal records of each image: every one must be in the file, at the size the run
  decoded it (one pass over the file's JPEG headers, no pixel decoded). A file of the same segment
  with other pictures of the same sizes passes: a weaker check than the fingerprint, which the
  redraw then records, so the next one checks that.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from detect.core.errors import InputError
from detect.core.names import printable
from detect.core.records import FrameKey, FrameResult
from detect.sinks.results_folder import Manifest
from detect.sinks.source_images import FINGERPRINT, NamedSources, source_uri
from detect.waymo.images import jpeg_size
from detect.waymo.readers import SegmentKeys, iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.source_check import SourceFingerprint, source_problem, take_fingerprint
from detect.waymo.sources import resolve_one


@dataclasses.dataclass(frozen=True, eq=False)
class CheckedSource:
    """The segment file a redraw reads, checked to be the run's."""

    uri: str
    keys: SegmentKeys
    fingerprint: SourceFingerprint | None  # what the manifest records of it after the redraw


def checked_source(directory: Path, manifest: Manifest, named: NamedSources, frame_filter: FrameFilter,
                   results: Mapping[FrameKey, FrameResult]) -> CheckedSource:
    """The file to redraw from, or one InputError saying why there is none (see the module)."""
    uri, problem = source_uri(manifest, named)
    if uri is None:
        where = "" if named else f"its source file {printable(manifest.input_path or '?', 200)} "
        raise InputError(f"{directory}: cannot redraw: {where}{problem}")
    recorded = SourceFingerprint.from_json(manifest.section("input").get(FINGERPRINT))
    problem = source_problem(uri, recorded)
    if problem is not None:
        raise InputError(f"{directory}: cannot redraw: its source file {printable(uri, 200)} {problem}")
    keys = read_keys(resolve_one(uri), verified=recorded is not None)  # a fingerprint checked: the run's file
    segment = manifest.segment_context_name
    if keys.segment_context_name != segment:
        raise InputError(f"{directory}: cannot redraw: its source file {printable(uri, 200)} has changed since the "
                         f"run (it holds segment {printable(keys.segment_context_name)})")
    if recorded is None:
        problem = _sizes_problem(keys, frame_filter, results)
        if problem is not None:
            raise InputError(f"{directory}: cannot redraw: its source file {printable(uri, 200)} {problem}")
    return CheckedSource(uri, keys, recorded or take_fingerprint(uri))


def _sizes_problem(keys: SegmentKeys, frame_filter: FrameFilter, results: Mapping[FrameKey, FrameResult]) -> str | None:
    """Why the file's images are not the ones the journal records (each one there, at its size)."""
    found = 0
    for frame in iter_frames(keys.source, frame_filter, keys):
        result = results.get(frame.key)
        if result is None:
            continue
        size = jpeg_size(frame.jpeg)
        if size != (result.width, result.height):
            now = "an unreadable picture" if size is None else f"{size[0]}x{size[1]}"
            return (f"has changed since the run ({frame.key.camera_name.name} {frame.key.frame_timestamp_micros}: "
                    f"{now} now, {result.width}x{result.height} then; the manifest records no fingerprint)")
        found += 1
    if found < len(results):
        return (f"has changed since the run ({len(results) - found} of the run's {len(results)} images are not in "
                f"it; the manifest records no fingerprint)")
    return None
