"""The tracking section of a segment's page: how long each track lived (from detections.parquet's
`track_id`), and the ID switches the evaluation found (from `tracking.parquet`): the object just before
and at the switch, two crops side by side with the two ids. Nothing when the segment has no tracks."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.core.errors import InputError, first_line
from detect.core.track_numbers import camera_track_number
from detect.report import gallery, pictures, safe
from detect.report.html import img
from detect.report.track_plot import lifespans
from detect.results.detections_table import read_detections
from detect.results.evaluation_tables import read_tracking_table
from detect.results.layout import TRACKING_FILE
from detect.results.results_tables import (
    folder_budget,
    segment_budget,
)
from detect.results.source_images import NamedSources
from detect.results.table import DETECTIONS_FILE
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

SWITCHES_SHOWN = 8
CAMERA_ORDER = {int(c): n for n, c in enumerate(CameraName)}
PLOT = "track_lifespans.png"


@dataclasses.dataclass(frozen=True)
class Switch:
    """One ID switch: the label's object, its box with the earlier track, and its box at the switch;
    the two tracks as the pictures number them (the camera's first, second, ... track)."""

    before: gallery.Example
    after: gallery.Example
    previous_id: int
    track_id: int

    @property
    def numbers(self) -> tuple[int, int]:
        """The earlier and the new track's numbers in their camera, as the frames' chips show them."""
        camera = CameraName[self.after.camera] if self.after.camera in CameraName.__members__ else 0
        return camera_track_number(self.previous_id, int(camera)), camera_track_number(self.track_id, int(camera))

    def caption(self, start: int) -> str:
        b, a = self.before, self.after
        earlier, now = self.numbers
        return (f"{b.type_name} {b.what}, {a.camera}: #{earlier} at {(b.timestamp - start) / 1e6:.1f} s, "
                f"#{now} at {(a.timestamp - start) / 1e6:.1f} s")


def read_tracks(directory: Path, notes: list[str] | None = None) -> pd.DataFrame | None:
    """The tracked boxes of detections.parquet (camera name, timestamp, label, track_id); None when
    the table has no track ids (not tracked, written before tracking, unreadable, or ids it cannot
    use: a line in `notes` says why)."""
    path = directory / DETECTIONS_FILE
    try:
        table = read_detections(path, segment_budget(directory), labels=True)
    except InputError:
        return None  # the page's own reading of the table says what is wrong with it
    if table.track_ids is None or table.labels is None:
        if table.track_note is not None and notes is not None:
            notes.append(table.track_note)
        return None
    kept = np.flatnonzero(table.track_ids >= 0)
    if not len(kept):
        return None
    cameras, timestamps, labels = table.cameras[kept], table.timestamps[kept], table.labels[kept]
    order = np.lexsort((timestamps, np.array([CAMERA_ORDER[c] for c in cameras.tolist()], np.int64)))
    return pd.DataFrame({"camera": [CameraName(c).name for c in cameras[order].tolist()],
                         "timestamp": timestamps[order], "label": labels[order], "track_id": table.track_ids[kept][order]})


def read_switches(directory: Path, segment: str, limit: int = SWITCHES_SHOWN,
                  notes: list[str] | None = None) -> list[Switch]:
    """The first `limit` ID switches of `segment` in time order, from its own tracking.parquet or its
    run's (one level up); none when there is none or it cannot be read (a line in `notes` says why)."""
    for path, budget in ((directory / TRACKING_FILE, lambda: segment_budget(directory)),
                         (directory.parent / TRACKING_FILE, lambda: folder_budget(directory.parent))):
        if not path.is_file() and not path.is_symlink():
            continue
        try:
            rows = read_tracking_table(path, budget())
        except InputError as err:
            if notes is not None:
                notes.append(f"{first_line(err)}; its ID switches are left out of the page")
            return []
        return _switches(rows[rows[SEGMENT] == segment], limit)
    return []


def tracks_section(directory: Path, segment: str, start: int, assets: Path, notes: list[str] | None = None,
                   sources: NamedSources = NamedSources()) -> str:
    """The section's body ("" when the segment has no tracked box): the lifespans plot, then the switches.
    `start`: the segment's first timestamp; plots and crops go to `assets`."""
    tracks = read_tracks(directory, notes)
    for old in assets.glob(f"{gallery.PREFIX}switch_*.jpg"):  # an earlier page's crops (their names are reused)
        if old.is_file() and not old.is_symlink():
            old.unlink()
    if tracks is None:
        return ""
    lifespans(tracks, start, assets / PLOT)
    per_camera = tracks.groupby("camera")["track_id"].nunique()
    parts = [f"<p class='muted'>{safe.count_text(tracks['track_id'].nunique())} tracks "
             f"({', '.join(f'{safe.text(c)} {n}' for c, n in per_camera.items())}), each one object the tracker "
             f"followed, numbered 1, 2, 3... per camera in the pictures; the boxes it kept, down to the score floor, "
             f"are in detections.parquet's track_id (unique in the segment).</p>"
             + pictures.linked(f"{assets.name}/{PLOT}", f"{assets.name}/{PLOT}", "track lifespans per camera")]
    switches = read_switches(directory, segment, notes=notes)
    if switches:
        parts.append(_gallery(switches, directory, assets, start, notes, sources))
    return "".join(parts)


def _gallery(switches: list[Switch], directory: Path, assets: Path, start: int, notes: list[str] | None,
             named: NamedSources) -> str:
    befores, afters = [s.before for s in switches], [s.after for s in switches]
    sources = gallery.source_images(directory, {"switches": {"before": befores, "after": afters}}, named)  # the camera images
    before = gallery.crops(befores, directory, assets, f"{gallery.PREFIX}switch_before", sources, notes)
    after = gallery.crops(afters, directory, assets, f"{gallery.PREFIX}switch_after", sources, notes)
    figures = []
    for switch, (_, crop_b, _), (_, crop_a, frame_a) in zip(switches, before, after, strict=True):
        pair = "".join(f"<div>{img(c, f'track #{i}') if c else '(no frame)'}<div class='muted'>#{i}</div></div>"
                       for c, i in zip((crop_b, crop_a), switch.numbers, strict=True))
        link = f" <a href='{safe.href(frame_a)}'>frame</a>" if frame_a else ""
        figures.append(f"<figure><div style='display:flex;gap:4px'>{pair}</div>"
                       f"<figcaption>{safe.text(switch.caption(start))}{link}</figcaption></figure>")
    return (f"<h3>ID switches (the first {len(switches)} in time)</h3><p class='muted'>A labeled object whose track id changed "
            f"(TrackEval's CLEAR matching, from tracking.parquet): left, its last box under the earlier id; right, "
            f"its box under the new one.</p><div class='grid'>{''.join(figures)}</div>")


def _switches(rows: pd.DataFrame, limit: int) -> list[Switch]:
    rows = rows.sort_values([TIMESTAMP, CAMERA], kind="stable")
    out = []
    for switch in rows[rows["id_switch"].fillna(False).astype(bool)].to_dict("records")[:limit]:
        previous, track = switch["previous_track_id"], switch["track_id"]
        if np.isnan(previous) or np.isnan(track):
            continue
        earlier = rows[(rows[CAMERA] == switch[CAMERA]) & (rows[OBJECT_ID] == switch[OBJECT_ID])
                       & (rows["track_id"] == previous) & (rows[TIMESTAMP] < switch[TIMESTAMP])]
        if earlier.empty:
            continue
        out.append(Switch(_example(earlier.iloc[-1].to_dict()), _example(switch), int(previous), int(track)))
    return out


def _example(row: dict[str, Any]) -> gallery.Example:
    """A tracking.parquet row (numbers where numbers go, as its reader made them) as an example."""
    camera = int(row[CAMERA])
    x0, y0, x1, y1 = (float(row[c]) for c in ("xmin", "ymin", "xmax", "ymax"))
    return gallery.Example("id switch", str(row["type_name"]), CameraName(camera).name if camera in CAMERA_NUMBERS
                           else str(camera), int(row[TIMESTAMP]), (x0, y0, x1, y1), None, None,
                           str(row[OBJECT_ID] or ""), segment=str(row[SEGMENT]))
