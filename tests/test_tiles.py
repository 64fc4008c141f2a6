"""Tiled inference (`--tile`): the layout, the mapping back, the edge drop and the merge on crafted
boxes, the batching, tiled == untiled below one tile, and what it gains on the real frame."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.coco_eval import PLAIN_MAP, pycocotools_by_hand
from helpers.paths import REAL_SEGMENT

from detect.cli import main
from detect.core.errors import UsageError
from detect.core.records import Detections
from detect.model.tiles import EDGE, TiledDetector, TileSpec, merge, shift_tile_boxes, tile_layout

SPEC = TileSpec(512)
CAR, PERSON = 3, 1


def boxes(*rows: tuple[tuple[float, float, float, float], float, int]) -> Detections:
    return Detections(np.array([r[0] for r in rows], np.float32).reshape(-1, 4), np.array([r[1] for r in rows]),
                      np.array([r[2] for r in rows], np.int32), tuple(str(r[2]) for r in rows))


def test_the_layout_covers_the_image_with_the_overlap_asked_and_the_last_tile_flush():
    layout = tile_layout(1920, 1280, SPEC)
    assert len(layout) == 15 and len(tile_layout(1920, 886, SPEC)) == 10  # 5 x 3 and 5 x 2 tiles of 512 px
    xs = sorted({t[0] for t in layout})
    assert xs == [0, 352, 704, 1056, 1408] and sorted({t[1] for t in layout}) == [0, 384, 768]
    assert all(t[2] - t[0] == 512 and t[3] - t[1] == 512 for t in layout)
    assert all(b - a <= 512 * (1 - 0.2) for a, b in zip(xs, xs[1:], strict=False))  # at least the overlap asked
    covered = np.zeros((1280, 1920), bool)
    for x0, y0, x1, y1 in layout:
        covered[y0:y1, x0:x1] = True
    assert covered.all()


def test_small_and_narrow_images():
    assert tile_layout(512, 512, SPEC) == [] and tile_layout(300, 200, SPEC) == []  # one tile's worth: not tiled
    narrow = tile_layout(400, 1280, SPEC)
    assert [t[0] for t in narrow] == [0, 0, 0] and all(t[2] == 400 for t in narrow)  # as wide as the image
    assert len(tile_layout(7680, 4320, SPEC)) == 19 * 11


def test_a_box_cut_by_an_inner_tile_border_is_dropped_and_the_rest_shifted():
    tile = (352, 384, 864, 896)  # an inner tile of a 1920x1280 frame
    found = boxes(((EDGE - 1, 100, 60, 200), 0.9, CAR),  # cut at the left border
                  ((100, 100, 200, 512 - EDGE + 1), 0.8, CAR),  # cut at the bottom border
                  ((EDGE + 2, 50, 100, 150), 0.7, PERSON))  # near, not on, the border: kept
    shifted = shift_tile_boxes(found, tile, 1920, 1280)
    np.testing.assert_array_equal(shifted.xyxy, [[352 + EDGE + 2, 434, 452, 534]])
    corner = shift_tile_boxes(boxes(((0, 0, 30, 30), 0.9, CAR)), (0, 0, 512, 512), 1920, 1280)
    np.testing.assert_array_equal(corner.xyxy, [[0, 0, 30, 30]])  # the image's own border: nothing is cut there


def test_the_merge_keeps_the_best_box_per_object_and_class():
    whole = boxes(((100, 100, 200, 200), 0.6, CAR), ((100, 100, 200, 200), 0.5, PERSON))
    tile = boxes(((102, 101, 201, 203), 0.9, CAR), ((600, 600, 640, 640), 0.4, CAR))
    merged = merge(whole, [tile], 0.5)
    assert merged.scores.tolist() == pytest.approx([0.9, 0.5, 0.4]) and merged.class_ids.tolist() == [CAR, PERSON, CAR]


class Bright:
    """A fake detector: one box around the white pixels of each input (in the `sizes` given), and
    the largest batch it was handed."""

    batch_size = 4

    def __init__(self) -> None:
        self.largest = 0
        self.shapes: set[tuple[int, ...]] = set()

    def __call__(self, images: np.ndarray, sizes=None) -> list[Detections]:
        self.largest = max(self.largest, len(images))
        self.shapes.add(images.shape[1:])
        out = []
        for image, (w, h) in zip(images, sizes, strict=True):
            ys, xs = np.nonzero(image[..., 0] > 200)
            if not len(xs):
                out.append(Detections.empty())
                continue
            sx, sy = w / image.shape[1], h / image.shape[0]
            out.append(boxes(((xs.min() * sx, ys.min() * sy, (xs.max() + 1) * sx, (ys.max() + 1) * sy), 0.9, CAR)))
        return out


def test_the_tiled_detector_maps_tile_boxes_back_and_feeds_one_batch_at_a_time():
    frame = np.zeros((1, 1280, 1920, 3), np.uint8)
    frame[0, 700:730, 1000:1030] = 255  # a far car: 30 px
    fake = Bright()
    found = TiledDetector(fake, SPEC, None, lambda images, size: images)(frame)
    assert len(found) == 1 and len(found[0]) == 1  # the whole image's box and the tiles' merged into one
    np.testing.assert_array_equal(found[0].xyxy, [[1000, 700, 1030, 730]])
    assert fake.largest == 4 and fake.shapes == {(1280, 1920, 3), (512, 512, 3)}  # never all 15 tiles at once


def test_a_bad_tile_is_refused():
    with pytest.raises(UsageError, match=r"^--tile 10: a tile must be 64-4096 pixels$"):
        TileSpec(10)
    with pytest.raises(UsageError, match=r"^--tile-overlap 0.95: must be at least 0 and below 0.9$"):
        TileSpec(512, 0.95)


def test_tiled_equals_untiled_on_images_smaller_than_a_tile(tiny_v2_path, stub_dynamic_dir, tmp_path):
    common = [str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--quiet", "--no-gif", "--no-png", "--no-eval",
              "--no-report"]
    assert main(["segment", *common, "--out", str(tmp_path / "plain")]) == 0
    assert main(["segment", *common, "--out", str(tmp_path / "tiled"), "--tile", "128"]) == 0  # 96x64 images
    segment = next(p.name for p in (tmp_path / "plain").iterdir() if p.is_dir())
    plain, tiled = (pq.read_table(tmp_path / d / segment / "detections.parquet") for d in ("plain", "tiled"))
    assert plain.num_rows and plain.equals(tiled)
    manifest = json.loads((tmp_path / "tiled" / segment / "manifest.json").read_text())
    assert manifest["settings"]["tile"] == {"size": 128, "overlap": 0.2, "nms_iou": 0.5, "edge_px": EDGE}
    assert main(["segment", *common, "--out", str(tmp_path / "tiled"), "--tile", "96", "--resume"]) == 2  # a change


@pytest.fixture(scope="module")
def tiled_run(coco_model, real_frame_path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiled")
    for name, extra in (("plain", []), ("tiled", ["--tile", "512"])):
        assert main(["segment", str(real_frame_path), "--model", str(coco_model), "--out", str(out / name), "--quiet",
                     "--no-gif", "--no-png", "--no-report", "--class-map", str(_plain_map(out)), *extra]) == 0
    return out


def _plain_map(out: Path) -> Path:
    path = out / "map.json"
    path.write_text(json.dumps(PLAIN_MAP))
    return path


def test_tiles_find_the_far_cars_on_the_real_frame(tiled_run):
    """--tile 512 on the COCO CenterNet: VEHICLE AP50 >= 0.45 and PEDESTRIAN >= 0.50 (every label),
    equal to pycocotools by hand; small vehicles found better than without tiles."""
    levels = {name: {r["name"]: r for r in json.loads((tiled_run / name / REAL_SEGMENT / "eval.json").read_text())
                     ["levels"]["LEVEL_2"]} for name in ("plain", "tiled")}
    tiled, plain = levels["tiled"], levels["plain"]
    assert tiled["VEHICLE"]["ap50"] >= 0.45 and tiled["PEDESTRIAN"]["ap50"] >= 0.50
    assert tiled["VEHICLE"]["ap50_by_size"]["small"] > plain["VEHICLE"]["ap50_by_size"]["small"]
    assert tiled["VEHICLE"]["ap50"] > plain["VEHICLE"]["ap50"] + 0.1
    for name, stats in pycocotools_by_hand(tiled_run / "tiled" / REAL_SEGMENT).items():
        assert tiled[name]["ap50"] == pytest.approx(stats[1], abs=1e-6), name
