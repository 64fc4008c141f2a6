"""Our tracker against `trackers`' ByteTrack (PyPI `trackers` 2.6.1, Apache-2.0) on the same detections.

Half one, in our venv: the model (default: detect's; boxes >= 0.05, its NMS and input size) over the four
MOT17 fixture sequences and a slow pan and zoom over each camera image of the real Waymo frame, saved with
the labels to `<work>/detections/` (once: delete them to detect again); our SegmentTracker (for_threshold(0.3),
`group_keys` groups) to `<work>/tracks/ours/`; every tracker in `<work>/tracks/` scored with our
`score_tracks`. Half two, `--baseline`, in a throwaway venv with `trackers==2.6.1` (none of detect's
dependencies): a ByteTrackTracker per sequence and group, at its defaults and at high 0.3 / new track 0.4.

    python -m detect.tools.track_baseline --model /tmp/cn --work /tmp/track-baseline
    PYTHONPATH=. /tmp/trackers-venv/bin/python -m detect.tools.track_baseline --baseline --work /tmp/track-baseline
    python -m detect.tools.track_baseline --work /tmp/track-baseline   # scores both

Times: the tracker's updates of a frame (all its groups), the fastest of `--repeats` passes.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

# detect's modules are imported inside the functions of half one: half two runs without them
FIXTURES = next((p / "shared" / "fixtures" for p in Path(__file__).resolve().parents
                 if (p / "shared" / "fixtures").is_dir()), Path("../shared/fixtures"))
MOT17 = FIXTURES / "mot17mini_v2" / "camera_image"
WAYMO_FRAME = FIXTURES / "waymo_v1_one_frame.tfrecord"
DRAWING_THRESHOLD = 0.3  # the default model's
KEEP_SCORE = 0.05
PAN_FRAMES, PAN_WIDTH, PAN_STEP, PAN_ZOOM = 60, 1700, 2.0, 0.001  # tests/test_tracking.py's pan_over, on pixels


@dataclasses.dataclass(frozen=True, eq=False)
class SequenceData:
    """One camera's frames: detections (flat, `det_frame` their frame) and labels with ids."""

    name: str
    fps: float
    timestamps: np.ndarray  # [F] int64 microseconds
    types: np.ndarray  # the Waymo types scored on this sequence
    det_frame: np.ndarray
    det_xyxy: np.ndarray
    det_score: np.ndarray
    det_class: np.ndarray
    det_group: np.ndarray
    gt_frame: np.ndarray
    gt_xyxy: np.ndarray
    gt_id: np.ndarray  # str
    gt_type: np.ndarray


@dataclasses.dataclass(frozen=True, eq=False)
class Tracks:
    """A tracker's output on one sequence: the boxes given an id, and the ms each frame took."""

    frame: np.ndarray
    xyxy: np.ndarray
    track_id: np.ndarray
    group: np.ndarray
    ms: np.ndarray  # [F]


def save(record: SequenceData | Tracks, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # np.savez's keyword arguments: field name -> array
    fields: dict[str, Any] = {f.name: np.asarray(getattr(record, f.name)) for f in dataclasses.fields(record)}
    np.savez(path, **fields)


def load_sequence(path: Path) -> SequenceData:
    with np.load(path, allow_pickle=False) as z:
        return SequenceData(**{**{k: z[k] for k in z.files}, "name": str(z["name"]), "fps": float(z["fps"])})


def load_tracks(path: Path) -> Tracks:
    with np.load(path, allow_pickle=False) as z:
        return Tracks(**{k: z[k] for k in z.files})


def run_tracker(seq: SequenceData, update: Callable[[int, np.ndarray], np.ndarray]) -> Tracks:
    """`update(timestamp, rows)` -> track id per row (-1: none), timed per frame."""
    ids, ms = np.full(len(seq.det_frame), -1, np.int64), []
    for f, ts in enumerate(seq.timestamps.tolist()):
        rows = np.flatnonzero(seq.det_frame == f)
        start = time.perf_counter()
        ids[rows] = update(ts, rows)
        ms.append((time.perf_counter() - start) * 1000)
    kept = ids >= 0
    return Tracks(seq.det_frame[kept], seq.det_xyxy[kept], ids[kept], seq.det_group[kept], np.asarray(ms))


def best_of(repeats: int, track: Callable[..., Tracks], seq: SequenceData, **kwargs: float) -> Tracks:
    """The last pass's tracks (every pass gives the same) with the fastest pass's times."""
    runs = [track(seq, **kwargs) for _ in range(repeats)]
    return dataclasses.replace(runs[-1], ms=min((r.ms for r in runs), key=lambda ms: float(ms.sum())))


def track_ours(seq: SequenceData) -> Tracks:
    from detect.track import SegmentTracker, TrackerParams

    tracker = SegmentTracker(TrackerParams.for_threshold(DRAWING_THRESHOLD))
    return run_tracker(seq, lambda ts, r: tracker.update(1, ts, seq.det_xyxy[r], seq.det_score[r], seq.det_group[r]))


def track_trackers(seq: SequenceData, **thresholds: float) -> Tracks:
    """trackers' ByteTrack, one per group (it is class-blind), each seeing every frame as ours do."""
    import supervision as sv
    from trackers import ByteTrackTracker

    per_group: dict[int, ByteTrackTracker] = {}
    unique: dict[tuple[int, int], int] = {}  # (group, its tracker's id) -> an id unique in the sequence

    def update(ts: int, rows: np.ndarray) -> np.ndarray:
        out = np.full(len(rows), -1, np.int64)
        groups = seq.det_group[rows]
        for g in sorted(set(per_group) | set(groups.tolist())):
            if g not in per_group:
                per_group[g] = ByteTrackTracker(frame_rate=seq.fps, **thresholds)
            r = rows[mine := np.flatnonzero(groups == g)]
            result = per_group[g].update(sv.Detections(xyxy=seq.det_xyxy[r].astype(np.float32), confidence=seq.det_score[r],
                                                       class_id=seq.det_class[r], data={"row": mine}))
            for row, tid in zip(np.asarray(result.data.get("row", [])).tolist(), result.tracker_id.tolist()):
                if tid >= 0:
                    out[row] = unique.setdefault((g, tid), len(unique) + 1)
        return out

    return run_tracker(seq, update)


def pan_window(k: int, height: int) -> tuple[float, float, float]:
    """Frame k's window: left, top and zoom; it shows PAN_WIDTH / zoom x height / zoom source pixels."""
    zoom = 1 + PAN_ZOOM * k
    return PAN_STEP * (k if k < PAN_FRAMES // 2 else PAN_FRAMES - k), (height - height / zoom) / 2, zoom


def pan_labels(xyxy: np.ndarray, k: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels in frame k's pixels, and which are kept: at least half their area inside, then clipped."""
    x0, y0, zoom = pan_window(k, height)
    b = (np.asarray(xyxy, float).reshape(-1, 4) - [x0, y0, x0, y0]) * zoom
    inside = np.clip(b, 0, [PAN_WIDTH, height, PAN_WIDTH, height])
    keep = np.prod(inside[:, 2:] - inside[:, :2], 1) / np.prod(np.maximum(b[:, 2:] - b[:, :2], 1e-9), 1) >= 0.5
    return inside[keep], keep


def detect_images(detector, images: list[np.ndarray], input_size) -> list:
    """Full frames (uint8 [H, W, 3]) -> Detections, resized for the model as the pipeline does."""
    import tensorflow as tf

    from detect.model.inputs import FitSize

    out = []
    for start in range(0, len(images), detector.batch_size):
        batch = images[start:start + detector.batch_size]
        h, w = batch[0].shape[:2]
        size = input_size.for_image(w, h) if isinstance(input_size, FitSize) else input_size or (w, h)
        resized = [tf.saturate_cast(tf.round(tf.image.resize(im, size[::-1], antialias=False)), tf.uint8) for im in batch]
        out += detector(np.stack(resized), [(w, h)] * len(batch))
    return out


def sequence(name: str, fps: float, timestamps: list[int], dets: list, labels: list) -> SequenceData:
    """Per frame Detections and Labels -> one SequenceData, scored on the types labelled in it."""
    from detect.model.classmap import default_class_map
    from detect.track import group_keys

    def cat(parts: list, dtype, width: int = 0) -> np.ndarray:
        shape = (-1, width) if width else (-1,)
        return np.concatenate([np.asarray(p, dtype).reshape(shape) for p in parts] or [np.empty((0, *shape[1:]), dtype)])

    det_class, gt_type = cat([d.class_ids for d in dets], np.int32), cat([lab.types for lab in labels], np.int64)
    return SequenceData(
        name, fps, np.asarray(timestamps, np.int64), np.unique(gt_type),
        cat([[f] * len(d) for f, d in enumerate(dets)], np.int64), cat([d.xyxy for d in dets], np.float64, 4),
        cat([d.scores for d in dets], np.float64), det_class, group_keys(det_class, default_class_map()),
        cat([[f] * len(lab) for f, lab in enumerate(labels)], np.int64), cat([lab.xyxy for lab in labels], np.float64, 4),
        cat([lab.object_ids for lab in labels], str), gt_type)


def camera_images(path: Path) -> list[tuple]:
    """A segment's camera images in time, then camera order: (frame, decoded image, its Labels)."""
    import tensorflow as tf

    from detect.core.records import Labels
    from detect.waymo.camera_labels import read_labels
    from detect.waymo.readers import iter_frames, read_keys

    labels = read_labels(keys := read_keys(str(path)))
    frames = sorted(iter_frames(keys.source, keys=keys), key=lambda f: (f.frame_timestamp_micros, f.camera_name))
    return [(f, tf.io.decode_jpeg(f.jpeg, channels=3).numpy(), labels.get(f.key) if labels else Labels.empty()) for f in frames]


def mot17_sequence(path: Path, detect: Callable[[list[np.ndarray]], list], frames: int | None = None) -> SequenceData:
    """One MOT17 fixture sequence (its first `frames` frames), `detect` run on its images."""
    got = camera_images(path)[:frames]
    ts = [f.frame_timestamp_micros for f, _, _ in got]
    return sequence(path.stem, round(1e6 * (len(ts) - 1) / (ts[-1] - ts[0])), ts, detect([im for _, im, _ in got]),
                    [lab for _, _, lab in got])


def pan_sequences(path: Path, detect: Callable[[list[np.ndarray]], list]) -> Iterator[SequenceData]:
    """Per camera image of the frame in `path`: PAN_FRAMES windows panning and zooming over it, at 10 Hz."""
    import tensorflow as tf

    for frame, image, lab in camera_images(path):
        height, width = image.shape[:2]
        pans, gt = [], []
        for k in range(PAN_FRAMES):
            x0, y0, zoom = pan_window(k, height)
            box = [y0 / height, x0 / width, (y0 + height / zoom) / height, (x0 + PAN_WIDTH / zoom) / width]
            pans.append(tf.saturate_cast(tf.round(tf.image.crop_and_resize(image[None], [box], [0], (height, PAN_WIDTH))[0]),
                                         tf.uint8).numpy())
            xyxy, keep = pan_labels(lab.xyxy, k, height)
            gt.append(dataclasses.replace(lab, xyxy=xyxy, types=lab.types[keep], difficulty=lab.difficulty[keep],
                                          object_ids=tuple(np.asarray(lab.object_ids, str)[keep])))
        yield sequence(f"waymo_pan_{frame.camera_name.name}", 10.0, [k * 100_000 for k in range(PAN_FRAMES)], detect(pans), gt)


def detect_all(model: Path | None) -> Iterator[SequenceData]:
    """The MOT17 fixture sequences, then a pan over each camera of the real frame, through the model."""
    from detect.engine.loading import choose_settings, default_model_path
    from detect.model.detector import Detector
    from detect.model.inputs import parse_input_size

    chosen = choose_settings(model := model or default_model_path())
    detector, size = Detector(model, threshold=KEEP_SCORE, nms_iou=chosen.nms_iou), parse_input_size(chosen.input_size)
    yield from (mot17_sequence(path, lambda im: detect_images(detector, im, size)) for path in sorted(MOT17.glob("*.parquet")))
    yield from pan_sequences(WAYMO_FRAME, lambda images: detect_images(detector, images, size))


def scores(sequences: list[SequenceData], tracks: list[Tracks]) -> dict:
    """(sequence name or "pooled", Waymo type) -> TrackingScores: each type's labels against the boxes tracked in
    its group, under the Waymo protocol (IoU 0.5 for pedestrians, 0.7 for vehicles)."""
    from detect.core.matching import WAYMO_PROTOCOL
    from detect.track import FrameTracks, score_tracks

    out: dict[Any, Any] = {}
    pooled: dict[Any, Any] = {}
    for seq, tr in zip(sequences, tracks):
        for t in seq.types.tolist():
            frames = [FrameTracks(tuple(seq.gt_id[g].tolist()), seq.gt_xyxy[g], tr.track_id[k], tr.xyxy[k])
                      for g, k in (((seq.gt_frame == f) & (seq.gt_type == t), (tr.frame == f) & (tr.group == t))
                                   for f in range(len(seq.timestamps)))]
            out[seq.name, t] = score_tracks({t: [frames]}, WAYMO_PROTOCOL)[t]
            pooled.setdefault(t, []).append(frames)
    return out | {("pooled", t): score for t, score in score_tracks(pooled, WAYMO_PROTOCOL).items()}


def table(sequences: list[SequenceData], by_tracker: dict[str, list[Tracks]]) -> str:
    from detect.core.records import WaymoType

    scored = {name: scores(sequences, tracks) for name, tracks in by_tracker.items()}
    head = " | ".join(f"{n}: HOTA | MOTA | IDF1 | ms/frame" for n in by_tracker)
    lines = [f"| sequence | type | frames | boxes/frame | {head} |", "|" + "---|" * (4 + 4 * len(by_tracker))]
    rows = [(s.name, t, [s]) for s in sequences for t in s.types.tolist()]
    rows += [("pooled", t, [s for s in sequences if t in s.types]) for t in sorted({t for s in sequences for t in s.types})]
    for name, t, members in rows:
        frames = sum(len(s.timestamps) for s in members)
        cells = [name, WaymoType(t).name, str(frames), f"{sum(len(s.det_frame) for s in members) / frames:.1f}"]
        for n in by_tracker:
            sc = scored[n][name, t]
            ms = sum(float(tr.ms.sum()) for s, tr in zip(sequences, by_tracker[n]) if s in members) / frames
            cells += [f"{sc.hota:.3f}", f"{sc.mota:.3f}", f"{sc.idf1:.3f}", f"{ms:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detect.tools.track_baseline", description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="detections/ and tracks/ are kept here")
    parser.add_argument("--model", type=Path, help="the model (default: detect's default model)")
    parser.add_argument("--baseline", action="store_true", help="run trackers' ByteTrack (in a venv with trackers==2.6.1)")
    parser.add_argument("--repeats", type=int, default=3, help="passes per sequence; the fastest is reported")
    args = parser.parse_args(argv)
    folder, tracks = args.work / "detections", args.work / "tracks"
    if args.baseline:
        if not (sequences := [load_sequence(p) for p in sorted(folder.glob("*.npz"))]):
            raise SystemExit(f"track_baseline: no detections in {folder}: run half one first")
        moved = {"high_conf_det_threshold": DRAWING_THRESHOLD, "track_activation_threshold": DRAWING_THRESHOLD + 0.1}
        for name, thresholds in (("trackers-default", {}), ("trackers-moved", moved)):
            for seq in sequences:
                save(best_of(args.repeats, track_trackers, seq, **thresholds), tracks / name / f"{seq.name}.npz")
        print(f"trackers' tracks written to {tracks}; run half one again to score them")
        return 0
    if not any(folder.glob("*.npz")):
        for seq in detect_all(args.model):
            save(seq, folder / f"{seq.name}.npz")
    sequences = [load_sequence(p) for p in sorted(folder.glob("*.npz"))]
    for seq in sequences:
        save(best_of(args.repeats, track_ours, seq), tracks / "ours" / f"{seq.name}.npz")
    names = ["ours", *sorted(p.name for p in tracks.iterdir() if p.name != "ours")]
    print(table(sequences, {n: [load_tracks(tracks / n / f"{s.name}.npz") for s in sequences] for n in names}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
