"""A table's rows grouped by the camera image they belong to: what every per-image pass starts from."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

import numpy as np

Key = TypeVar("Key", bound=Hashable)


def rows_by_image(keys: Iterable[Key]) -> dict[Key, np.ndarray]:
    """Per image key (a `FrameKey`), the int64 indices of its rows in table order; images in the
    order they first appear."""
    rows: dict[Key, list[int]] = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    return {key: np.asarray(index, np.int64) for key, index in rows.items()}
