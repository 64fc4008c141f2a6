"""The evaluation sliced by where and when: by each box's range from the car, and by each image's
time of day, location and weather (Waymo's RANGE, TIME_OF_DAY, LOCATION and WEATHER breakdowns).

The rule is COCO's area-range rule with range in place of area: within a slice, a label outside it
is ignored (neither found nor missed), a detection matched to a label of the slice counts as found,
an unmatched detection counts as a false alarm only in the slice its own context puts it in (its
own range; its image's conditions). A box without a range is in no range slice; an image whose
source recorded no conditions is in no condition slice. The library does the matching: a range
slice is one faster-coco-eval run whose `area` is the range (metres; -1 when unknown) and whose
area ranges are the bands; a condition slice is the images of that condition taken from the run
the whole evaluation already made, so it costs no second matching. Every slice is pooled over all
the segments evaluated, as the top level is. Each slice's AP50 at LEVEL_2 gets a bootstrap interval
when its images span enough independent blocks of frames (`slice_intervals`: compare's rule).

A dimension no image or box of the run has a value of is "not available" (its input had no
`stats`, no calibration and no 3D labels, or its results were written before these columns).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np
from faster_coco_eval import COCO, COCOeval_faster

from detect.core.cameras import CameraName
from detect.core.records import LEVEL_1, LEVEL_2, FrameKey
from detect.evaluate.pooled import AREA_RANGES, Pool
from detect.evaluate.slice_intervals import FrameBook, Intervals, ap50_intervals

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")  # a slice's per-type record (metrics.TypeMetrics)

CONDITIONS = ("time_of_day", "location", "weather")
DIMENSIONS = ("range", *CONDITIONS)
NOT_AVAILABLE = "not available"
# Waymo's RANGE breakdown: [0, 30), [30, 50), [50, inf) metres.
RANGE_BANDS: tuple[tuple[float, float | None], ...] = ((0.0, 30.0), (30.0, 50.0), (50.0, None))
UNKNOWN_RANGE = -1.0  # the `area` of a box without a range: outside every band
FAR = 1e10
# COCO's area ranges: "all", then one per band (the Pool's layout: four). COCO keeps a box whose
# area lies within [lo, hi], both ends included: each band ends at the float below its hi, so a
# box at exactly 30 m is in [30, 50) only.
RANGE_AREAS: list[list[float]] = [[-FAR, FAR], *([lo, FAR if hi is None else float(np.nextafter(hi, -np.inf))]
                                                 for lo, hi in RANGE_BANDS)]
if len(RANGE_AREAS) != AREA_RANGES:
    raise ImportError("the range bands must fill the pool's area ranges")



def band_name(lo: float, hi: float | None) -> str:
    return f"[{lo:g}, {'inf' if hi is None else f'{hi:g}'})"


def use_ranges(run: COCOeval_faster, dt: COCO) -> None:
    """Make a run (before `evaluate`) match by range bands: its area ranges the bands, each
    detection's area its range (`range_m`, -1 when unknown; labels get theirs in the dataset)."""
    for annotation in dt.anns.values():
        annotation["area"] = annotation.get("range_m", UNKNOWN_RANGE)
    run.params.areaRng = [list(band) for band in RANGE_AREAS]
    run.params.areaRngLbl = ["all", *(band_name(lo, hi) for lo, hi in RANGE_BANDS)]


@dataclasses.dataclass(frozen=True)
class Slice(Generic[T]):
    """One slice of one dimension: its name, its bounds (range bands), and per level the same
    per-type records as the top level."""

    name: str
    levels: dict[str, list[T]]
    lo: float | None = None
    hi: float | None = None
    intervals: Intervals | None = None  # LEVEL_2's AP50 intervals and the blocks behind them

    def to_json(self) -> dict[str, object]:
        bounds = {"lo": self.lo, "hi": self.hi} if self.lo is not None else {}
        blocks = {} if self.intervals is None else {"blocks": self.intervals.blocks}
        return {"slice": self.name, **bounds, **blocks,
                "levels": {level: [self._row(level, row) for row in rows] for level, rows in self.levels.items()}}

    def _row(self, level: str, row: T) -> dict[str, object]:
        out: dict[str, object] = dataclasses.asdict(row)
        if self.intervals is not None and level == f"LEVEL_{LEVEL_2}":
            interval = self.intervals.ap50.get(str(out.get("name")))
            out["ap50_interval"] = None if interval is None else list(interval)
        return out


class SlicePools:
    """The pools of every slice, for both difficulty levels, filled one segment at a time."""

    def __init__(self, types: list[int]) -> None:
        self.types = list(types)
        self.ranges = {level: Pool(self.types) for level in (LEVEL_1, LEVEL_2)}
        self.ranged = False  # a label or a detection of the run had a range
        self.conditions: dict[str, dict[str, dict[int, Pool]]] = {name: {} for name in CONDITIONS}
        self.book = FrameBook()

    def add_images(self, images: Mapping[int, FrameKey]) -> None:
        """The frame of each image (by COCO id) a chunk may hold: the blocks of the intervals."""
        self.book.add(images)

    def add_conditions(self, level: int, run: COCOeval_faster, gt: COCO, dt: COCO, cameras: dict[int, CameraName],
                       threshold: float, conditions: Mapping[int, tuple[str | None, ...]]) -> None:
        """One chunk's images (COCO image id -> its time of day, location, weather) into the pool of
        each of their conditions, from the chunk's own run (no second matching)."""
        for index, name in enumerate(CONDITIONS):
            groups: dict[str, set[int]] = {}
            for image, values in conditions.items():
                if values[index] is not None:
                    groups.setdefault(str(values[index]), set()).add(image)
            for value in sorted(groups):
                pools = self.conditions[name].setdefault(value, {lvl: Pool(self.types) for lvl in (LEVEL_1, LEVEL_2)})
                pools[level].add(run, gt, dt, cameras, threshold, images=groups[value])

    def add_ranges(self, level: int, run: COCOeval_faster, gt: COCO, dt: COCO, cameras: dict[int, CameraName],
                   threshold: float) -> None:
        """One chunk matched by range (`use_ranges`)."""
        self.ranged = True
        self.ranges[level].add(run, gt, dt, cameras, threshold)

    def result(self, rows: Callable[[Pool, int], list[T]]) -> dict[str, list[Slice[T]] | str]:
        """Each dimension's slices (`rows` makes the records, per type then ALL, of a pool's area
        range), or "not available"."""
        out: dict[str, list[Slice[T]] | str] = {}
        if self.ranged:
            out["range"] = [Slice(band_name(lo, hi), {f"LEVEL_{level}": rows(pool, band)
                                                      for level, pool in self.ranges.items()}, lo, hi,
                                  self._intervals(self.ranges[LEVEL_2], band))
                            for band, (lo, hi) in enumerate(RANGE_BANDS, start=1)]
        else:
            out["range"] = NOT_AVAILABLE
        for name, values in self.conditions.items():
            out[name] = [Slice(value, {f"LEVEL_{level}": rows(pool, 0) for level, pool in pools.items()},
                               intervals=self._intervals(pools[LEVEL_2], 0))
                         for value, pools in sorted(values.items())] or NOT_AVAILABLE
        return out

    def _intervals(self, pool: Pool, area: int) -> Intervals:
        return ap50_intervals(pool, area, self.types, self.book)


def slices_json(slices: Mapping[str, list[Slice[T]] | str]) -> dict[str, object]:
    return {name: value if isinstance(value, str) else [s.to_json() for s in value] for name, value in slices.items()}
