"""Column names and types of Waymo v2 components, and the naming of component files."""

from __future__ import annotations

import re

import pyarrow as pa

SEGMENT = "key.segment_context_name"
TIMESTAMP = "key.frame_timestamp_micros"
CAMERA = "key.camera_name"
KEY_COLUMNS: tuple[str, ...] = (SEGMENT, TIMESTAMP, CAMERA)
# The key columns with the types Waymo's converter writes: tables we write join on them as they are.
KEY_FIELDS: tuple[pa.Field, ...] = (
    pa.field(SEGMENT, pa.string()),
    pa.field(TIMESTAMP, pa.int64()),
    pa.field(CAMERA, pa.int8()),
)

IMAGE = "[CameraImageComponent].image"
CAMERA_IMAGE_COMPONENT = "camera_image"

# What the reader needs and the Arrow type kinds it accepts; everything else is never read.
REQUIRED_IMAGE_COLUMNS: dict[str, tuple[str, ...]] = {
    SEGMENT: ("string",),
    TIMESTAMP: ("integer",),
    CAMERA: ("integer",),
    IMAGE: ("binary",),
}

BOX_PREFIX = "[CameraBoxComponent]."
BOX_CENTER_X = BOX_PREFIX + "box.center.x"
BOX_CENTER_Y = BOX_PREFIX + "box.center.y"
BOX_SIZE_X = BOX_PREFIX + "box.size.x"
BOX_SIZE_Y = BOX_PREFIX + "box.size.y"
BOX_TYPE = BOX_PREFIX + "type"
OBJECT_ID = "key.camera_object_id"

_COMPONENT_RE = re.compile(r"^\[(\w+)Component\]\.")
_FLAT_RE = re.compile(r"^(?P<split>.+?)_(?P<component>camera_image|camera_box|camera_calibration|"
                      r"camera_hkp|camera_segmentation|camera_to_lidar_box_association|lidar|"
                      r"lidar_box|lidar_calibration|lidar_pose|lidar_segmentation|"
                      r"lidar_camera_projection|lidar_camera_synced_box|lidar_hkp|"
                      r"projected_lidar_box|stats|vehicle_pose)_(?P<segment>.+)$")


def type_kind(arrow_type: pa.DataType) -> str:
    """Coarse kind of an Arrow type, enough to tell a usable column from a wrong one."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "binary"
    if pa.types.is_integer(arrow_type):
        return "integer"
    return str(arrow_type)


def components_in(column_names: list[str]) -> list[str]:
    """Waymo component names found in column prefixes, e.g. ['camera_box']."""
    found: list[str] = []
    for name in column_names:
        match = _COMPONENT_RE.match(name)
        if match:
            component = _snake(match.group(1))
            if component not in found:
                found.append(component)
    return found


def component_of_filename(stem: str) -> str | None:
    """'training_camera_box_<segment>' -> 'camera_box'; None for names that carry no component."""
    match = _FLAT_RE.match(stem)
    return match.group("component") if match else None


def sibling_component(path: str, component: str) -> str | None:
    """Where the `component` file of the same segment would be, or None if the name says nothing.

    `<split>/camera_image/<seg>.parquet` -> `<split>/<component>/<seg>.parquet`;
    `<split>_camera_image_<seg>.parquet` -> `<split>_<component>_<seg>.parquet` beside it.
    """
    parent, _, name = path.rpartition("/")
    stem = name[: -len(".parquet")] if name.endswith(".parquet") else name
    match = _FLAT_RE.match(stem)
    if match and match.group("component") == CAMERA_IMAGE_COMPONENT:
        flat = f"{match.group('split')}_{component}_{match.group('segment')}.parquet"
        return f"{parent}/{flat}" if parent else flat
    grand, _, folder = parent.rpartition("/")
    if folder == CAMERA_IMAGE_COMPONENT:
        return f"{grand}/{component}/{name}" if grand else f"{component}/{name}"
    return None


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
