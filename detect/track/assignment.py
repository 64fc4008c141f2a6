"""The optimal assignment (Jonker-Volgenant) that tracking and its scoring use, from scipy.

scipy.optimize is imported on the first call, not with this module: importing it takes ~0.5 s
(it brings scipy.linalg and scipy.special), which every `detect` command and every render process
paid at start-up only because they import the tracker's settings.
"""

from __future__ import annotations

import numpy as np


def linear_sum_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the assignment of least total `cost` (scipy's, unchanged)."""
    from scipy.optimize import linear_sum_assignment as solve

    rows, cols = solve(cost)
    return rows, cols
