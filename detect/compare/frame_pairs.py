"""A comparison's pictures: for each camera an A | B animation of the same frames, and the frames
where the two disagree most, side by side. Made from the annotated frames each run wrote (with
labels, both runs drew the same hits/false-alarms/misses overlay), downscaled to `SIDE_WIDTH`.

The objects found by one side only (`stats.Mark`) are ringed in magenta on both halves, tagged
"only A" or "only B": the difference is what a reader looks for, and the frames' own colors say
hit, false alarm or miss. The gallery is spread over cameras and time (`spread`), so it does not
show six consecutive frames of one camera."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from detect.compare.stats import Disagreement, Mark
from detect.core.atomic import atomic_path
from detect.core.cameras import CameraName
from detect.core.errors import first_line
from detect.core.files import UnreadableFileError
from detect.core.records import FrameKey
from detect.render.chips import font
from detect.render.mosaic_tile import downscale_to_width
from detect.results.frames import list_frames, read_frame
from detect.results.gif import GifWriter

SIDE_WIDTH = 480  # each side of an A | B picture: the pair is 960 wide, readable on a laptop
MAX_ANIMATION_FRAMES = 120  # per camera, spread over the segment: a 1,000-image run stays a few MB
GALLERY = 8
BAR = 26  # pixels: the strip naming each side
PER_CAMERA = 2  # gallery pictures of one camera of one segment, at most
APART_MICROS = 2_000_000  # and at least this far apart in time (20 frames at 10 Hz)
MARK: tuple[int, int, int] = (255, 0, 255)  # magenta: no state of the frames' drawing uses it
MARK_PAD, MARK_WIDTH = 3, 2  # pixels on the downscaled side: the ring sits just outside the frame's own box
Marks = Mapping[FrameKey, Sequence[Mark]]


def frame_files(segment_dirs: Mapping[str, Path]) -> dict[FrameKey, Path]:
    """The annotated frames of these segments (name -> folder), by image key."""
    out: dict[FrameKey, Path] = {}
    for name, directory in segment_dirs.items():
        for f in list_frames(directory):
            out[FrameKey(name, f.frame_timestamp_micros, f.camera_name)] = f.path
    return out


def side_by_side(a: Path, b: Path, names: tuple[str, str], marks: Sequence[Mark] = ()) -> Image.Image:
    """A's frame left, B's right, each `SIDE_WIDTH` wide under a strip with its name, the objects
    one side found ringed on both; `UnreadableFileError` when either frame is not a regular,
    decodable picture of a sane size."""
    halves = []
    for path in (a, b):
        frame = read_frame(path)
        small = downscale_to_width(frame, SIDE_WIDTH)
        halves.append((small, small.width / frame.width))
    height = max(half.height for half, _ in halves)
    canvas = Image.new("RGB", (2 * SIDE_WIDTH + 4, height + BAR), (24, 24, 24))
    draw = ImageDraw.Draw(canvas)
    face = font(15)
    for (half, scale), x, name in zip(halves, (0, SIDE_WIDTH + 4), names, strict=True):
        canvas.paste(half, (x, BAR))
        draw.text((x + 6, 4), name, font=face, fill=(255, 255, 255))
        _ring(draw, marks, scale, (x, BAR), half.size)
    return canvas


def _ring(draw: ImageDraw.ImageDraw, marks: Sequence[Mark], scale: float, origin: tuple[int, int],
          size: tuple[int, int]) -> None:
    """Each mark as a magenta ring just outside its box, tagged with the side that found it (above
    the ring, else below; a tag that would cover another is left out: the ring says enough)."""
    face = font(12)
    tags: list[tuple[float, float, float, float]] = []
    for mark in marks:
        x0, y0, x1, y1 = (v * scale for v in mark.xyxy)
        box = (max(0.0, x0 - MARK_PAD) + origin[0], max(0.0, y0 - MARK_PAD) + origin[1],
               min(size[0] - 1.0, x1 + MARK_PAD) + origin[0], min(size[1] - 1.0, y1 + MARK_PAD) + origin[1])
        if box[2] <= box[0] or box[3] <= box[1]:
            continue
        draw.rectangle(box, outline=MARK, width=MARK_WIDTH)
        text = f"only {mark.found_by}"
        left, top, right, bottom = draw.textbbox((0, 0), text, font=face)
        width, height = right - left + 4, bottom - top + 3
        for y in (box[1] - height - 1, box[3] + 1):
            tag = (box[0], y, box[0] + width, y + height)
            inside = y >= origin[1] and y + height <= origin[1] + size[1]
            if inside and not any(_overlaps(tag, other) for other in tags):
                tags.append(tag)
                draw.rectangle(tag, fill=MARK)
                draw.text((tag[0] + 2 - left, tag[1] + 1 - top), text, font=face, fill=(255, 255, 255))
                break


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def animations(common: list[FrameKey], frames_a: dict[FrameKey, Path], frames_b: dict[FrameKey, Path],
               names: tuple[str, str], out: Path, notes: list[str], marks: Marks | None = None) -> list[Path]:
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
                    picture = _pair_or_note(key, frames_a, frames_b, names, notes, (marks or {}).get(key, ()))
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
                  names: tuple[str, str], notes: list[str], marks: Sequence[Mark] = ()) -> Image.Image | None:
    try:
        return side_by_side(frames_a[key], frames_b[key], names, marks)
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


def spread(disagreement: Sequence[Disagreement], limit: int = GALLERY, per_camera: int = PER_CAMERA,
           apart: int = APART_MICROS) -> list[Disagreement]:
    """The images to show, most disagreement first, at most `per_camera` of each camera of a
    segment and those `apart` microseconds apart at least: a gallery of cameras and moments, not
    of one camera's consecutive frames. Pure."""
    chosen: list[Disagreement] = []
    for item in disagreement:
        if len(chosen) == limit:
            break
        key = item.key
        same = [c.key for c in chosen if (c.key.segment_context_name, c.key.camera_name)
                == (key.segment_context_name, key.camera_name)]
        if len(same) >= per_camera or any(abs(k.frame_timestamp_micros - key.frame_timestamp_micros) < apart
                                          for k in same):
            continue
        chosen.append(item)
    return chosen


def gallery(images: Sequence[Disagreement], frames_a: dict[FrameKey, Path], frames_b: dict[FrameKey, Path],
            names: tuple[str, str], out: Path, notes: list[str]) -> dict[FrameKey, Path]:
    """The images (`spread` first) both sides drew, side by side with their marks, as JPEGs in
    `out` (an unreadable frame is left out with a line in `notes`)."""
    written: dict[FrameKey, Path] = {}
    for item in images:
        key = item.key
        if key not in frames_a or key not in frames_b:
            continue
        picture = _pair_or_note(key, frames_a, frames_b, names, notes, item.marks)
        if picture is None:
            continue
        path = out / f"disagree_{len(written)}.jpg"
        with atomic_path(path) as tmp:
            picture.save(tmp, "JPEG", quality=85)
        written[key] = path
    return written
