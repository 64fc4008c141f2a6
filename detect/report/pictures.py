"""The segment page's pictures, each shown once and each a link to its full-size frame or file.

A picture shows some of the segment's images: a still of the mosaic at one timestamp shows every
camera's image then, a camera's still shows one, a thumbnail one. A picture whose images an
earlier one already showed is left out, and a group left with none is left out whole (a one-frame
segment: its camera stills, then nothing else). An animation of several frames is a picture of
its own (it shows time, which no still does).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from detect.core.atomic import atomic_path
from detect.core.cameras import CameraName
from detect.core.files import UnreadableFileError
from detect.report import safe
from detect.report.data import MOSAIC, SegmentData
from detect.report.gallery import note_picture
from detect.report.html import img
from detect.results.frames import list_frames, read_frame

THUMBNAILS, THUMB_WIDTH = 8, 360
# The cameras as the car sees them (the mosaic's order): left to right, front row then sides.
CAR_ORDER = (CameraName.FRONT_LEFT, CameraName.FRONT, CameraName.FRONT_RIGHT, CameraName.SIDE_LEFT,
             CameraName.SIDE_RIGHT)

Image = tuple[str, int]  # (camera, timestamp)


@dataclasses.dataclass(frozen=True)
class Picture:
    """A figure for the page, and what it shows: its images, or for an animation its own name."""

    html: str
    shows: frozenset[Image | str]


@dataclasses.dataclass(frozen=True)
class Group:
    title: str
    pictures: tuple[Picture, ...]
    css: str = "grid"


def once(groups: Iterable[Group]) -> list[Group]:
    """The groups with every picture whose images were all shown before left out; empty groups too."""
    shown: set[Image | str] = set()
    out = []
    for group in groups:
        kept = []
        for picture in group.pictures:
            if picture.shows and picture.shows <= shown:
                continue
            shown |= picture.shows
            kept.append(picture)
        if kept:
            out.append(Group(group.title, tuple(kept), group.css))
    return out


def picture_groups(data: SegmentData, assets: Path, assets_name: str) -> list[Group]:
    """The page's picture groups, each picture once: one frame shows its cameras one by one (a
    phone gets one per row, each links to its full-size frame); more frames show the mosaic's
    animation, each camera's, and stills of the busiest frames."""
    frames = {(f.camera_name.name, f.frame_timestamp_micros): f.path for f in list_frames(data.directory)}
    mosaic = Group("All cameras", tuple(p for p in [_animation(data, MOSAIC, frames)] if p), "wide")
    cameras = Group("Each camera", tuple(p for p in (_animation(data, c.name, frames) for c in CAR_ORDER) if p),
                    "grid cameras")
    first = once((cameras, mosaic) if len(data.timestamps) == 1 else (mosaic, cameras))
    shown = {image for group in first for picture in group.pictures for image in picture.shows}
    thumbs = Group("Frames with the most boxes", tuple(_thumbnails(data, assets, assets_name, shown)))
    return once((*first, thumbs))


def render(groups: Sequence[Group]) -> str:
    """The groups as HTML: a sub-heading each when there is more than one."""
    out = []
    for group in groups:
        heading = f"<h3>{safe.text(group.title)}</h3>" if len(groups) > 1 else ""
        out.append(f"{heading}<div class='{group.css}'>{''.join(p.html for p in group.pictures)}</div>")
    return "".join(out)


def linked(target: str, src: str, alt: str) -> str:
    """An image that opens `target` (its full-size frame or file) when clicked."""
    return f"<a href='{safe.href(target)}'>{img(src, alt)}</a>"


def _animation(data: SegmentData, name: str, frames: dict[Image, Path]) -> Picture | None:
    """A camera's (or the mosaic's) animation; one frame is a still: an image linked to the full-size
    frame (the mosaic's to its file), no player controls."""
    path = data.animation(name)
    if path is None:
        return None
    gif = f"{name}.gif" if (data.directory / f"{name}.gif").is_file() else None
    caption = "all cameras, tiled as the car sees them" if name == MOSAIC else name
    count = data.frame_count(None if name == MOSAIC else name)
    if count != 1:
        media = _media(path, caption, gif)
        link = f"<p class='muted'><a href='{safe.href(path)}'>{safe.text(path)}</a> (full size)</p>"
        return Picture(f"<figure>{media}<figcaption>{safe.text(caption)} {link}</figcaption></figure>",
                       frozenset({f"animation {name}"}))
    shows = frozenset((k.camera_name.name, k.frame_timestamp_micros) for k in data.images
                      if name == MOSAIC or k.camera_name.name == name)
    if gif:
        frame = frames.get(next(iter(shows))) if len(shows) == 1 else None
        target = frame.relative_to(data.directory).as_posix() if frame is not None else gif
        return Picture(f"<figure>{linked(target, gif, caption)}<figcaption>{safe.text(caption)}</figcaption></figure>",
                       shows)
    # An MP4 alone (--no-gif): its only frame, with nothing drawn over it.
    video = f"<video src='{safe.href(path)}' muted playsinline preload='auto' title='{safe.text(caption)}'></video>"
    return Picture(f"<figure><a href='{safe.href(path)}'>{video}</a><figcaption>{safe.text(caption)}</figcaption></figure>",
                   shows)


def _media(path: str, alt: str, poster: str | None = None) -> str:
    """An MP4 in a <video> (its GIF, when there is one, as the picture before it plays), else an <img>.

    The video plays by itself, muted and looped like the GIF: the browser hides its controls while
    it plays (they come back on hover), so they do not sit over a paused picture.
    """
    if path.endswith(".mp4"):
        shown = f" poster='{safe.href(poster)}'" if poster else ""
        return (f"<video src='{safe.href(path)}'{shown} controls autoplay loop muted playsinline preload='metadata' "
                f"title='{safe.text(alt)}'></video>")
    return linked(path, path, alt)


def _thumbnails(data: SegmentData, assets: Path, assets_name: str, shown: set[Image | str]) -> list[Picture]:
    """Stills of the busiest frames not shown yet (a thumbnail is written only when it is shown)."""
    pictures = []
    for camera, ts, boxes, frame in data.busiest_frames(THUMBNAILS):
        if (camera, ts) in shown:
            continue
        thumb = assets / f"thumb_{camera}_{ts}.jpg"
        try:
            small = read_frame(frame)
        except UnreadableFileError as err:  # a link, FIFO, truncated or oversized frame: the page still builds
            note_picture(data.notes, err)
            continue
        small.thumbnail((THUMB_WIDTH, THUMB_WIDTH))
        with atomic_path(thumb) as tmp:
            small.save(tmp, "JPEG", quality=85)
        link = frame.relative_to(data.directory).as_posix()
        caption = f"{camera} {ts}: {boxes} {'box' if boxes == 1 else 'boxes'} drawn"
        pictures.append(Picture(f"<figure>{linked(link, f'{assets_name}/{thumb.name}', f'{camera} at {ts}')}"
                                f"<figcaption>{safe.text(caption)}</figcaption></figure>", frozenset({(camera, ts)})))
    return pictures
