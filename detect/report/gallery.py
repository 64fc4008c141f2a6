"""Error galleries: per Waymo type, the highest-scoring false alarms and the largest missed labels
at the drawing threshold, from `matches.parquet` (the matching the pictures are drawn with), as
crops of the annotated frames."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from detect.core.atomic import atomic_path
from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.core.errors import first_line
from detect.core.files import UnreadableFileError
from detect.model.coco_classes import label_for
from detect.sinks.frames import list_frames, read_frame
from detect.sinks.layout import MATCHES_FILE
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

FALSE_ALARM, MISSED = "false alarm", "missed label"
PER_TYPE = 6
PREFIX = "error_"  # the crops' file names
CROP_SIZE = 200  # pixels, the longer side
COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, "kind", "type_name", "score", "iou", "matched", OBJECT_ID, "xmin", "ymin", "xmax",
           "ymax", "class_id")


@dataclasses.dataclass(frozen=True)
class Example:
    """One error to show: what, where, and how the matching saw it."""

    kind: str
    type_name: str
    camera: str
    timestamp: int
    xyxy: tuple[float, float, float, float]
    score: float | None  # a false alarm's; a missed label's best detection, below the threshold
    iou: float | None
    what: str  # the model's class for a false alarm, the object id for a missed label

    def caption(self) -> str:
        where = f"{self.camera} {self.timestamp}"
        if self.kind == FALSE_ALARM:
            return f"FA {self.what} {self.score:.2f}, {where}"
        overlap = f" (IoU {self.iou:.2f})" if self.iou is not None else ""
        below = f"; found at {self.score:.3f}{overlap}, below the threshold" if self.score is not None else ""
        width, height = self.xyxy[2] - self.xyxy[0], self.xyxy[3] - self.xyxy[1]
        return f"missed {self.type_name} {width:.0f}x{height:.0f} px, {where}{below}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One type's counts at the threshold."""

    hits: int
    false_alarms: int
    missed: int
    labels: int


def read_matches(directory: Path, segment: str | None) -> pd.DataFrame | None:
    """The segment's rows of its own `matches.parquet`, else of its run's (one level up); every row
    of the run's for `segment` None. None when there is none or it cannot be read."""
    for path in (directory / MATCHES_FILE, *([directory.parent / MATCHES_FILE] if segment is not None else [])):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            table = pq.read_table(path, columns=list(COLUMNS)).to_pandas()
        except (pa.ArrowException, OSError, ValueError, KeyError):
            return None
        return table if segment is None else table[table[SEGMENT] == segment].reset_index(drop=True)
    return None


def outcomes(matches: pd.DataFrame, threshold: float) -> dict[str, Outcome]:
    """Hits, false alarms and missed labels per type at `threshold` (a label is missed unless a
    detection at or above it matched the label)."""
    out = {}
    for name in sorted(set(matches["type_name"])):
        rows = matches[matches["type_name"] == name]
        kept = rows[(rows["kind"] == "detection") & (rows["score"] >= threshold)]
        labels = rows[rows["kind"] == "label"]
        hits = int(kept["matched"].sum())
        found = int((labels["matched"] & (labels["score"] >= threshold)).sum())
        out[name] = Outcome(hits, len(kept) - hits, len(labels) - found, len(labels))
    return out


def select(matches: pd.DataFrame, threshold: float, per_type: int = PER_TYPE) -> dict[str, dict[str, list[Example]]]:
    """Per type: its `per_type` highest-scoring false alarms and largest missed labels (ties: in
    time order)."""
    chosen: dict[str, dict[str, list[Example]]] = {}
    ordered = matches.sort_values([TIMESTAMP, CAMERA], kind="stable")
    for name in sorted(set(ordered["type_name"])):
        rows = ordered[ordered["type_name"] == name]
        false_alarms = rows[(rows["kind"] == "detection") & ~rows["matched"] & (rows["score"] >= threshold)]
        false_alarms = false_alarms.sort_values("score", ascending=False, kind="stable")[:per_type]
        labels = rows[rows["kind"] == "label"]
        missed = labels[~(labels["matched"] & (labels["score"] >= threshold))]
        area = (missed["xmax"] - missed["xmin"]) * (missed["ymax"] - missed["ymin"])
        missed = missed.assign(area=area).sort_values("area", ascending=False, kind="stable")[:per_type]
        chosen[name] = {FALSE_ALARM: [_example(FALSE_ALARM, r) for r in false_alarms.to_dict("records")],
                        MISSED: [_example(MISSED, r) for r in missed.to_dict("records")]}
    return chosen


def crops(examples: list[Example], directory: Path, assets: Path, prefix: str,
          notes: list[str] | None = None) -> list[tuple[Example, str | None, str | None]]:
    """Each example with its crop (written to `assets`) and its frame, as paths relative to
    `directory`; None for both when the run wrote no frame for it, or one that cannot be read
    (a line in `notes` names it)."""
    frames = {(f.camera_name.name, f.frame_timestamp_micros): f.path for f in list_frames(directory)}
    out: list[tuple[Example, str | None, str | None]] = []
    for n, example in enumerate(examples):
        frame = frames.get((example.camera, example.timestamp))
        if frame is None:
            out.append((example, None, None))
            continue
        try:
            opened = read_frame(frame)
        except UnreadableFileError as err:  # a link, FIFO, truncated or oversized frame: shown as having none
            if notes is not None:
                note_picture(notes, err)
            out.append((example, None, None))
            continue
        target = assets / f"{prefix}_{n}.jpg"
        crop = opened.crop(crop_box(example.xyxy, opened.width, opened.height))
        scale = CROP_SIZE / max(crop.width, crop.height)
        crop = crop.resize((max(1, round(crop.width * scale)), max(1, round(crop.height * scale))), Image.Resampling.LANCZOS)
        with atomic_path(target) as tmp:
            crop.save(tmp, "JPEG", quality=85)
        out.append((example, target.relative_to(directory).as_posix(), frame.relative_to(directory).as_posix()))
    return out


def note_picture(notes: list[str], err: Exception) -> None:
    """One line for a frame the report cannot show (once, however many pictures it was for)."""
    line = f"{first_line(err)}; left out of the report's pictures"
    if line not in notes:
        notes.append(line)


def clear(assets: Path) -> None:
    """Remove the crops an earlier page wrote (their names are reused)."""
    for old in assets.glob(f"{PREFIX}*.jpg"):
        if old.is_file() and not old.is_symlink():
            old.unlink()


def crop_box(xyxy: tuple[float, float, float, float], width: int, height: int) -> tuple[int, int, int, int]:
    """The box with room around it (half its size each side, at least 40 px), squared up where it
    fits, inside the image."""
    x0, y0, x1, y1 = xyxy
    side = max(x1 - x0, y1 - y0) * 2.0 + 80
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    left, top = int(np.clip(cx - side / 2, 0, max(0, width - 1))), int(np.clip(cy - side / 2, 0, max(0, height - 1)))
    right, bottom = int(np.clip(cx + side / 2, left + 1, width)), int(np.clip(cy + side / 2, top + 1, height))
    return left, top, right, bottom


def _example(kind: str, row: Mapping[str, object]) -> Example:
    """A matches.parquet row (its schema: numbers where numbers go; NaN or null where none) as an example."""
    score, iou, camera = _number(row.get("score")), _number(row.get("iou")), int(_number(row[CAMERA]) or 0)
    class_id = _number(row.get("class_id"))
    what = (label_for(int(class_id)) if kind == FALSE_ALARM and class_id is not None and _present(class_id)
            else str(row.get(OBJECT_ID) or ""))
    x0, y0, x1, y1 = (_number(row[c]) or 0.0 for c in ("xmin", "ymin", "xmax", "ymax"))
    return Example(kind, str(row["type_name"]),
                   CameraName(camera).name if camera in CAMERA_NUMBERS else str(camera),
                   int(_number(row[TIMESTAMP]) or 0), (x0, y0, x1, y1),
                   score if score is not None and _present(score) else None,
                   iou if iou is not None and _present(iou) else None, what)


def _number(value: object) -> float | None:
    """A table cell as a float (None when it holds no number)."""
    return float(value) if isinstance(value, (int, float, np.number)) and not isinstance(value, bool) else None


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))
