"""The pan segment the README's tracking picture is made from: a real camera image sliding at 10 Hz,
Waymo's labels moved with it, each keeping its object id."""

from __future__ import annotations

import numpy as np
import pytest

from detect.core.cameras import CameraName
from detect.tools import media
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import read_keys


@pytest.mark.slow  # 40 JPEGs of 1600x1280
def test_the_pan_segment_slides_the_image_and_moves_each_label_with_its_id(real_frame_path, tmp_path):
    path = media.write_pan_segment(real_frame_path, tmp_path)
    keys = read_keys(str(path))
    labels = read_labels(keys)
    assert labels is not None
    frames = sorted(labels.by_key, key=lambda k: k.frame_timestamp_micros)
    assert len(frames) == media.PAN_FRAMES and {k.camera_name for k in frames} == {CameraName.FRONT}
    assert np.diff([k.frame_timestamp_micros for k in frames]).tolist() == [100_000] * (media.PAN_FRAMES - 1)
    first, last = labels.get(frames[0]), labels.get(frames[-1])
    common = sorted(set(first.object_ids) & set(last.object_ids))
    assert len(common) >= 5
    for object_id in common:
        a, b = first.xyxy[first.object_ids.index(object_id)], last.xyxy[last.object_ids.index(object_id)]
        if 0 < b[0] and a[2] < media.PAN_WIDTH:  # inside the window both times: moved by the pan
            assert b[0] - a[0] == pytest.approx(-media.PAN_STEP * (media.PAN_FRAMES - 1), abs=0.01)
