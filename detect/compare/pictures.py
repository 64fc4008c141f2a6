"""A comparison's pictures: for each camera an A | B animation of the same frames, and the frames
where the two disagree most, side by side. Made from the annotated frames each run wrote (with
labels, both runs drew the same hits/false-alarms/misses overlay), downscaled to `SIDE_WIDTH`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from PIL import Image, ImageDraw

from detect.core.atomic import atomic_path
from detect.core.cameras import CameraName
from detect.core.errors import first_line
from detect.core.files import UnreadableFileError
from detect.core.records import FrameKey
from detect.render.chips import font
from detect.sinks.animations import downscale_to_width
from detect.sinks.frames import list_frames, read_frame
from detect.sinks.gif import GifWriter

SIDE_WIDTH = 480  # each side of an A | B picture: the pair is 960 wide, readable on a laptop
MAX_ANIMATION_FRAMES = 120  # per camera, spread over the segment: a 1,000-image run stays a few MB
GALLERY = 8
BAR = 26  # pixels: the strip naming each side


def frame_files(segment_dirs: Mapping[str, Path]) -> dict[FrameKey, Path]:
    """The annotated frames of these segments (name -> folder), by image key."""
    out: dict[FrameKey, Path] = {}
    for name, directory in segment_dirs.items():
        for f in list_frames(directory):
            out[FrameKey(name, f.frame_timestamp_micros, f.camera_name)] = f.path
    return out


def side_by_side(a: Path, b: Path, names: tuple[str, str]) -> Image.Image:
    """A's frame left, B's right, each `SIDE_WIDTH` wide under a strip with its name;
    `UnreadableFileError` when either frame is not a regular, decodable picture of a sane size."""
    left = downscale_to_width(read_frame(a), SIDE_WIDTH)
    right = downscale_to_width(read_frame(b), SIDE_WIDTH)
    height = max(left.height, right.height)
    canvas = Image.new("RGB", (2 * SIDE_WIDTH + 4, height + BAR), (24, 24, 24))
    canvas.paste(left, (0, BAR))
    canvas.paste(right, (SIDE_WIDTH + 4, BAR))
    draw = ImageDraw.Draw(canvas)
    face = font(15)
    for x, name in ((6, names[0]), (SIDE_WIDTH + 10, names[1])):
        draw.text((x, 4), name, font=face, fill=(255, 255, 255))
    return canvas


def animations(common: list[FrameKey], frames_a: dict[FrameKey, Path], frames_b: dict[FrameKey, Path],
               names: tuple[str, str], out: Path, notes: list[str]) -> list[Path]:
    """One A | B animation per segment and camera both sides wrote frames for (at most
    `MAX_ANIMATION_FRAMES`, evenly spread), timed by the frames' timestamps: `compare_<CAMERA>.gif`
    for a one-segment run, `compare_<segment>_<CAMERA>.gif` otherwise.

    Per segment, because segments are recorded apart and may share timestamps; a camera whose
    image size changes within a segment is fitted onto the first picture's canvas. A frame that
    cannot be read is left out with a line in `notes` naming it."""
    segments = sorted({k.segment_context_name for k in common})
    written = []
    for segment in segments:
        for camera in CameraName:
            keys = sorted((k for k in common if k.segment_context_name == segment and k.camera_name == camera
                           and k in frames_a and k in frames_b), key=lambda k: k.frame_timestamp_micros)
            if not keys:
                continue
            if len(keys) > MAX_ANIMATION_FRAMES:
                step = len(keys) / MAX_ANIMATION_FRAMES
                keys = [keys[int(i * step)] for i in range(MAX_ANIMATION_FRAMES)]
            stem = camera.name if len(segments) == 1 else f"{segment}_{camera.name}"
            path = out / f"compare_{stem}.gif"
            size: tuple[int, int] | None = None
            with GifWriter(path) as gif:
                for key in keys:
                    picture = _pair_or_note(key, frames_a, frames_b, names, notes)
                    if picture is None:
                        continue
                    size = size or picture.size
                    gif.append(_fit(picture, size), key.frame_timestamp_micros)
                if size is None:
                    gif.abort()
            if size is not None:
                written.append(path)
    return written


def _pair_or_note(key: FrameKey, frames_a: dict[FrameKey, Path], frames_b: dict[FrameKey, Path],
                  names: tuple[str, str], notes: list[str]) -> Image.Image | None:
    try:
        return side_by_side(frames_a[key], frames_b[key], names)
    except UnreadableFileError as err:
        notes.append(f"frame {key} left out of the pictures: {first_line(err)}")
        return None


def _fit(picture: Image.Image, size: tuple[int, int]) -> Image.Image:
    """`picture` on a dark canvas of `size` (cropped at the bottom if taller): GIF frames share one size."""
    if picture.size == size:
        return picture
    canvas = Image.new("RGB", size, (24, 24, 24))
    canvas.paste(picture, (0, 0))
    return canvas


def gallery(images: list[FrameKey], frames_a: dict[FrameKey, Path], frames_b: dict[FrameKey, Path],
            names: tuple[str, str], out: Path, notes: list[str]) -> dict[FrameKey, Path]:
    """The first `GALLERY` images both sides drew, side by side, as JPEGs in `out` (an unreadable
    frame is left out with a line in `notes`)."""
    written: dict[FrameKey, Path] = {}
    for key in images:
        if len(written) == GALLERY:
            break
        if key not in frames_a or key not in frames_b:
            continue
        picture = _pair_or_note(key, frames_a, frames_b, names, notes)
        if picture is None:
            continue
        path = out / f"disagree_{len(written)}.jpg"
        with atomic_path(path) as tmp:
            picture.save(tmp, "JPEG", quality=85)
        written[key] = path
    return written
