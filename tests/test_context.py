"""What Waymo records around the camera images (conditions, calibrations, 3D labels) read from
both formats, and the range of every 2D box drawn from it."""

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from helpers.paths import REAL_SEGMENT

from detect.core.cameras import CameraName
from detect.core.errors import InputError
from detect.core.records import FrameKey
from detect.waymo.camera_labels import read_labels
from detect.waymo.context.frame_context import CameraCalibration, ImageContext, Labels3D, ProjectedBoxes, RangeSource
from detect.waymo.context.ranges import box_ranges, distort, ground_plane_range, undistort
from detect.waymo.context.read import read_context
from detect.waymo.context.segment import PARTS
from detect.waymo.readers import read_keys

COMPONENTS = ("camera_image", "camera_box", "stats", "camera_calibration", "lidar_box", "projected_lidar_box",
              "camera_to_lidar_box_association")


def _copy(folder, tmp_path, without=()):
    """The real v2 folder's components (less `without`) in a folder of the test's own."""
    for component in COMPONENTS:
        if component not in without:
            (tmp_path / component).mkdir()
            shutil.copy(folder / component / f"{REAL_SEGMENT}.parquet", tmp_path / component)
    return tmp_path / "camera_image" / f"{REAL_SEGMENT}.parquet"


def _rewrite(folder, component, change):
    path = folder / component / f"{REAL_SEGMENT}.parquet"
    pq.write_table(change(pq.read_table(path)), path)
    return path


def _label_ranges(path):
    keys = read_keys(str(path))
    context = read_context(keys)
    labels = read_labels(keys)
    return context, {key: (image, context.box_ranges(key, image.xyxy, image.object_ids))
                     for key, image in labels.by_key.items()}


def test_the_real_v2_folder_gives_each_image_its_conditions_calibration_and_3d_labels(real_v2_folder):
    context = read_context(read_keys(str(real_v2_folder / "camera_image" / f"{REAL_SEGMENT}.parquet")))
    assert context.found == frozenset(PARTS)
    key = FrameKey(REAL_SEGMENT, 1553735853462203, CameraName.FRONT)
    assert context.image_context(key) == ImageContext("Day", "location_sf", "sunny")
    assert set(context.calibrations) == set(CameraName)
    assert (context.calibrations[CameraName.FRONT].width, context.calibrations[CameraName.SIDE_LEFT].height) == (1920, 886)
    assert sum(len(labels) for labels in context.labels3d.values()) == 75
    assert sum(len(boxes) for boxes in context.projected.values()) == 62
    assert not context.associations  # the component is there, and empty for this frame


def test_a_v1_frame_gives_the_same_context_as_its_v2_folder(real_v2_folder, real_frame_path):
    v2 = read_context(read_keys(str(real_v2_folder / "camera_image" / f"{REAL_SEGMENT}.parquet")))
    v1 = read_context(read_keys(str(real_frame_path)))
    assert v1.found == v2.found - {"camera_to_lidar_box_association"}  # v1 has no association on this frame
    assert v1.conditions == v2.conditions
    assert all(v1.calibrations[c].equals(v2.calibrations[c]) for c in CameraName)
    (ts, v1_labels), = v1.labels3d.items()
    v2_labels = v2.labels3d[ts]
    order = np.argsort(v1_labels.object_ids), np.argsort(v2_labels.object_ids)
    assert sorted(v1_labels.object_ids) == sorted(v2_labels.object_ids)
    np.testing.assert_allclose(v1_labels.range_m[order[0]], v2_labels.range_m[order[1]], rtol=1e-6)
    assert {k: sorted(v.object_ids) for k, v in v1.projected.items()} == {
        k: sorted(v.object_ids) for k, v in v2.projected.items()}


def test_every_real_label_gets_a_range_from_a_tied_3d_label_or_the_ground_plane(real_v2_folder, tmp_path):
    _, by_key = _label_ranges(real_v2_folder / "camera_image" / f"{REAL_SEGMENT}.parquet")
    sources = np.concatenate([ranges.source for _, ranges in by_key.values()])
    assert len(sources) == 66
    assert int((sources == RangeSource.PROJECTED_BOX).sum()) == 15  # IoU >= 0.5 with a projected 3D box
    assert int((sources == RangeSource.GROUND_PLANE).sum()) >= 45
    values = np.concatenate([ranges.range_m for _, ranges in by_key.values()])
    assert values.dtype == np.float32
    known = np.isfinite(values)
    assert np.all((values[known] > 1) & (values[known] <= 1000))  # boxes near the horizon reach ~400 m


def test_the_ground_plane_estimate_is_within_15_percent_of_the_tied_3d_labels_range(real_v2_folder):
    """The estimate every untied box gets, measured on the labels tied to a 3D label (median
    relative error; 0.08 on the real frame's 15 tied labels)."""
    context, by_key = _label_ranges(real_v2_folder / "camera_image" / f"{REAL_SEGMENT}.parquet")
    errors = []
    for key, (image, ranges) in by_key.items():
        tied = ranges.source == RangeSource.PROJECTED_BOX
        bottom = image.xyxy[tied]
        estimate = ground_plane_range(context.calibrations[key.camera_name], (bottom[:, 0] + bottom[:, 2]) / 2,
                                      bottom[:, 3])
        errors.extend(np.abs(estimate - ranges.range_m[tied]) / ranges.range_m[tied])
    assert len(errors) == 15
    assert np.median(errors) <= 0.15


def test_without_3d_labels_every_label_range_is_the_ground_plane_estimate(real_v2_folder, tmp_path):
    _, by_key = _label_ranges(_copy(real_v2_folder, tmp_path, without=("lidar_box", "projected_lidar_box")))
    sources = np.concatenate([ranges.source for _, ranges in by_key.values()])
    assert set(sources.tolist()) <= {RangeSource.GROUND_PLANE, RangeSource.NONE}
    assert int((sources == RangeSource.GROUND_PLANE).sum()) >= 60


def test_without_a_calibration_or_stats_untied_ranges_and_conditions_are_unknown(real_v2_folder, tmp_path):
    context, by_key = _label_ranges(_copy(real_v2_folder, tmp_path, without=("camera_calibration", "stats")))
    assert "stats" not in context.found and "camera_calibration" not in context.found
    sources = np.concatenate([ranges.source for _, ranges in by_key.values()])
    values = np.concatenate([ranges.range_m for _, ranges in by_key.values()])
    assert set(sources.tolist()) == {RangeSource.NONE, RangeSource.PROJECTED_BOX}
    assert np.isnan(values[sources == RangeSource.NONE]).all()
    assert context.image_context(next(iter(by_key))) == ImageContext()


def test_the_association_component_ties_a_label_before_any_overlap(real_v2_folder, tmp_path):
    path = _copy(real_v2_folder, tmp_path)
    labels = read_labels(read_keys(str(path)))
    key, image = next((k, v) for k, v in labels.by_key.items() if k.camera_name == CameraName.FRONT)
    labels3d = read_context(read_keys(str(path))).labels3d[key.frame_timestamp_micros]
    far = labels3d.object_ids[int(np.argmax(labels3d.range_m))]  # the farthest: the tie names it, whatever the boxes
    ties = pa.table({"key.segment_context_name": [REAL_SEGMENT], "key.frame_timestamp_micros": [key.frame_timestamp_micros],
                     "key.camera_name": [int(key.camera_name)], "key.camera_object_id": [image.object_ids[0]],
                     "key.laser_object_id": [far]})
    _rewrite(tmp_path, "camera_to_lidar_box_association", lambda _: ties)
    context = read_context(read_keys(str(path)))
    ranges = context.box_ranges(key, image.xyxy, image.object_ids)
    assert ranges.source[0] == RangeSource.ASSOCIATION
    assert ranges.range_m[0] == labels3d.range_m[labels3d.object_ids.index(far)]
    assert context.box_ranges(key, image.xyxy).source[0] != RangeSource.ASSOCIATION  # detections have no ids


@pytest.mark.parametrize(("component", "change", "message"), [
    ("stats", lambda t: t.set_column(2, "[StatsComponent].time_of_day", pa.array([1])),
     r"stats/.*\.parquet: column \[StatsComponent\]\.time_of_day holds int64, expected text: not a stats component"),
    ("stats", lambda t: t.set_column(2, "[StatsComponent].time_of_day", pa.array(["x" * 5000])),
     r"stats/.*\.parquet: column \[StatsComponent\]\.time_of_day holds a value of 5,000 bytes"),
    ("lidar_box", lambda t: t.drop_columns(["[LiDARBoxComponent].box.heading"]),
     r"lidar_box/.*\.parquet: not a lidar_box component \(no column \[LiDARBoxComponent\]\.box\.heading\)"),
    ("lidar_box", lambda t: t.set_column(3, "[LiDARBoxComponent].box.center.x", pc.multiply(t.column(3), 1e6)),
     r"lidar_box/.*\.parquet: 3D label centers must be finite and within 10,000 m: not a lidar_box component"),
    ("camera_calibration", lambda t: t.set_column(2, "[CameraCalibrationComponent].intrinsic.f_u",
                                                  pa.array([float("nan")] * 5)),
     r"camera_calibration/.*\.parquet: FRONT f_u is nan, expected 0-100000 pixels"),
    ("projected_lidar_box", lambda t: t.set_column(2, "key.camera_name", pa.array([9] * t.num_rows)),
     r"projected_lidar_box/.*\.parquet: unknown key\.camera_name value\(s\) \[9\]; expected 1-5"),
])
def test_a_component_that_is_not_waymos_is_refused_in_one_line_naming_its_file(real_v2_folder, tmp_path, component,
                                                                               change, message):
    path = _copy(real_v2_folder, tmp_path)
    _rewrite(tmp_path, component, change)
    with pytest.raises(InputError, match=message) as caught:
        read_context(read_keys(str(path)))
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_component_of_more_rows_than_its_frames_can_hold_is_refused_from_its_footer(real_v2_folder, tmp_path):
    path = _copy(real_v2_folder, tmp_path)
    _rewrite(tmp_path, "stats", lambda t: pa.concat_tables([t] * 104_001))
    with pytest.raises(InputError, match=r"stats/.*\.parquet: holds 104,001 rows, far more than 1 frame\(s\) can"):
        read_context(read_keys(str(path)))


def test_undistort_inverts_the_lens_model():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-0.6, 0.6, 200), rng.uniform(-0.4, 0.4, 200)
    lens = (-0.32, 0.12, 0.001, -0.0005, -0.02)
    back = undistort(*distort(x, y, lens), lens)
    np.testing.assert_allclose(back, (x, y), atol=1e-9)


def _straight_ahead(height_m=2.0):
    """A camera `height_m` above the vehicle's origin looking along x, no lens distortion."""
    extrinsic = np.eye(4)
    extrinsic[2, 3] = height_m
    return CameraCalibration(CameraName.FRONT, 1000.0, 1000.0, 960.0, 640.0, (0, 0, 0, 0, 0), extrinsic, 1920, 1280)


def test_the_ground_plane_ray_meets_the_ground_where_geometry_says():
    """Camera 2 m up, ground at z = 0: a pixel 100 px below the centre sees the ground 2 * f / 100 = 20 m ahead;
    at or above the horizon it sees none."""
    calibration = _straight_ahead()
    ranges = ground_plane_range(calibration, np.array([960.0, 960.0, 960.0]), np.array([740.0, 640.0, 500.0]),
                                ground_z=0.0)
    np.testing.assert_allclose(ranges[0], 20.0)
    assert np.isnan(ranges[1:]).all()


def test_a_box_ties_to_the_projected_3d_box_it_overlaps_at_iou_half_or_more():
    labels3d = Labels3D(("near", "far"), [[10, 0, 1], [40, 30, 1]], [[4, 2, 1.5]] * 2, [0, 0], [1, 1])
    projected = ProjectedBoxes(("near", "far"), [[0, 0, 100, 100], [500, 650, 600, 750]])
    boxes = np.array([[0, 0, 100, 90], [500, 650, 600, 690], [900, 700, 1000, 800], [900, 500, 1000, 600]],
                     np.float32)
    ranges = box_ranges(boxes, labels3d, projected, calibration=_straight_ahead())
    assert ranges.source.tolist() == [RangeSource.PROJECTED_BOX, RangeSource.GROUND_PLANE,  # "far" at IoU 0.4
                                      RangeSource.GROUND_PLANE, RangeSource.NONE]  # the last above the horizon
    assert ranges.range_m[0] == np.float32(10.0)
    assert ranges.values()[3] is None


def test_an_image_of_another_size_than_its_calibration_gets_no_ground_plane_estimate():
    boxes = np.array([[900, 700, 1000, 800]], np.float32)
    assert box_ranges(boxes, calibration=_straight_ahead(), image_size=(960, 640)).values() == [None]
    assert box_ranges(boxes, calibration=_straight_ahead(), image_size=(1920, 1280)).values()[0] is not None


def _edited_v1(real_frame_path, tmp_path, edit):
    """The real v1 frame with `edit(frame)` applied, written as a segment of the test's own."""
    import tensorflow as tf
    from waymo_open_dataset import dataset_pb2

    record, = (bytes(r.numpy()) for r in tf.data.TFRecordDataset(str(real_frame_path)))
    frame = dataset_pb2.Frame.FromString(record)
    edit(frame)
    path = tmp_path / f"{REAL_SEGMENT}.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(frame.SerializeToString())
    return path


def test_a_v1_frame_with_a_calibration_no_camera_has_is_refused_naming_the_file_and_record(real_frame_path, tmp_path):
    def mirror(frame):
        frame.context.camera_calibrations[0].extrinsic.transform[0] = -5.0  # no longer a rotation

    path = _edited_v1(real_frame_path, tmp_path, mirror)
    with pytest.raises(InputError, match=r"\.tfrecord: record 0: FRONT extrinsic is not a rotation and a translation"):
        read_keys(str(path))


def test_a_v1_frame_without_stats_or_3d_labels_has_them_not_available(real_frame_path, tmp_path):
    def strip(frame):
        frame.context.ClearField("stats")
        del frame.laser_labels[:]
        del frame.projected_lidar_labels[:]

    context = read_context(read_keys(str(_edited_v1(real_frame_path, tmp_path, strip))))
    assert context.found == {"camera_calibration"}
    assert set(context.conditions.values()) == {ImageContext()}
