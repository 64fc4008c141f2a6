"""The camera images behind a results folder, re-read from the segment file its manifest names
(`input.path`), for pictures that must not show the run's drawing (the report's crops).

The file is checked first: it must still be there and, when the manifest records its fingerprint
(`input.fingerprint`: its size and `sampled_sha256`, a SHA-256 of the size and the file's first and
last MiB, as `detect redraw`'s `detect.waymo.source_check` records and checks it), the same one.
A file that is gone, changed, unreadable or of another segment is not an error: the caller gets
the images it could read and one line saying why the rest are missing, and falls back to the
drawn frames. The file is read once, in one streaming pass that stops after the last wanted image
(`detect.waymo.readers.read_images`), and only the wanted images are decoded.
"""

from __future__ import annotations

import dataclasses
import io
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

FINGERPRINT = "fingerprint"  # the key under the manifest's `input` section


@dataclasses.dataclass(frozen=True, eq=False)
class SourceImages:
    """The wanted images that could be read (RGB), and why the others could not (None: all read)."""

    images: Mapping[FrameKey, Image.Image]
    problem: str | None = None


def source_problem(manifest: Manifest) -> str | None:
    """Why the segment file a results folder was made from cannot give its images back, or None."""
    path = manifest.input_path
    if path is None:
        return f"{manifest.directory}: the manifest records no source file"
    recorded = SourceFingerprint.from_json(manifest.section("input").get(FINGERPRINT))
    problem = source_check.source_problem(path, recorded)
    return None if problem is None else f"{printable(path, 200)}: the source file {problem}"


def read_source_images(manifest: Manifest, wanted: Collection[FrameKey]) -> SourceImages:
    """The `wanted` images of the manifest's segment, decoded, from its source file in one pass."""
    segment = manifest.segment_context_name
    wanted = {k for k in wanted if k.segment_context_name == segment}
    if not wanted:
        return SourceImages({})
    problem = source_problem(manifest)
    if problem is not None:
        return SourceImages({}, problem)
    path = str(manifest.input_path)
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
