"""Labels and detections as COCO JSON: what the evaluation library reads, and what `detect export
coco` writes so any COCO tool can check our numbers.

Image ids are stable: the first 48 bits of the SHA-256 of `segment/timestamp/camera`, the same in
every run and on every machine. Each image names its source camera frame (`image_file_name`, where
`detect export coco --images` copies the original JPEG), its size and the input file. Categories are
Waymo's types. A LEVEL_1 evaluation marks LEVEL_2
labels `iscrowd` (COCO's ignore mechanism: a detection on them is neither a hit nor a false
positive); LEVEL_2 counts every label.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import NotRequired, TypedDict

import numpy as np

from detect.core.frame_rows import rows_by_image
from detect.core.names import segment_dir_name
from detect.core.records import LEVEL_1, LEVEL_2, FrameKey, WaymoType
from detect.evaluate.segment_results import SegmentResults
from detect.model.classmap import ClassMap

IMAGES_DIR = "images"


# COCO's JSON format, as faster-coco-eval / pycocotools take it and `detect export` writes it.
class CocoImage(TypedDict):
    id: int
    file_name: str
    width: NotRequired[int]  # when the run recorded the image's size
    height: NotRequired[int]
    segment_context_name: str
    frame_timestamp_micros: int
    camera_name: int
    input_path: NotRequired[str]  # the segment file the run read


class CocoAnnotation(TypedDict):
    id: int
    image_id: int
    category_id: int  # the Waymo type
    bbox: list[float]  # x, y, width, height
    area: float
    iscrowd: int  # LEVEL_2 labels at LEVEL_1: ignored, neither found nor missed
    difficulty: int
    object_id: str


class CocoCategory(TypedDict):
    id: int
    name: str
    supercategory: str


class CocoDetection(TypedDict):
    image_id: int
    category_id: int
    bbox: list[float]
    score: float
    model_class_id: int
    range_m: NotRequired[float]  # metres (-1: not known), for the range slices; never exported


class CocoInfo(TypedDict):
    description: str
    level: str
    evaluated_category_ids: NotRequired[list[int]]


class CocoDataset(TypedDict):
    info: CocoInfo
    images: list[CocoImage]
    annotations: list[CocoAnnotation]
    categories: list[CocoCategory]

def image_id(key: FrameKey) -> int:
    """A stable COCO image id from Waymo's key (48 bits: exact in JSON and in JavaScript)."""
    text = f"{key.segment_context_name}/{key.frame_timestamp_micros}/{int(key.camera_name)}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:6], "big")


def ground_truth(segments: Iterable[SegmentResults], types: list[int], level: int = LEVEL_2,
                 ranges: bool = False) -> CocoDataset:
    """The labels as a COCO `instances` dict (every processed image, labeled or not); with `ranges`,
    each label's `area` is its range in metres (-1 when not known), as the range slices match."""
    images: list[CocoImage] = []
    annotations: list[CocoAnnotation] = []
    for segment in segments:
        for key in sorted(segment.images, key=lambda k: k.order):
            images.append(image_entry(key, segment))
            labels = segment.labels.get(key)
            if labels is None:
                continue
            distances = _ranges(segment.label_ranges.get(key), len(labels)) if ranges else None
            for j, (box, waymo_type, difficulty, object_id) in enumerate(zip(
                    labels.xyxy, labels.types, labels.difficulty, labels.object_ids, strict=True)):
                if int(waymo_type) not in types:
                    continue
                x0, y0, x1, y1 = (float(v) for v in box)
                crowd = int(level == LEVEL_1 and int(difficulty) == LEVEL_2)
                area = (x1 - x0) * (y1 - y0) if distances is None else distances[j]
                annotations.append({"id": len(annotations) + 1, "image_id": image_id(key), "category_id": int(waymo_type),
                                    "bbox": [x0, y0, x1 - x0, y1 - y0], "area": area, "iscrowd": crowd,
                                    "difficulty": int(difficulty), "object_id": object_id})
    return {"info": {"description": "Waymo camera labels exported by detect", "level": f"LEVEL_{level}"},
            "images": images, "annotations": annotations, "categories": categories(types)}


def detections(segments: Iterable[SegmentResults], class_map: ClassMap, types: list[int],
               ranges: bool = False) -> list[CocoDetection]:
    """The detections as a COCO results list in Waymo types (see `ClassMap.to_waymo`: unmapped
    classes dropped, a person riding a bicycle one CYCLIST box); with `ranges`, each with its
    `range_m` (-1 when not known; a rider's is its bicycle's, whose bottom is the pair's)."""
    out: list[CocoDetection] = []
    wanted = set(types)
    for segment in segments:
        rows = segment.detections
        by_image = {key: index for key, index in rows_by_image(rows.keys).items() if key in segment.images}
        for key in sorted(by_image, key=lambda k: k.order):
            index = by_image[key]
            boxes = class_map.to_waymo(rows.xyxy[index], rows.scores[index], rows.class_ids[index])
            image = image_id(key)
            distances = (_ranges(None if rows.range_m is None else rows.range_m[index], len(index))
                         if ranges else None)
            for j, ((x0, y0, x1, y1), score, waymo_type, class_id) in enumerate(zip(  # Python numbers, as JSON writes them
                    boxes.xyxy.tolist(), boxes.scores.tolist(), boxes.types.tolist(), boxes.class_ids.tolist(),
                    strict=True)):
                if waymo_type in wanted:
                    out.append({"image_id": image, "category_id": waymo_type, "bbox": [x0, y0, x1 - x0, y1 - y0],
                                "score": score, "model_class_id": class_id})
                    if distances is not None:
                        out[-1]["range_m"] = distances[boxes.rows[j][-1]]
    return out


def _ranges(values: np.ndarray | None, n: int) -> list[float]:
    """Ranges as the slices' `area`: metres, -1 where not known."""
    if values is None or len(values) != n:
        return [-1.0] * n
    return [-1.0 if not np.isfinite(v) else float(v) for v in np.asarray(values, np.float64)]


def categories(types: list[int]) -> list[CocoCategory]:
    return [{"id": t, "name": WaymoType(t).name, "supercategory": "waymo"} for t in types]


def label_types(segments: Iterable[SegmentResults]) -> list[int]:
    """Every Waymo type the segments' labels hold, sorted."""
    return sorted({int(t) for segment in segments for labels in segment.labels.values() for t in labels.types})


def image_entry(key: FrameKey, segment: SegmentResults) -> CocoImage:
    """A COCO image: its id, the source frame's path (see `image_file_name`), its size when the run
    recorded it, Waymo's key, and the segment file it comes from."""
    size = segment.sizes.get(key)
    sized = {"width": size[0], "height": size[1]} if size else {}  # keys in the order the JSON has always had
    entry = CocoImage(id=image_id(key), file_name=image_file_name(key), **sized,  # type: ignore[typeddict-item]
                      segment_context_name=key.segment_context_name, frame_timestamp_micros=key.frame_timestamp_micros,
                      camera_name=int(key.camera_name))
    if segment.input_path:
        entry["input_path"] = segment.input_path
    return entry


def image_file_name(key: FrameKey) -> str:
    """Where the original camera JPEG goes, relative to the exported JSON (`--images` writes it
    there): `images/<segment folder>/<CAMERA>/<timestamp>.jpg`, the folder named by the one rule
    that turns untrusted segment names into paths."""
    return f"{IMAGES_DIR}/{segment_dir_name(key.segment_context_name)}/{key.camera_name.name}/{key.frame_timestamp_micros}.jpg"
