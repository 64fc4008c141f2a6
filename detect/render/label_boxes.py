"""Waymo's labels drawn under the detections: dashed boxes, one color per Waymo type, no score,
and a small legend in the top-right corner naming the types on the image."""

from __future__ import annotations

import numpy as np
from PIL import Image

from detect.core.records import WAYMO_TYPE_NUMBERS, Labels, WaymoType
from detect.render.chips import RGB, chip_height, paint_chip
from detect.render.draw import draw_boxes, scaled_font_size, to_array

# Colors no COCO class of the default palette uses for a box of its own at a glance: the labels
# read as a separate layer. Legible on asphalt, sky and buildings.
TYPE_COLORS: dict[int, RGB] = {
    WaymoType.VEHICLE: (0, 229, 255),  # cyan
    WaymoType.PEDESTRIAN: (255, 235, 59),  # yellow
    WaymoType.CYCLIST: (255, 64, 255),  # magenta
    WaymoType.SIGN: (255, 255, 255),
    WaymoType.UNKNOWN: (160, 160, 160),
}


def type_name(waymo_type: int) -> str:
    return WaymoType(waymo_type).name if waymo_type in WAYMO_TYPE_NUMBERS else f"TYPE {waymo_type}"


def draw_labels(image: np.ndarray | Image.Image, labels: Labels, *, line_width: int | None = None,
                legend: bool = True, in_place: bool = False) -> np.ndarray | Image.Image:
    """`labels` drawn dashed on a copy of `image` (or on `image` itself with `in_place`, for a
    writable array the caller owns), returned as the same kind of image."""
    if not isinstance(labels, Labels):
        raise TypeError(f"labels must be a Labels, got {type(labels).__name__}")
    if in_place:
        if not isinstance(image, np.ndarray) or not image.flags.writeable or not image.flags.c_contiguous:
            raise ValueError("in_place drawing needs a writable, C-contiguous numpy array")
        canvas = image
    else:
        canvas = to_array(image)
    colors = [TYPE_COLORS.get(int(t), TYPE_COLORS[WaymoType.UNKNOWN]) for t in labels.types]
    draw_boxes(canvas, labels.xyxy, [None] * len(labels), colors, line_width=line_width, dashed=True)
    if legend and len(labels):
        paint_legend(canvas, sorted({int(t) for t in labels.types}))
    return Image.fromarray(canvas, mode="RGB") if isinstance(image, Image.Image) else canvas


def paint_legend(canvas: np.ndarray, types: list[int]) -> None:
    """One chip per type, stacked in the top-right corner ("label: PEDESTRIAN"), on `canvas` in place."""
    height, width = canvas.shape[:2]
    size = scaled_font_size(width, height)  # the chips' size: ~11 px in the 640-wide GIF and mosaic tiles
    step = chip_height(size)
    for row, waymo_type in enumerate(types):
        bottom = (row + 1) * step  # a chip sits just above its box's top edge
        paint_chip(canvas, (width, bottom, width, bottom), f"label: {type_name(waymo_type)}",
                   TYPE_COLORS.get(waymo_type, TYPE_COLORS[WaymoType.UNKNOWN]), size)
