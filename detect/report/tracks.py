"""The tracking section of a segment's page: how long each track lived (from detections.parquet's
`track_id`), and the ID switches the evaluation found (from `tracking.parquet`): the object just before
and at the switch, two crops side by side with the two ids. Nothing when the segment has no tracks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from detect.core.cameras import CAMERA_NUMBERS, CameraName
from detect.report import gallery, pictures, safe
from detect.report.html import img
from detect.report.track_plot import lifespans
from detect.sinks.layout import TRACKING_FILE
from detect.sinks.source_images import NamedSources
from detect.sinks.table import DETECTIONS_FILE
from detect.waymo.schema import CAMERA, OBJECT_ID, SEGMENT, TIMESTAMP

SWITCHES_SHOWN = 8
PLOT = "track_lifespans.png"
SWITCH_COLUMNS = (SEGMENT, TIMESTAMP, CAMERA, "type_name", "track_id", OBJECT_ID, "id_switch", "previous_track_id",
                  "xmin", "ymin", "xmax", "ymax")


@dataclasses.dataclass(frozen=True)
class Switch:
    """One ID switch: the label's object, its box with the earlier track, and its box at the switch."""

    before: gallery.Example
    after: gallery.Example
    previous_id: int
    track_id: int

    def caption(self, start: int) -> str:
        b, a = self.before, self.after
        return (f"{b.type_name} {b.what}, {a.camera}: #{self.previous_id} at {(b.timestamp - start) / 1e6:.1f} s, "
                f"#{self.track_id} at {(a.timestamp - start) / 1e6:.1f} s")


def read_tracks(directory: Path) -> pd.DataFrame | None:
    """The tracked boxes of detections.parquet (camera name, timestamp, label, track_id); None when
    the table has no track ids (not tracked, written before tracking, or unreadable)."""
    try:
        table = pq.read_table(directory / DETECTIONS_FILE, columns=[TIMESTAMP, CAMERA, "label", "track_id"])
    except (pa.ArrowException, OSError, ValueError, KeyError):
        return None
    frame = table.filter(pc.is_valid(table.column("track_id"))).to_pandas()
    frame = frame[frame[CAMERA].isin(list(CAMERA_NUMBERS))]
    if frame.empty:
        return None
    order = {int(c): n for n, c in enumerate(CameraName)}
    frame = frame.assign(order=frame[CAMERA].map(order)).sort_values(["order", TIMESTAMP], kind="stable")
    return pd.DataFrame({"camera": [CameraName(int(c)).name for c in frame[CAMERA]],
                         "timestamp": frame[TIMESTAMP].astype("int64").to_numpy(),
                         "label": frame["label"].astype(str).to_numpy(),
                         "track_id": frame["track_id"].astype("int64").to_numpy()})


def read_switches(directory: Path, segment: str, limit: int = SWITCHES_SHOWN) -> list[Switch]:
    """The first `limit` ID switches of `segment` in time order, from its own tracking.parquet or its
    run's (one level up); none when there is none or it cannot be read."""
    for path in (directory / TRACKING_FILE, directory.parent / TRACKING_FILE):
        if not path.is_file() or path.is_symlink():
            continue
        try:
            rows = pq.read_table(path, columns=list(SWITCH_COLUMNS)).to_pandas()
        except (pa.ArrowException, OSError, ValueError, KeyError):
            return []
        return _switches(rows[rows[SEGMENT] == segment], limit)
    return []


def tracks_section(directory: Path, segment: str, start: int, assets: Path, notes: list[str] | None = None,
                   sources: NamedSources = NamedSources()) -> str:
    """The section's body ("" when the segment has no tracked box): the lifespans plot, then the switches.
    `start`: the segment's first timestamp; plots and crops go to `assets`."""
    tracks = read_tracks(directory)
    for old in assets.glob(f"{gallery.PREFIX}switch_*.jpg"):  # an earlier page's crops (their names are reused)
        if old.is_file() and not old.is_symlink():
            old.unlink()
    if tracks is None:
        return ""
    lifespans(tracks, start, assets / PLOT)
    per_camera = tracks.groupby("camera")["track_id"].nunique()
    parts = [f"<p class='muted'>{safe.count_text(tracks['track_id'].nunique())} tracks "
             f"({', '.join(f'{safe.text(c)} {n}' for c, n in per_camera.items())}), each id one object the tracker "
             f"followed; the boxes it kept, down to the score floor, are in detections.parquet's track_id.</p>"
             + pictures.linked(f"{assets.name}/{PLOT}", f"{assets.name}/{PLOT}", "track lifespans per camera")]
    switches = read_switches(directory, segment)
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
                       for c, i in ((crop_b, switch.previous_id), (crop_a, switch.track_id)))
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
        previous = switch["previous_track_id"]
        if previous is None or (isinstance(previous, float) and np.isnan(previous)):
            continue
        earlier = rows[(rows[CAMERA] == switch[CAMERA]) & (rows[OBJECT_ID] == switch[OBJECT_ID])
                       & (rows["track_id"] == previous) & (rows[TIMESTAMP] < switch[TIMESTAMP])]
        if earlier.empty:
            continue
        out.append(Switch(_example(earlier.iloc[-1].to_dict()), _example(switch), int(previous), int(switch["track_id"])))
    return out


def _example(row: dict[str, object]) -> gallery.Example:
    camera = int(row[CAMERA])  # type: ignore[call-overload]
    x0, y0, x1, y1 = (float(row[c]) for c in ("xmin", "ymin", "xmax", "ymax"))  # type: ignore[arg-type]
    return gallery.Example("id switch", str(row["type_name"]), CameraName(camera).name if camera in CAMERA_NUMBERS
                           else str(camera), int(row[TIMESTAMP]), (x0, y0, x1, y1), None, None,  # type: ignore[call-overload]
                           str(row[OBJECT_ID] or ""), segment=str(row[SEGMENT]))
