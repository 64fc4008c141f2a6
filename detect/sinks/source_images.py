"""The camera images behind a results folder, re-read from the segment file its manifest names
(`input.path`), for pictures that must not show the run's drawing (the report's crops).

The file is checked first: it must still be there and, when the manifest records its fingerprint
(`input.fingerprint`: its size and `sampled_sha256`, a SHA-256 of the size and the file's first and
last MiB, as `detect redraw`'s `detect.waymo.source_check` records and checks it), the same one.
A file that is gone, changed, unreadable or of another segment is not an error: the caller gets
the images it could read and one line saying why the rest are missing, and falls back to the
drawn frames. The file is read once, in one streaming pass that stops after the last wanted image
(`detect.waymo.readers.read_images`), and only the wanted images are decoded.

A results folder is data: its recorded path is opened only when it names a local file by its
absolute path. A remote one (any URI with a scheme but `file:///`: its host, credentials and
options such as `endpoint_override` would come from the folder) and a relative one (relative to a
folder the manifest does not record) are opened only when the user names the file on the command
line (`--source`, or a run's own inputs): `NamedSources`.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import os
import urllib.parse
from collections.abc import Collection, Mapping

from PIL import Image

from detect.core.errors import InputError, first_line
from detect.core.names import printable
from detect.core.records import FrameKey
from detect.sinks.results_folder import Manifest
from detect.waymo import source_check
from detect.waymo.images import check_size, jpeg_size
from detect.waymo.readers import read_images
from detect.waymo.source_check import SourceFingerprint
from detect.waymo.sources import SegmentSource, is_remote, resolve

FINGERPRINT = "fingerprint"  # the key under the manifest's `input` section


@dataclasses.dataclass(frozen=True, eq=False)
class SourceImages:
    """The wanted images that could be read (RGB), and why the others could not (None: all read)."""

    images: Mapping[FrameKey, Image.Image]
    problem: str | None = None


REMOTE = "is remote: a results folder never makes detect go online (name the file with --source)"
RELATIVE = ("is a path relative to the folder the run started in, which is not recorded (name the file with "
            "--source)")


@dataclasses.dataclass(frozen=True)
class NamedSources:
    """Segment files the user named on the command line: files, folders, globs or URIs, as
    `detect run` takes them. A segment's file among them is the one with the recorded file's name,
    or the only one."""

    names: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.names)

    @functools.cached_property
    def _files(self) -> tuple[list[SegmentSource], str | None]:
        """The named files (resolved once), or why they cannot be listed."""
        files: list[SegmentSource] = []
        try:
            for name in self.names:
                files += resolve(name)
        except InputError as err:
            return [], first_line(err)
        return files, None

    def pick(self, recorded: str | None) -> tuple[str | None, str | None]:
        """The named file for a segment whose manifest records `recorded`: (its URI, None), or
        (None, why there is none)."""
        files, problem = self._files
        if problem is not None:
            return None, f"--source {problem}"
        wanted = _file_name(recorded) if recorded else None
        same = [f for f in files if f.name == wanted]
        if len(same) == 1 or len(files) == 1:
            return (same or files)[0].uri, None
        return None, f"--source names {len(files)} files, none of them {printable(wanted or '?', 200)}"


def source_uri(manifest: Manifest, named: NamedSources = NamedSources()) -> tuple[str | None, str | None]:
    """The segment file to read a results folder's images from: (its URI, None), or (None, why
    not, as the end of a sentence after the recorded path). A file the user named comes first;
    the recorded path is opened only when it is a local, absolute one (the module's docstring)."""
    recorded = manifest.input_path
    if named:
        return named.pick(recorded)
    if recorded is None:
        return None, "is not recorded in the manifest"
    if is_remote(recorded):
        return None, REMOTE
    if "://" not in recorded and not os.path.isabs(recorded):
        return None, RELATIVE
    return recorded, None


def _file_name(uri: str) -> str:
    """The last part of a path or URI's path (its query and fragment left out)."""
    path = urllib.parse.urlsplit(uri).path if "://" in uri else uri
    return path.rstrip("/").rpartition("/")[2]


def source_problem(manifest: Manifest, named: NamedSources = NamedSources()) -> str | None:
    """Why the segment file a results folder was made from cannot give its images back, or None."""
    path, problem = source_uri(manifest, named)
    if path is None and manifest.input_path is None and not named:
        return f"{manifest.directory}: the manifest records no source file"
    if path is None:
        return problem if named else f"{printable(manifest.input_path or '?', 200)}: the source file {problem}"
    recorded = SourceFingerprint.from_json(manifest.section("input").get(FINGERPRINT))
    problem = source_check.source_problem(path, recorded)
    return None if problem is None else f"{printable(path, 200)}: the source file {problem}"


def read_source_images(manifest: Manifest, wanted: Collection[FrameKey],
                       named: NamedSources = NamedSources()) -> SourceImages:
    """The `wanted` images of the manifest's segment, decoded, from its source file in one pass."""
    segment = manifest.segment_context_name
    wanted = {k for k in wanted if k.segment_context_name == segment}
    if not wanted:
        return SourceImages({})
    problem = source_problem(manifest, named)
    if problem is not None:
        return SourceImages({}, problem)
    path = str(source_uri(manifest, named)[0])
    found: dict[FrameKey, Image.Image] = {}
    try:
        for frame in read_images(path, {(k.frame_timestamp_micros, k.camera_name) for k in wanted}):
            if frame.segment_context_name != segment:
                return SourceImages({}, f"{printable(path, 200)}: holds segment "
                                        f"{printable(frame.segment_context_name, 64)}, not {printable(segment, 64)}")
            image = _decoded(frame.jpeg) if frame.key in wanted else None
            if image is not None:
                found[frame.key] = image
    except (InputError, OSError, ValueError) as err:
        return SourceImages(found, f"{printable(path, 200)}: cannot read the source images ({first_line(err)})")
    missing = len(wanted) - len(found)
    return SourceImages(found, f"{printable(path, 200)}: holds no image for {missing} of {len(wanted)} picture(s)"
                        if missing else None)


def _decoded(jpeg: bytes) -> Image.Image | None:
    """One camera image as RGB; None when its header is refused or it does not decode (counted as
    missing, as the run counted it as failed)."""
    size = jpeg_size(jpeg)
    if size is None or check_size(*size, flag=None):
        return None
    try:
        with Image.open(io.BytesIO(jpeg)) as image:
            image.load()
            return image if image.mode == "RGB" else image.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
