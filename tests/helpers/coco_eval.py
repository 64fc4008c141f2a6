"""pycocotools run by hand on a segment's tables, with the plain class map (no rider pairing), to hold
`detect eval` to the library's numbers."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pyarrow.parquet as pq

# Waymo's types from the COCO classes, without pairing riders with their bicycles (every label counted).
PLAIN_MAP = {"car": "VEHICLE", "truck": "VEHICLE", "bus": "VEHICLE", "motorcycle": "VEHICLE", "person": "PEDESTRIAN"}


def pycocotools_by_hand(segment_dir: Path) -> dict[str, list[float]]:
    """pycocotools' 12 stats per type, fed straight from detections.parquet and ground_truth.parquet
    (the plain map: no rider pairing; every label counted)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    rows = pq.read_table(segment_dir / "detections.parquet").to_pylist()
    labels = pq.read_table(segment_dir / "ground_truth.parquet").to_pylist()
    images = sorted({r["key.camera_name"] for r in labels} | {r["key.camera_name"] for r in rows})
    to_type = {3: 1, 8: 1, 6: 1, 4: 1, 1: 2}
    box = lambda r: [r["xmin"], r["ymin"], r["xmax"] - r["xmin"], r["ymax"] - r["ymin"]]  # noqa: E731
    truth = {"info": {}, "images": [{"id": i} for i in images], "categories": [{"id": 1}, {"id": 2}],
             "annotations": [{"id": n + 1, "image_id": r["key.camera_name"], "category_id": r["type"], "bbox": box(r),
                              "area": box(r)[2] * box(r)[3], "iscrowd": 0}
                             for n, r in enumerate(labels) if r["type"] in (1, 2)]}
    found = [{"image_id": r["key.camera_name"], "category_id": to_type[r["class_id"]], "bbox": box(r), "score": r["score"]}
             for r in rows if r["class_id"] in to_type]
    stats = {}
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = truth
        gt.createIndex()
        run = COCOeval(gt, gt.loadRes(found), "bbox")
        for waymo_type, name in ((1, "VEHICLE"), (2, "PEDESTRIAN")):
            run.params.catIds = [waymo_type]
            run.evaluate()
            run.accumulate()
            run.summarize()
            stats[name] = [float(v) for v in run.stats]
    return stats
