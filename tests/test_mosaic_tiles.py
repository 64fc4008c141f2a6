"""The mosaic drawn for the size it is shown at: its tiles' chips readable there and never hiding
each other (the frames' layout), one legend for the whole mosaic, the frames and camera GIFs
untouched, and the tiles kept on disk so the animations rebuilt from a folder show the same mosaic."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from detect.core.cameras import CameraName
from detect.core.records import Detections, FrameKey, Labels, WaymoType
from detect.engine.spec import SegmentJob, SegmentSettings
from detect.engine.stages import render_pixels
from detect.render.chip_layout import MIN_TEXT_SHOWN_PX, Chip, chip_overlap
from detect.render.chips import chip_height
from detect.render.draw import DrawStyle, draw_detections
from detect.render.mosaic import compose_mosaic, mosaic_layout
from detect.render.mosaic_tile import (
    MIN_LEGEND_DISPLAY_PX,
    MOSAIC_DISPLAY_WIDTH,
    MosaicTile,
    detection_boxes,
    display_scale,
    draw_mosaic_tile,
    shrink,
    tile_font_size,
)
from detect.render.verdicts import COLORS, HIT, LEGEND_FILL, draw_errors, judge
from detect.results.animations import AnimationSet, merged_legend, prepare_animation_frame, rebuild_animations
from detect.results.mosaic_tiles import encode_tile, read_tile, tile_path, write_tile
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import read_keys

SEGMENT = "seg"
SAMPLE_GROUND = (20, 20, 20)  # the dark ground of a legend row's line sample


def as_detections(labels: Labels) -> Detections:
    """Every label as a detected car, a little offset, best score first: a crowded real frame."""
    n = len(labels)
    return Detections(labels.xyxy + 6, np.linspace(0.95, 0.35, n), np.full(n, 3), ("car",) * n)


def labelled_images(real_frame_path, real_camera_frames):
    """Each camera image of the real frame (decoded by Pillow) with its key and its labels."""
    labels = read_labels(read_keys(str(real_frame_path)))
    assert labels is not None
    for frame in real_camera_frames:
        image = np.asarray(Image.open(io.BytesIO(frame.jpeg)).convert("RGB"))
        yield frame.key, image, labels.get(frame.key)


def test_on_the_real_frame_the_tiles_chips_are_readable_as_shown_and_never_hide_each_other(
        real_frame_path, real_camera_frames):
    left_out = total = 0
    for _key, image, labels in labelled_images(real_frame_path, real_camera_frames):
        assert len(labels) >= 3
        tile, scale = shrink(image, 640)
        assert tile.shape[1] == 640 and scale == (1 / 3, 1 / 3)
        boxes = detection_boxes(as_detections(labels), DrawStyle(threshold=0.3))
        drawn = draw_mosaic_tile(tile, boxes, scale)
        chips = np.array(drawn.chips).reshape(-1, 4)
        heights = chips[:, 3] - chips[:, 1]
        assert len(chips) and (heights == chip_height(tile_font_size(640))).all()
        assert tile_font_size(640) * display_scale(640) >= MIN_TEXT_SHOWN_PX  # the text, as shown
        assert chip_overlap([Chip(x0, y0, x1 - x0, y1 - y0, "") for x0, y0, x1, y1 in chips]) == 0
        assert (chips[:, :2] >= 0).all() and (chips[:, 2] <= 640).all() and (chips[:, 3] <= tile.shape[0]).all()
        left_out += drawn.chips_left_out
        total += len(boxes.texts)
        assert len(chips) + drawn.chips_left_out == len(boxes.texts)
    # the crowded frame does not fit every chip at that size: some are left out (the box stays)
    assert 0 < left_out < total, (left_out, total)


def segment_name(frames) -> str:
    return next(iter(frames)).segment_context_name


def errors_job(**settings) -> SegmentJob:
    return SegmentJob.judged(SegmentSettings(**settings), frozenset(int(t) for t in WaymoType), None)


def render_real(real_frame_path, real_camera_frames, tmp_path, **settings):
    job = errors_job(**settings)
    frames = {}
    for key, image, labels in labelled_images(real_frame_path, real_camera_frames):
        frame = image.copy()
        animation, _ = render_pixels(frame, key, as_detections(labels), tmp_path, job, labels)
        frames[key] = (image, frame, labels, animation)
    return job, frames


@pytest.mark.slow
def test_the_frames_and_camera_gifs_are_drawn_as_before_the_tile_beside_them(real_frame_path, real_camera_frames,
                                                                              tmp_path):
    job, frames = render_real(real_frame_path, real_camera_frames, tmp_path, write_frames=False)
    for key, (image, frame, labels, animation) in frames.items():
        alone = image.copy()
        draw_errors(alone, judge(as_detections(labels), labels, job.rules, job.settings.style))
        assert np.array_equal(frame, alone)  # the frame: what the drawing alone makes of the raw image
        plain = prepare_animation_frame(alone, key)
        assert animation.image.tobytes() == plain.image.tobytes() and animation.gif == plain.gif
        # the tile is not the GIF frame shrunk: it is the raw image, drawn for the mosaic
        assert animation.tile.size == plain.tile.size and animation.tile.tobytes() != plain.tile.tobytes()


def hit_samples(mosaic: np.ndarray, tolerance: int = 0) -> list[tuple[slice, slice]]:
    """Where legends are: the inside of each "hit" row's line sample (dark ground, a solid outline
    in the hit color above and below it, within `tolerance` once shrunk)."""
    regions, _ = ndimage.label(np.all(mosaic == SAMPLE_GROUND, axis=-1))
    found = []
    for rows, cols in ndimage.find_objects(regions):
        h, w, x = rows.stop - rows.start, cols.stop - cols.start, (cols.start + cols.stop) // 2
        if h >= 4 and w >= 2 * h and 1 < rows.start and rows.stop + 1 < len(mosaic):
            above, below = (np.abs(mosaic[r, x].astype(int) - COLORS[HIT]).max(-1).min()
                            for r in (slice(rows.start - 2, rows.start), slice(rows.stop, rows.stop + 2)))
            if max(above, below) <= tolerance:
                found.append((rows, cols))
    return found


def chip_right_of(mosaic: np.ndarray, rows: slice, cols: slice) -> int:
    """The height of the chip right of a legend row's sample (past its outline and dark ground)."""
    y = (rows.start + rows.stop) // 2
    line = [tuple(p) for p in mosaic[y, cols.stop:]]
    x = cols.stop + line.index(SAMPLE_GROUND)  # past the outline
    x += [tuple(p) for p in mosaic[y, x:]].index(LEGEND_FILL)  # past the ground: the chip
    column = np.all(mosaic[:, x] == LEGEND_FILL, axis=-1)
    top = y - np.flatnonzero(~column[:y][::-1])[0]
    return int(y + np.flatnonzero(~column[y:])[0] - top)


def test_the_mosaic_has_one_legend_in_its_empty_cell_readable_as_shown(real_frame_path, real_camera_frames, tmp_path):
    _, frames = render_real(real_frame_path, real_camera_frames, tmp_path, write_frames=False)
    animations = [animation for *_, animation in frames.values()]
    layout = mosaic_layout(animations[0].tile.width)
    tiles = {a.key.camera_name: a.tile for a in animations}
    legend = merged_legend([a.legend for a in animations])
    assert [text for _, text in legend][:3] == ["hit", "FA: false alarm", "missed label"]
    mosaic = np.asarray(compose_mosaic(tiles, layout, ("seg", "t = 0.0 s"), legend))
    found = hit_samples(mosaic)
    assert len(found) == 1
    (rows, cols), (x, y, w, h) = found[0], layout.cell(1, 1)
    assert y <= rows.start and rows.stop <= y + h and x <= cols.start and cols.stop <= x + w  # in the empty cell
    row_height = chip_right_of(mosaic, rows, cols)
    assert row_height * MOSAIC_DISPLAY_WIDTH / layout.size[0] >= MIN_LEGEND_DISPLAY_PX  # as shown on the page
    # the old way, the GIF frames shrunk: a legend in every tile
    old = {a.key.camera_name: prepare_animation_frame(np.asarray(a.image), a.key).tile for a in animations}
    assert len(hit_samples(np.asarray(compose_mosaic(old, layout, ("seg",))), tolerance=40)) == 5


@pytest.mark.slow
def test_the_rebuilt_mosaic_uses_the_tiles_kept_beside_the_frames(real_frame_path, real_camera_frames, tmp_path):
    job, frames = render_real(real_frame_path, real_camera_frames, tmp_path / "seg")
    with AnimationSet(tmp_path / "fresh") as sink:
        for key in sorted(frames, key=lambda k: k.order):
            sink.add(frames[key][3])
    for key, (*_, animation) in frames.items():
        kept = read_tile(tile_path(tmp_path / "seg", key.camera_name, key.frame_timestamp_micros))
        assert kept is not None and kept.legend == animation.legend and kept.chips_left_out == animation.chips_left_out
        assert kept.image.tobytes() == animation.tile.tobytes()  # the run's mosaic is built from the tile as kept
    rebuilt = rebuild_animations(tmp_path / "seg", segment_context_name=segment_name(frames))
    mosaic = next(p for p in rebuilt if p.name == "mosaic.gif")
    assert mosaic.read_bytes() == (tmp_path / "fresh" / "mosaic.gif").read_bytes()
    # a folder written before tiles were kept: the mosaic shrinks the frames instead
    for path in (tmp_path / "seg" / ".detect" / "mosaic").rglob("*.jpg"):
        path.unlink()
    rebuild_animations(tmp_path / "seg", segment_context_name=segment_name(frames))
    assert mosaic.read_bytes() != (tmp_path / "fresh" / "mosaic.gif").read_bytes()


@pytest.mark.parametrize("content", [b"", b"not a picture", None])
def test_a_missing_or_unreadable_tile_is_no_tile(tmp_path, content):
    path = tile_path(tmp_path, CameraName.FRONT, 1)
    if content is not None:
        path.parent.mkdir(parents=True)
        path.write_bytes(content)
    assert read_tile(path) is None


def test_a_detections_tile_has_the_boxes_class_color_and_the_watermark_and_no_legend(tmp_path):
    image = np.full((1280, 1920, 3), 128, np.uint8)
    dets = Detections(np.array([[300, 300, 900, 900]], np.float32), np.array([0.9]), np.array([3]), ("car",))
    settings = SegmentSettings(write_frames=False, style=DrawStyle(watermark="stub model"))
    key = FrameKey(SEGMENT, 1, CameraName.FRONT)
    frame = image.copy()
    animation, _ = render_pixels(frame, key, dets, tmp_path, SegmentJob(settings))
    assert np.array_equal(frame, draw_detections(image, dets, settings.style))
    assert animation.legend == () and animation.chips_left_out == 0
    tile = np.asarray(animation.tile)
    color = settings.style.palette[3]
    assert tuple(tile[200, 100]) == color and tuple(tile[200, 300]) == color  # the box's sides, a third the size
    assert (tile[-5:, :20] != 128).any() and (tile[:40, -200:] == 128).all()  # watermark; no legend top right


def test_a_tile_keeps_its_legend_and_left_out_count_in_the_file_and_a_bad_legend_is_no_tile(tmp_path):
    key = FrameKey(SEGMENT, 1, CameraName.FRONT)
    tile = MosaicTile(Image.new("RGB", (64, 43), (9, 9, 9)), (("hit", "hit"), (None, "note")), 2)
    assert write_tile(tmp_path / "unread", key, tile, read_back=False) is None  # no mosaic now: only kept
    kept = write_tile(tmp_path, key, tile)
    assert kept is not None
    assert kept.legend == tile.legend and kept.chips_left_out == 2 and kept.image.size == (64, 43)
    assert tile_path(tmp_path / "unread", CameraName.FRONT, 1).read_bytes() == tile_path(tmp_path, CameraName.FRONT,
                                                                                        1).read_bytes()
    again = read_tile(tile_path(tmp_path, CameraName.FRONT, 1))
    assert again == kept and again.image.tobytes() == kept.image.tobytes()
    path = tile_path(tmp_path, CameraName.FRONT, 1)
    path.write_bytes(encode_tile(MosaicTile(tile.image, (("exploded", "x"),), 0)))
    assert read_tile(path) is None
    tile.image.save(tile_path(tmp_path, CameraName.FRONT, 1), "JPEG", comment=b"{not json")
    assert read_tile(tile_path(tmp_path, CameraName.FRONT, 1)) is None


def test_overwrite_deletes_the_kept_tiles_with_the_frames(tmp_path):
    from detect.results.layout import clear_outputs

    (tmp_path / ".detect").mkdir()
    (tmp_path / ".detect" / "settings.json").write_text("{}")
    tile = MosaicTile(Image.new("RGB", (64, 43), (9, 9, 9)))
    for camera in (CameraName.FRONT, CameraName.SIDE_LEFT):
        write_tile(tmp_path, FrameKey(SEGMENT, 1, camera), tile)
    (tmp_path / ".detect" / "mosaic" / "FRONT" / "notes.txt").write_text("mine")
    assert clear_outputs(tmp_path) == 3  # two tiles and the settings
    assert [p.name for p in (tmp_path / ".detect").rglob("*")] == ["mosaic", "FRONT", "notes.txt"]


@pytest.mark.slow
def test_the_render_bench_times_each_camera_of_a_finished_segment(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    from detect.cli import main
    from detect.tools.bench_render import main as bench

    out = tmp_path / "out"
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(out), "--quiet",
                 "--no-report", "--no-eval"]) == 0
    (segment,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    capsys.readouterr()
    assert bench([str(segment), "--repeats", "1", "--frames"]) == 0
    line = capsys.readouterr().out.strip()
    assert [word for word in line.split() if word.isupper()] == [c.name for c in CameraName]
    assert line.endswith("ms an image")
