"""A redraw's pictures: every image a run finished, decoded again from its source without the model
(`detect.model.full_frames`), drawn through the run's render pool and drawing (`render_pixels`) with
the table's track ids and the trails rebuilt from them, and the animations through the same
`AnimationSet`: the bytes a fresh run at the redraw's settings writes."""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from detect.core.errors import InputError
from detect.core.names import printable
from detect.core.records import Detections, FrameKey, FrameResult
from detect.engine.redraw_source import CheckedSource
from detect.engine.render_pool import open_renderer
from detect.engine.spec import SegmentJob
from detect.engine.stages import Rendered, StageTimings
from detect.model.full_frames import decode_full_frames
from detect.results.animations import AnimationSet
from detect.track.trail_history import Trails
from detect.waymo.camera_labels import SegmentLabels
from detect.waymo.readers import iter_frames


def redraw_pixels(directory: Path, source: CheckedSource, job: SegmentJob, results: Mapping[FrameKey, FrameResult],
                   labels: SegmentLabels | None, ids: np.ndarray | None) -> tuple[str, ...]:
    """Every finished image decoded, drawn and written as the run did; the animations rebuilt."""
    settings, keys = job.settings, source.keys
    if not settings.needs_full_frames:
        return ()
    tracked = _tracked_images(results, ids) if ids is not None else {}
    timings = StageTimings()
    renderer = open_renderer(directory, job, timings)
    cameras = {k.camera_name for k in results}
    animations = (AnimationSet(directory, mp4=settings.mp4, gif=settings.gif, mosaic=len(cameras) >= 2,
                               executor=renderer.executor) if settings.animations else None)
    by_index: dict[int, FrameKey] = {}
    window: collections.deque[concurrent.futures.Future[Rendered]] = collections.deque()

    def numbered() -> Iterator[tuple[int, bytes]]:
        for index, frame in enumerate(f for f in iter_frames(keys.source, settings.frame_filter, keys)
                                      if f.key in results):
            by_index[index] = frame.key
            yield index, frame.jpeg

    def consume(future: concurrent.futures.Future[Rendered]) -> None:
        rendered = future.result()
        if animations is not None and rendered.animation is not None:
            animations.add(rendered.animation)

    drawn = 0
    try:
        for decoded in decode_full_frames(numbered(), threads=settings.decode_threads, max_pixels=settings.max_pixels):
            key = by_index.pop(decoded.index)
            frame_labels = labels.get(key) if labels is not None and job.rules is not None else None
            detections, trails = tracked.get(key, (results[key].detections, None))
            window.append(renderer.submit(decoded, key, detections, frame_labels, trails))
            drawn += 1
            while len(window) > 2 * settings.workers + 2:
                consume(window.popleft())
        while window:
            consume(window.popleft())
        if drawn != len(results):
            raise InputError(f"{directory}: cannot redraw: its source file {printable(source.uri, 200)} has changed "
                             f"since the run ({len(results) - drawn} of the run's {len(results)} images are no longer readable)")
        if animations is not None:
            animations.close()
    except BaseException:
        if animations is not None:
            animations.abort()
        raise
    finally:
        renderer.close()
    written = ["frames"] if settings.write_frames else []
    written += (["GIFs"] if settings.gif else []) + (["MP4s"] if settings.mp4 else [])
    return tuple(written + (["mosaic"] if animations is not None and len(cameras) >= 2 else []))


def _tracked_images(results: Mapping[FrameKey, FrameResult],
                    ids: np.ndarray) -> dict[FrameKey, tuple[Detections, dict[int, np.ndarray]]]:
    """Each image's detections with the table's track ids (its rows are in (timestamp, camera) order,
    an image's boxes as the journal holds them) and its trails, each camera's images in time order,
    as the run gives them."""
    trails = Trails()
    out: dict[FrameKey, tuple[Detections, dict[int, np.ndarray]]] = {}
    offset = 0
    for key in sorted(results, key=lambda k: (k.frame_timestamp_micros, int(k.camera_name))):
        detections = results[key].detections
        own = ids[offset:offset + len(detections)]
        offset += len(detections)
        out[key] = (detections.with_track_ids(own),
                    trails.update(int(key.camera_name), key.frame_timestamp_micros, own, detections.xyxy))
    return out
