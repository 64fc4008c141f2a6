"""Before `detect segment` / `detect run` start: what their outputs will take on disk, in one line,
and a refusal when the disk of --out cannot hold it (`--no-disk-check` starts anyway).

PNG frames are ~3 MB a camera image, ~3 GB for a 200-frame segment, and a run of a split fills a
disk hours in; the estimate (`detect.results.disk_cost`) is known in a second, before the model
loads. Segments a resumed run will skip (its run file and their manifests say so) are not counted.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from detect.core.errors import OutputError
from detect.engine.runner import carried_over, previous_outcomes
from detect.engine.spec import RunSpec, SegmentSettings
from detect.results.disk_cost import count_images, human_bytes, output_bytes
from detect.results.run_record import run_file_name
from detect.waymo.sources import SegmentSource


def still_to_do(spec: RunSpec, sources: Sequence[SegmentSource]) -> list[SegmentSource]:
    """The sources a resumed `detect run` will not skip as finished (all of them otherwise)."""
    if spec.settings.mode != "resume":
        return list(sources)
    root = Path(spec.out)
    previous = previous_outcomes(root / run_file_name(spec.shard))
    return [s for s in sources if carried_over(root, s, previous.get(s.uri), spec.retry_failed) is None]


def check_disk(spec: RunSpec, sources: Sequence[SegmentSource], status: Callable[[str], None]) -> None:
    """Say the estimate; OutputError when the free space of --out is smaller."""
    settings = spec.settings
    images = sum(_count(source, settings) for source in sources)
    if not images:
        return
    parts = _bytes(settings, images, settings.frame_format if settings.write_frames else None)
    total = sum(parts.values())
    free = shutil.disk_usage(_existing(Path(spec.out))).free
    shown = ", ".join(f"{kind} {human_bytes(size)}" for kind, size in parts.items())
    status(f"disk: about {human_bytes(total)} for {images:,} images ({shown}); {human_bytes(free)} free")
    if total <= free:
        return
    smaller = [f"--frame-format jpg ({human_bytes(sum(_bytes(settings, images, 'jpg').values()))})"
               if settings.write_frames and settings.frame_format != "jpg" else "",
               f"--no-png ({human_bytes(sum(_bytes(settings, images, None).values()))})" if settings.write_frames else ""]
    hint = " or ".join(s for s in smaller if s)
    raise OutputError(f"{spec.out}: {human_bytes(free)} free, but the outputs of {images:,} images need about "
                      f"{human_bytes(total)}; {'use ' + hint + ', ' if hint else ''}free some space, or pass "
                      f"--no-disk-check to start anyway")


def _count(source: SegmentSource, settings: SegmentSettings) -> int:
    """The images of one file; 0 for a file that cannot be read (the run names it when it fails)."""
    try:
        return count_images(source, settings.frame_filter).images
    except (OSError, ValueError):
        return 0


def _bytes(settings: SegmentSettings, images: int, frames: str | None) -> dict[str, int]:
    cameras = settings.frame_filter.cameras
    return output_bytes(images, frames=frames, gif=settings.gif, mp4=settings.mp4, gif_width=settings.gif_width,
                        mosaic=cameras is None or len(cameras) >= 2)


def _existing(path: Path) -> Path:
    """`path` or its nearest existing parent (--out is made when the run starts)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
