"""The worst moments of a run: the camera images where the frames show the most errors at the
drawing threshold, across every segment, each shown by one object that went wrong in it.

The score of an image is its errors as its frame shows them: false alarms plus missed labels at the
drawing threshold, over the Waymo types the evaluation has labels of (images.parquet). Ties go to
the image with more labels (more went wrong among more to get right is not better), then to time
order. Each moment is shown by its most telling error: its largest missed label, else its
highest-scoring false alarm, and never by an object already shown (the same label id, the same
track, or, without ids, the same place in the same camera within a second: `same_object.ObjectMemory`):
the list is the worst moments of different objects, not one parked car in twenty frames."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from detect.core.cameras import CameraName
from detect.core.errors import InputError, first_line
from detect.report import filters, gallery, safe
from detect.report.html import Markup, img
from detect.report.same_object import ObjectMemory, label_id
from detect.results.evaluation_tables import read_images_table
from detect.results.layout import IMAGES_FILE
from detect.results.results_folder import Manifest
from detect.results.results_tables import folder_budget
from detect.waymo.schema import CAMERA, SEGMENT, TIMESTAMP

MOMENTS = 12  # as many as a page shows at a glance: three rows of four on a laptop
PREFIX = f"{gallery.PREFIX}worst"
SCORE_RULE = ("Ranked by the errors each camera image shows at the drawing threshold (false alarms plus missed "
              "labels of the types with labels; ties: more labels first), each shown by its largest missed label, "
              "else its highest-scoring false alarm, and each object once (one label id, one track).")


@dataclasses.dataclass(frozen=True)
class Moment:
    """One camera image and the error that shows it."""

    segment: str
    timestamp: int
    camera: int
    false_alarms: int
    misses: int
    labels: int
    example: gallery.Example
    track: object  # the object's identity (a label id or a track), for the page's filters

    @property
    def errors(self) -> int:
        return self.false_alarms + self.misses


def read_images(root: Path, notes: list[str] | None = None) -> pd.DataFrame | None:
    """The run's images.parquet as a frame (None when there is none, or a line in `notes` says why not)."""
    path = root / IMAGES_FILE
    if not path.is_file() and not path.is_symlink():
        return None
    try:
        frame = read_images_table(path, folder_budget(root))
    except InputError as err:
        if notes is not None:
            notes.append(f"{first_line(err)}; the worst moments are left out of the page")
        return None
    return frame


def rank(images: pd.DataFrame) -> pd.DataFrame:
    """Per camera image with errors: its false alarms, misses and labels over the types that have
    labels in the run, worst first (the module's rule)."""
    scored = images.groupby("type_name")["labels"].transform("sum") > 0
    per_image = (images[scored].groupby([SEGMENT, TIMESTAMP, CAMERA], sort=True)[["false_alarms", "misses", "labels"]]
                 .sum().reset_index())
    per_image["errors"] = per_image["false_alarms"] + per_image["misses"]
    per_image = per_image[per_image["errors"] > 0]
    return per_image.sort_values(["errors", "labels", SEGMENT, TIMESTAMP, CAMERA],
                                 ascending=[False, False, True, True, True], kind="stable").reset_index(drop=True)


def select(ranked: pd.DataFrame, matches: pd.DataFrame, threshold: float,
           tracks: Mapping[str, gallery.TrackIds | None], limit: int = MOMENTS) -> list[Moment]:
    """The first `limit` images of `ranked` that each show an object not shown yet (the module's rule)."""
    scored_types = set(matches.loc[matches["kind"] == "label", "type_name"])
    matches = matches[matches["type_name"].isin(scored_types)]
    by_image = {key: rows for key, rows in matches.groupby([SEGMENT, TIMESTAMP, CAMERA], sort=False)}
    memory = ObjectMemory(lambda row: _identity(row, tracks))
    chosen: list[Moment] = []
    for image in ranked.to_dict("records"):
        if len(chosen) >= limit:
            break
        rows = by_image.get((image[SEGMENT], image[TIMESTAMP], image[CAMERA]))
        if rows is None:
            continue
        for kind, row in _candidates(rows, threshold):
            if memory.add(row):
                chosen.append(Moment(str(image[SEGMENT]), int(image[TIMESTAMP]), int(image[CAMERA]),
                                     int(image["false_alarms"]), int(image["misses"]), int(image["labels"]),
                                     gallery.example(kind, row, rows, threshold), _identity(row, tracks)))
                break
    return chosen


def _candidates(rows: pd.DataFrame, threshold: float) -> list[tuple[str, dict]]:
    """An image's errors, most telling first: missed labels largest first, then false alarms by score."""
    labels = rows[rows["kind"] == "label"]
    missed = labels[~(labels["matched"] & (labels["score"] >= threshold))]
    missed = missed.assign(area=(missed["xmax"] - missed["xmin"]) * (missed["ymax"] - missed["ymin"]))
    missed = missed.sort_values("area", ascending=False, kind="stable")
    false_alarms = rows[(rows["kind"] == "detection") & ~rows["matched"] & (rows["score"] >= threshold)]
    false_alarms = false_alarms.sort_values("score", ascending=False, kind="stable")
    return ([(gallery.MISSED, r) for r in missed.to_dict("records")]
            + [(gallery.FALSE_ALARM, r) for r in false_alarms.to_dict("records")])


def _identity(row: Mapping[str, object], tracks: Mapping[str, gallery.TrackIds | None]) -> object:
    """A label's id, or a detection's track (None: neither; `ObjectMemory` then compares places)."""
    if row.get("kind") == "label":
        return label_id(row)
    found = tracks.get(str(row[SEGMENT]))
    return found.of(row) if found is not None else None


def section(root: Path, segments: Sequence[tuple[Path, Manifest]], threshold: float | None, assets: Path,
            notes: list[str] | None = None) -> str:
    """The gallery of the worst moments for the run's index.html ("" when nothing went wrong or there
    is no images.parquet: a run evaluated before it existed; `detect eval` writes it)."""
    images = read_images(root, notes)
    matches = gallery.read_matches(root, None, notes) if images is not None else None
    if images is None or matches is None or threshold is None:
        return ""
    folders = {m.segment_context_name: d for d, m in segments}
    tracks = {name: gallery.TrackIds.read(directory) for name, directory in folders.items()}
    moments = select(rank(images), matches, threshold, tracks)
    gallery.clear(assets)
    if not moments:
        return ""
    figures: dict[int, str] = {}
    for name in dict.fromkeys(m.segment for m in moments):
        directory = folders.get(name)
        mine = [(n, m) for n, m in enumerate(moments) if m.segment == name]
        if directory is None:
            for n, moment in mine:
                figures[n] = _figure(n, moment, None, None, None)
            continue
        examples = [m.example for _, m in mine]
        sources = gallery.source_images(directory, {"": {"": examples}})
        cut = gallery.crops(examples, directory, assets, f"{PREFIX}_{len(figures)}", sources, notes, page=root)
        page = (directory / "report.html").relative_to(root).as_posix() if (directory / "report.html").is_file() else None
        for (n, moment), (_, crop, frame) in zip(mine, cut, strict=True):
            figures[n] = _figure(n, moment, crop, frame, page)
    return (f"<p class='muted'>{SCORE_RULE}</p>" + filters.form([_item(n, m) for n, m in enumerate(moments)])
            + f"<div class='grid crops worst'>{''.join(figures[n] for n in sorted(figures))}</div>")


def _object_name(n: int, identity: object) -> str:
    """An object's identity as the page's filters read it: segment/camera/id, else the moment's number."""
    return "/".join(str(part) for part in identity) if isinstance(identity, tuple) else f"moment-{n + 1}"


def _figure(n: int, moment: Moment, crop: str | None, frame: str | None, page: str | None) -> str:
    example = moment.example
    what = (f"{moment.errors} error{'s' if moment.errors != 1 else ''} ({moment.misses} missed, "
            f"{moment.false_alarms} false alarm{'s' if moment.false_alarms != 1 else ''}, of {moment.labels} labels)")
    caption = safe.text(f"#{n + 1}: {what}; {example.caption()}")
    picture = (Markup("<p class='muted'>(no picture)</p>") if not crop
               else Markup(f"<a href='{safe.href(frame)}'>{img(crop, caption)}</a>") if frame else img(crop, caption))
    segment = (f"<br><a href='{safe.href(page)}'>{safe.text(moment.segment)}</a>" if page
               else f"<br>{safe.text(moment.segment)}")
    return f"<figure{_item(n, moment).attributes()}>{picture}<figcaption>{caption}{segment}</figcaption></figure>"


def _item(n: int, moment: Moment) -> filters.Item:
    """What a moment shows, for the page's filters."""
    example = moment.example
    camera = CameraName(moment.camera).name if moment.camera in {int(c) for c in CameraName} else str(moment.camera)
    state = "missed" if example.kind == gallery.MISSED else "false-alarm"
    return filters.Item(state, example.type_name, camera, _object_name(n, moment.track), example.score, example.range_m)
