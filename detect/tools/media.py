"""`make media`: the README's and docs' pictures, made again from the real frame with today's defaults.

Runs `detect segment` on the real Waymo frame (the default model and settings; `--draw detections`
for the plain picture; `--tile 512` for the comparison), a slow pan over its FRONT image for the
tracking picture (a v2 segment with Waymo's object ids, written by `write_pan_segment`), `detect
compare` of the untiled and the tiled run, then copies frames, animations and plots into `media/`
and takes screenshots of the pages (docs/screenshots/, and parts of them for docs/evaluation.md)
with Debian's Chromium (Playwright drives it; no browser is downloaded). Every picture is written at
the size a reader sees it; look at them before committing.

    python -m detect.tools.media [--frame ../shared/fixtures/waymo_v1_one_frame.tfrecord] [--out media]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from detect.cli import main as detect
from detect.core.cameras import CameraName
from detect.core.records import CameraFrame, FrameKey, Labels
from detect.tools.synthetic import write_camera_box_from_labels, write_camera_image_parquet

ROOT = Path(__file__).resolve().parents[2]
FRAME = ROOT.parent / "shared" / "fixtures" / "waymo_v1_one_frame.tfrecord"
CHROMIUM = Path("/usr/bin/chromium")
PAN_SEGMENT = "pan_over_the_real_front_camera"
PAN_FRAMES, PAN_WIDTH, PAN_STEP = 40, 1520, 10  # 10 px a frame at 10 Hz: a second's trail 100 px, 42 in the GIF
# Windows (left, top, right, bottom) of the real frame's images worth showing at full resolution:
# 960 px wide, about what GitHub shows a README picture at, so the chips read at their drawn size.
FRONT_LEFT_WINDOW = (0, 380, 960, 1020)
FRONT_WINDOW = (480, 380, 1440, 1020)
PAN_WINDOW = (300, 380, 1260, 1020)


def write_pan_segment(frame_file: Path, out: Path, camera: CameraName = CameraName.FRONT) -> Path:
    """A v2 segment of PAN_FRAMES images: a window of `camera`'s image sliding right at 10 Hz, with
    Waymo's labels (and their object ids) moved with it; returns the camera_image file."""
    import tensorflow as tf

    from detect.waymo.camera_labels import read_labels
    from detect.waymo.readers import iter_frames, read_keys

    keys = read_keys(str(frame_file))
    labels = read_labels(keys)
    [source] = [f for f in iter_frames(keys.source, keys=keys) if f.camera_name == camera]
    image = tf.io.decode_jpeg(source.jpeg, channels=3).numpy()
    height = image.shape[0]
    own = labels.get(source.key) if labels is not None else Labels.empty()
    frames, boxes = [], {}
    for k in range(PAN_FRAMES):
        x0 = PAN_STEP * k
        window = image[:, x0:x0 + PAN_WIDTH]
        key = FrameKey(PAN_SEGMENT, 1_000_000 + k * 100_000, camera)
        frames.append(CameraFrame(PAN_SEGMENT, key.frame_timestamp_micros, camera,
                                  tf.io.encode_jpeg(window, quality=95).numpy()))
        xyxy = own.xyxy - [x0, 0, x0, 0]
        clipped = np.clip(xyxy, 0, [PAN_WIDTH, height, PAN_WIDTH, height])
        area = np.prod(np.maximum(xyxy[:, 2:] - xyxy[:, :2], 1e-9), 1)
        keep = np.prod(np.maximum(clipped[:, 2:] - clipped[:, :2], 0), 1) / area >= 0.5  # half of it in view
        boxes[key] = Labels(clipped[keep], own.types[keep], own.difficulty[keep],
                            tuple(np.asarray(own.object_ids, object)[keep]))
    path = write_camera_image_parquet(out / "camera_image" / f"{PAN_SEGMENT}.parquet", frames)
    write_camera_box_from_labels(out / "camera_box" / f"{PAN_SEGMENT}.parquet", boxes)
    return path


def screenshot(page_file: Path, out: Path, width: int, selector: str | None = None, height: int = 900) -> None:
    """A PNG of `page_file` at `width` CSS pixels: its top, or from `selector`'s element down."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": width, "height": height})
        page.goto(page_file.resolve().as_uri())
        page.wait_for_timeout(500)
        if selector is not None:  # the clip is in the page's coordinates (full_page): the element's top down
            box = page.locator(selector).first.bounding_box()
            y = 0.0 if box is None else box["y"] + float(page.evaluate("window.scrollY"))
            page.screenshot(path=str(out), full_page=True, clip={"x": 0, "y": y, "width": width, "height": height})
        else:
            page.screenshot(path=str(out))
        browser.close()


def _cut(frame: Path, out: Path, window: tuple[int, int, int, int]) -> None:
    from PIL import Image

    with Image.open(frame) as image:
        image.crop(window).save(out, optimize=True)


def _gif_frame(gif: Path, index: int, out: Path) -> None:
    """Frame `index` of an animation as it plays, at its own size (640 wide: the trails as a reader sees them)."""
    from PIL import Image

    with Image.open(gif) as image:
        image.seek(index)
        image.convert("RGB").save(out, optimize=True)


def _segment(args: Sequence[str | Path]) -> Path:
    code = detect(["segment", *map(str, args), "--quiet"])
    if code != 0:
        raise SystemExit(f"media: detect segment {' '.join(map(str, args))} exited {code}")
    out = Path(args[list(args).index("--out") + 1])
    [segment] = [p for p in out.iterdir() if (p / "manifest.json").is_file()]
    return segment


def _frame(segment: Path, camera: str) -> Path:
    return sorted((segment / "frames" / camera).iterdir())[0]


def _middle_frame(segment: Path, camera: str) -> Path:
    frames = sorted((segment / "frames" / camera).iterdir())
    return frames[len(frames) * 3 // 4]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.media", description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=Path, default=FRAME)
    parser.add_argument("--out", type=Path, default=ROOT / "media")
    parser.add_argument("--screenshots", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--work", type=Path, default=None, help="where the runs go (default: a temporary folder)")
    args = parser.parse_args(argv)
    if not args.frame.is_file():
        print(f"media: {args.frame}: no such file (the real frame is in ../shared)", file=sys.stderr)
        return 2
    if not CHROMIUM.is_file():
        print(f"media: {CHROMIUM}: no Chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="detect-media-"))
    out = args.out
    out.mkdir(parents=True, exist_ok=True)

    if detect(["run", str(args.frame), "--out", str(work / "default"), "--quiet"]) != 0:
        raise SystemExit("media: detect run failed")
    [default] = [p for p in (work / "default").iterdir() if (p / "manifest.json").is_file()]
    plain = _segment([args.frame, "--out", work / "plain", "--draw", "detections", "--no-gif", "--no-report"])
    tiled = _segment([args.frame, "--out", work / "tiled", "--tile", "512", "--no-gif"])
    pan = _segment([write_pan_segment(args.frame, work / "pan_in"), "--out", work / "pan"])
    if detect(["compare", str(default), str(tiled), "--out", str(work / "compare"), "--quiet"]) != 0:
        raise SystemExit("media: detect compare failed")

    # Frames at full resolution, cut to the part that matters: chips read as they are drawn.
    _cut(_frame(plain, "FRONT_LEFT"), out / "front_left_coco.png", FRONT_LEFT_WINDOW)
    _cut(_frame(default, "FRONT"), out / "front_errors_coco.png", FRONT_WINDOW)
    _cut(_middle_frame(pan, "FRONT"), out / "tracking_pan.png", PAN_WINDOW)
    _gif_frame(pan / "FRONT.gif", len(list((pan / "frames" / "FRONT").iterdir())) * 3 // 4, out / "tracking_pan_gif.png")
    shutil.copyfile(default / "mosaic.gif", out / "mosaic_coco.gif")
    shutil.copyfile(default / "pr_curves.png", out / "pr_curves_coco.png")
    shutil.copyfile(default / "thresholds.png", out / "thresholds_coco.png")
    shots = args.screenshots
    shots.mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        screenshot(default / "report.html", shots / f"report_{width}.png", width)
        screenshot(work / "default" / "index.html", shots / f"index_{width}.png", width)
    screenshot(work / "compare" / "compare.html", out / "compare.png", 1000, height=1150)
    # docs/evaluation.md's close-ups of the pages: the evaluation, its galleries, where compare's sides disagree
    screenshot(default / "report.html", out / "report_eval.png", 1000, "#evaluation", height=1000)
    screenshot(default / "report.html", out / "report_errors.png", 1000, "h3:has-text('VEHICLE: highest-scoring')",
               height=1000)
    screenshot(default / "report.html", out / "report_failures.png", 1000, "h3:has-text('Where the AP goes')",
               height=760)
    screenshot(work / "default" / "index.html", out / "index_where_it_fails.png", 1000, "#worst-moments", height=1000)
    screenshot(work / "compare" / "compare.html", out / "compare_disagree.png", 1000,
               "h2:has-text('Where they disagree most')", height=800)
    print(f"media: pictures in {out}; runs in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
