"""Error galleries: per Waymo type, the highest-scoring false alarms and the largest missed labels
at the drawing threshold, from `matches.parquet` (the matching the pictures are drawn with), as
close-ups cut from the camera images (re-read from the segment file, `detect.results.source_images`;
from the drawn frames when that file is gone or changed), with only the object in question drawn
and its partner: the detection that matched it below the threshold, else the nearest box. Each
object once, at its worst frame (`distinct`): six slots show six objects, not one man in six
consecutive frames."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from detect.core.atomic import atomic_path
from detect.core.boxes import box_iou
from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.core.errors import InputError, first_line
from detect.core.files import UnreadableFileError
from detect.core.records import FrameKey
from detect.judge import FALSE_ALARM as JUDGED_FALSE_ALARM
from detect.judge import MISSED as JUDGED_MISSED
from detect.model.coco_classes import label_for
from detect.render.crop import PARTNER as PARTNER_COLOR
from detect.render.crop import PARTNER_WIDTH, Outline, close_up
from detect.render.verdicts import COLORS, LINES
from detect.report.same_object import distinct, label_id, object_key_of
from detect.results.detections_table import read_detections
from detect.results.evaluation_tables import RANGE, read_matches_table
from detect.results.frames import list_frames, read_frame
from detect.results.layout import MATCHES_FILE
from detect.results.results_folder import read_manifest
from detect.results.results_tables import (
    COORDINATES,
    folder_budget,
    segment_budget,
)
from detect.results.source_images import NamedSources, SourceImages, read_source_images
from detect.results.table import DETECTIONS_FILE
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

FALSE_ALARM, MISSED = "false alarm", "missed label"
PER_TYPE = 6
PREFIX = "error_"  # the crops' file names
NEAR_IOU = 0.05  # less overlap than this is not "near": a box crossing a corner would only confuse the crop

CAMERA_NAMES = frozenset(c.name for c in CameraName)
CAMERA_NUMBERS_BY_NAME = {c.name: int(c) for c in CameraName}


@dataclasses.dataclass(frozen=True)
class Partner:
    """The box drawn beside an example: the detection that matched a label below the threshold, else
    the box of the other kind that overlaps it most."""

    xyxy: tuple[float, float, float, float]
    what: str  # "car 0.32" for a detection, "VEHICLE" for a label
    iou: float
    matched: bool


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
    segment: str = ""
    partner: Partner | None = None
    object_key: str = ""  # the object it is (a label's id, a detection's track), unique in a gallery
    range_m: float | None = None  # metres from the car, when the matches table holds a range

    @property
    def key(self) -> FrameKey | None:
        """The image it is in (None for a camera the table names by an unknown number)."""
        return FrameKey(self.segment, self.timestamp, CameraName[self.camera]) if self.camera in CAMERA_NAMES else None

    def caption(self) -> str:
        where = f"{self.camera} {self.timestamp}"
        partner = self.partner
        if self.kind == FALSE_ALARM:
            near = (f"; nearest label {partner.what} IoU {partner.iou:.2f}" if partner is not None
                    else f"; no label near it (IoU under {NEAR_IOU})")
            return f"FA {self.what} {self.score:.2f}, {where}{near}"
        width, height = self.xyxy[2] - self.xyxy[0], self.xyxy[3] - self.xyxy[1]
        if self.score is not None:
            overlap = f" (IoU {self.iou:.2f})" if self.iou is not None else ""
            near = f"; found at {self.score:.3f}{overlap}, below the threshold"
        elif partner is not None:
            near = f"; nearest box {partner.what} IoU {partner.iou:.2f}"
        else:
            near = f"; no box near it (IoU under {NEAR_IOU})"
        return f"missed {self.type_name} {width:.0f}x{height:.0f} px, {where}{near}"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One type's counts at the threshold."""

    hits: int
    false_alarms: int
    missed: int
    labels: int


def read_matches(directory: Path, segment: str | None, notes: list[str] | None = None) -> pd.DataFrame | None:
    """The segment's rows of its own `matches.parquet`, else of its run's (one level up); every row
    of the run's for `segment` None. None when there is none or it cannot be read (a line in `notes`
    says why). Rows that are not boxes (`box_rows`: an edited table's NaN or inverted ones) are left out."""
    for path, budget in ((directory / MATCHES_FILE,
                          lambda: segment_budget(directory, segment) if segment is not None else folder_budget(directory)),
                         *([(directory.parent / MATCHES_FILE, lambda: folder_budget(directory.parent))]
                           if segment is not None else [])):
        if not path.is_file() and not path.is_symlink():
            continue
        try:
            table = read_matches_table(path, budget())
        except InputError as err:
            if notes is not None and f"{first_line(err)}; {LEFT_OUT}" not in notes:
                notes.append(f"{first_line(err)}; {LEFT_OUT}")
            return None
        return table if segment is None else table[table[SEGMENT] == segment].reset_index(drop=True)
    return None


LEFT_OUT = "the error counts and galleries are left out of the page"


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


def select(matches: pd.DataFrame, threshold: float, per_type: int = PER_TYPE,
           track_ids: TrackIds | None = None) -> dict[str, dict[str, list[Example]]]:
    """Per type with labels: its `per_type` highest-scoring false alarms and largest missed labels
    (ties: in time order), each object once at its worst frame (`distinct`; `track_ids`: the
    detections' tracks), each with its partner box (`Partner`)."""
    chosen: dict[str, dict[str, list[Example]]] = {}
    ordered = matches.sort_values([TIMESTAMP, CAMERA], kind="stable")
    for name in sorted(set(ordered["type_name"])):
        rows = ordered[ordered["type_name"] == name]
        if not (rows["kind"] == "label").any():
            continue  # no labels of the type (SIGN in Waymo's 2D labels): not scored, so no false alarms
        false_alarms = rows[(rows["kind"] == "detection") & ~rows["matched"] & (rows["score"] >= threshold)]
        false_alarms = distinct(false_alarms.sort_values("score", ascending=False, kind="stable"), per_type,
                                track_ids.of if track_ids is not None else None)
        labels = rows[rows["kind"] == "label"]
        missed = labels[~(labels["matched"] & (labels["score"] >= threshold))]
        area = (missed["xmax"] - missed["xmin"]) * (missed["ymax"] - missed["ymin"])
        missed = distinct(missed.assign(area=area).sort_values("area", ascending=False, kind="stable"), per_type,
                          label_id)
        identities = {FALSE_ALARM: track_ids.of if track_ids is not None else None, MISSED: label_id}
        chosen[name] = {kind: [dataclasses.replace(e, partner=_partner(e, matches, threshold),
                                                   object_key=object_key_of(kind, r, identities[kind]))
                               for e, r in ((_example(kind, r), r) for r in found.to_dict("records"))]
                        for kind, found in ((FALSE_ALARM, false_alarms), (MISSED, missed))}
    return chosen


class TrackIds:
    """The track of each detection of a segment, from its detections.parquet: a matches row's is the
    track of the table's box in its image that it overlaps most (a paired rider: the rider's)."""

    def __init__(self, table: pd.DataFrame) -> None:
        tracked = table[table["track_id"].notna()] if "track_id" in table else table.iloc[:0]
        self._by_image = {key: (group[["xmin", "ymin", "xmax", "ymax"]].to_numpy(np.float64),
                                group["track_id"].to_numpy(np.int64))
                          for key, group in tracked.groupby([TIMESTAMP, CAMERA])}

    @classmethod
    def read(cls, directory: Path) -> TrackIds | None:
        """The segment folder's table's track ids (`read_track_ids`, on its boxes); None when it has
        none it can use or cannot be read (the page's own reading of the table says why)."""
        try:
            table = read_detections(directory / DETECTIONS_FILE, segment_budget(directory))
        except InputError:
            return None
        if table.track_ids is None:
            return None
        kept = table.take(table.track_ids >= 0)
        return cls(pd.DataFrame({TIMESTAMP: kept.timestamps, CAMERA: kept.cameras,
                                 **{c: kept.xyxy[:, i] for i, c in enumerate(COORDINATES)}, "track_id": kept.track_ids}))

    def of(self, row: Mapping[str, object]) -> object:
        """The track (segment, camera, track id) of a matches row's detection; None: not tracked."""
        found = self._by_image.get((row[TIMESTAMP], row[CAMERA]))
        if found is None:
            return None
        boxes, tracks = found
        box = np.array([[row["xmin"], row["ymin"], row["xmax"], row["ymax"]]], np.float64)
        ious = box_iou(box, boxes)[0]
        best = int(np.argmax(ious))
        return (row[SEGMENT], row[CAMERA], int(tracks[best])) if ious[best] >= 0.5 else None


def source_images(directory: Path, chosen: Mapping[str, Mapping[str, list[Example]]],
                  sources: NamedSources = NamedSources()) -> SourceImages:
    """The camera images the examples are in, re-read from the segment file (one pass: the one
    the user named among `sources`, else the recorded one when it is local); the problem that kept
    them from being read, if any (the crops then come from the drawn frames)."""
    keys = {e.key for kinds in chosen.values() for examples in kinds.values() for e in examples}
    wanted = {k for k in keys if k is not None}
    if not wanted:
        return SourceImages({})
    try:
        manifest = read_manifest(directory)
    except InputError as err:
        return SourceImages({}, first_line(err))
    return read_source_images(manifest, wanted, sources)


def crops(examples: list[Example], directory: Path, assets: Path, prefix: str, sources: SourceImages | None = None,
          notes: list[str] | None = None, page: Path | None = None) -> list[tuple[Example, str | None, str | None]]:
    """Each example of the segment in `directory` with its close-up (written to `assets`) and its
    drawn frame, as paths relative to the folder `page` (default: `directory`). The close-up is cut
    from the camera image in `sources`, else from the drawn frame; None when there is neither (the
    frame: when the run wrote none, or one that cannot be read, a line in `notes` naming it)."""
    frames = {(f.camera_name.name, f.frame_timestamp_micros): f.path for f in list_frames(directory)}
    images = sources.images if sources is not None else {}
    out: list[tuple[Example, str | None, str | None]] = []
    for n, example in enumerate(examples):
        frame = frames.get((example.camera, example.timestamp))
        picture = images.get(example.key) if example.key is not None else None
        if frame is not None and picture is None:
            try:
                picture = read_frame(frame)
            except UnreadableFileError as err:  # a link, FIFO, truncated or oversized frame: shown as having none
                if notes is not None:
                    note_picture(notes, err)
                frame = None
        if picture is None:
            out.append((example, None, None))
            continue
        target = assets / f"{prefix}_{n}.jpg"
        with atomic_path(target) as tmp:
            close_up(picture, *outlines(example)).save(tmp, "JPEG", quality=90)
        base = directory if page is None else page
        out.append((example, target.relative_to(base).as_posix(),
                    frame.relative_to(base).as_posix() if frame is not None else None))
    return out


def outlines(example: Example) -> tuple[Outline, Outline | None]:
    """The example drawn as the frames draw its state (dashed vermillion, dotted yellow), its partner thin white."""
    state = JUDGED_FALSE_ALARM if example.kind == FALSE_ALARM else JUDGED_MISSED
    partner = example.partner
    return (Outline(example.xyxy, COLORS[state], LINES[state]),
            None if partner is None else Outline(partner.xyxy, PARTNER_COLOR, "solid", PARTNER_WIDTH))


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


def example(kind: str, row: Mapping[str, object], matches: pd.DataFrame, threshold: float) -> Example:
    """A matches row as the example of `kind` it is, with its partner box (`Partner`)."""
    found = _example(kind, row)
    return dataclasses.replace(found, partner=_partner(found, matches, threshold))


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
                   iou if iou is not None and _present(iou) else None, what, str(row.get(SEGMENT) or ""),
                   range_m=_number(row.get(RANGE)) if _present(row.get(RANGE)) else None)


def _partner(example: Example, matches: pd.DataFrame, threshold: float) -> Partner | None:
    """A missed label's detection below the threshold, else the box of the other kind in the same
    image that overlaps the example most (detections: those drawn, at or above the threshold)."""
    camera = CAMERA_NUMBERS_BY_NAME.get(example.camera)
    image = matches[(matches[TIMESTAMP] == example.timestamp) & (matches[CAMERA] == camera)
                    & (matches[SEGMENT] == example.segment)]
    if example.kind == MISSED:
        others = image[image["kind"] == "detection"]
        if example.score is not None:  # the label was matched, below the threshold: by that detection
            same = others[others["matched"] & (others[OBJECT_ID] == example.what)]
            if len(same):
                row = same.iloc[0]
                return Partner(_box(row), _detection_name(row), float(example.iou or 0.0), True)
        others = others[others["score"] >= threshold]
    else:
        others = image[image["kind"] == "label"]
    if not len(others):
        return None
    ious = box_iou(np.array([example.xyxy], np.float64), others[["xmin", "ymin", "xmax", "ymax"]].to_numpy(np.float64))[0]
    best = int(np.argmax(ious))
    if ious[best] < NEAR_IOU:
        return None
    row = others.iloc[best]
    found = _number(row.get("score"))
    taken = " (found by another box)" if bool(row["matched"]) and found is not None and found >= threshold else ""
    what = _detection_name(row) if example.kind == MISSED else f"{row['type_name']}{taken}"
    return Partner(_box(row), what, float(ious[best]), False)


def _detection_name(row: pd.Series) -> str:
    class_id = _number(row.get("class_id"))
    name = label_for(int(class_id)) if class_id is not None and _present(class_id) else str(row["type_name"])
    return f"{name} {float(row['score']):.2f}"


def _box(row: pd.Series) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (_number(row[c]) or 0.0 for c in ("xmin", "ymin", "xmax", "ymax"))
    return x0, y0, x1, y1


def _number(value: object) -> float | None:
    """A table cell as a float (None when it holds no number)."""
    return float(value) if isinstance(value, (int, float, np.number)) and not isinstance(value, bool) else None


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))
