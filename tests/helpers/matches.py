"""A matches table (what `detect eval` writes to matches.parquet) from a few dict rows."""

from __future__ import annotations

import pandas as pd

from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP


def matches_frame(rows: list[dict]) -> pd.DataFrame:
    """Rows of matches.parquet: each dict over a default (segment "s", one camera image, nothing matched)."""
    base = {SEGMENT: "s", TIMESTAMP: 1, CAMERA: 1, "iou": None, OBJECT_ID: None, "class_id": None}
    return pd.DataFrame([base | r for r in rows])
