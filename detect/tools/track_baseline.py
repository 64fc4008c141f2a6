"""Our tracker against `trackers`' ByteTrack (PyPI `trackers` 2.6.1, Apache-2.0) on the same detections.

Half one, in our venv: the default model (every box >= 0.05, the model's NMS and input size) over the
four MOT17 fixture sequences and over a slow pan and zoom across each camera image of the real Waymo
frame; detections and labels (with ids) go to `<work>/detections/<sequence>.npz` (once; delete them
to detect again), our `SegmentTracker` (`TrackerParams.for_threshold(0.3)`, groups from `group_keys`)
writes `<work>/tracks/ours/`, then every tracker's tracks under `<work>/tracks/` are scored with our
`score_tracks` (TrackEval 1.3.0) and printed as a Markdown table:

    python -m detect.tools.track_baseline --model /tmp/cn --work /tmp/track-baseline

Half two, `--baseline`, in a throwaway venv holding `trackers==2.6.1` (it imports numpy, supervision and
trackers, nothing else of ours): one `ByteTrackTracker` per sequence and group, as ours, at its
defaults and with its thresholds moved to our drawing threshold (high 0.3, new track 0.4):

    PYTHONPATH=. /tmp/trackers-venv/bin/python -m detect.tools.track_baseline --baseline --work /tmp/track-baseline

Run half one again to score them. Times are the tracker's update alone, per frame (every group of
the frame), the best of `--repeats` passes over each sequence.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

# Half two runs where detect's dependencies (TensorFlow, pyarrow, trackeval) are not installed:
# the functions of half one import them when they run.
FIXTURES = next((p / "shared" / "fixtures" for p in Path(__file__).resolve().parents
                 if (p / "shared" / "fixtures").is_dir()), Path("../shared/fixtures"))
MOT17 = FIXTURES / "mot17mini_v2" / "camera_image"
WAYMO_FRAME = FIXTURES / "waymo_v1_one_frame.tfrecord"
DRAWING_THRESHOLD = 0.3  # the default model's
KEEP_SCORE = 0.05
PAN_FRAMES, PAN_WIDTH, PAN_STEP, PAN_ZOOM = 60, 1700, 2.0, 0.001  # tests/test_tracking.py's pan_over, on pixels
TRACKERS = {"ours": "ours", "trackers-default": "trackers' defaults", "trackers-moved": "trackers' at 0.3 / 0.4"}
S = 1_000_000


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
    np.savez(path, **{f.name: np.asarray(getattr(record, f.name)) for f in dataclasses.fields(record)})


def load_sequence(path: Path) -> SequenceData:
    with np.load(path, allow_pickle=False) as z:
        return SequenceData(**{**{k: z[k] for k in z.files}, "name": str(z["name"]), "fps": float(z["fps"])})


def load_tracks(path: Path) -> Tracks:
    with np.load(path, allow_pickle=False) as z:
        return Tracks(**{k: z[k] for k in z.files})


def frames_of(seq: SequenceData) -> Iterator[tuple[int, np.ndarray]]:
    """Per frame: its timestamp and the rows of its detections."""
    for f, ts in enumerate(seq.timestamps.tolist()):
        yield ts, np.flatnonzero(seq.det_frame == f)


def run_tracker(seq: SequenceData, update: Callable[[int, np.ndarray], np.ndarray]) -> Tracks:
    """`update(timestamp, rows)` -> track id per row (-1: none), timed per frame."""
    frame, ids, rows_kept, ms = [], [], [], []
    for f, (ts, rows) in enumerate(frames_of(seq)):
        start = time.perf_counter()
        out = update(ts, rows)
        ms.append((time.perf_counter() - start) * 1000)
        keep = out >= 0
        frame += [f] * int(keep.sum())
        ids.append(out[keep])
        rows_kept.append(rows[keep])
    rows = np.concatenate(rows_kept).astype(np.int64)
    return Tracks(np.asarray(frame, np.int64), seq.det_xyxy[rows].reshape(-1, 4), np.concatenate(ids).astype(np.int64),
                  seq.det_group[rows], np.asarray(ms))


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
    unique: dict[tuple[int, int], int] = {}

    def update(ts: int, rows: np.ndarray) -> np.ndarray:
        out = np.full(len(rows), -1, np.int64)
        groups = seq.det_group[rows]
        for g in sorted(set(per_group) | set(groups.tolist())):
            tracker = per_group.get(g) or per_group.setdefault(g, ByteTrackTracker(frame_rate=seq.fps, **thresholds))
            mine = np.flatnonzero(groups == g)
            r = rows[mine]
            result = tracker.update(sv.Detections(xyxy=seq.det_xyxy[r].astype(np.float32), confidence=seq.det_score[r],
                                                  class_id=seq.det_class[r], data={"row": mine}))
            for row, tid in zip(np.asarray(result.data.get("row", [])).tolist(), result.tracker_id.tolist()):
                if tid >= 0:
                    out[row] = unique.setdefault((g, tid), len(unique) + 1)
        return out

    return run_tracker(seq, update)


# --- half one: detections ------------------------------------------------------------------------

def pan_window(k: int, width: int, height: int) -> tuple[float, float, float]:
    """Frame k's window: left, top and zoom; it shows PAN_WIDTH / zoom x height / zoom source pixels."""
    x0 = PAN_STEP * (k if k < PAN_FRAMES // 2 else PAN_FRAMES - k)
    zoom = 1 + PAN_ZOOM * k
    return x0, (height - height / zoom) / 2, zoom


def pan_labels(xyxy: np.ndarray, k: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels in frame k's pixels, and which are kept: at least half their area inside, then clipped."""
    x0, y0, zoom = pan_window(k, PAN_WIDTH, height)
    b = (np.asarray(xyxy, float).reshape(-1, 4) - [x0, y0, x0, y0]) * zoom
    inside = np.clip(b, 0, [PAN_WIDTH, height, PAN_WIDTH, height])
    area = np.prod(np.maximum(b[:, 2:] - b[:, :2], 1e-9), axis=1)
    keep = np.prod(inside[:, 2:] - inside[:, :2], axis=1) / area >= 0.5
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
        resized = [tf.saturate_cast(tf.round(tf.image.resize(im, (size[1], size[0]), antialias=False)), tf.uint8).numpy()
                   for im in batch]
        out += detector(np.stack(resized), [(w, h)] * len(batch))
    return out


def sequence(name: str, fps: float, timestamps: list[int], types: list[int], dets: list, labels: list) -> SequenceData:
    """Per frame Detections and (ids, xyxy, types) labels -> one SequenceData."""
    from detect.model.classmap import default_class_map
    from detect.track import group_keys

    def cat(parts: list, dtype, width: int = 0) -> np.ndarray:
        return np.concatenate([np.asarray(p, dtype).reshape((-1, width) if width else -1) for p in parts] or
                              [np.zeros((0, width) if width else 0, dtype)])

    det_class = cat([d.class_ids for d in dets], np.int32)
    return SequenceData(
        name, fps, np.asarray(timestamps, np.int64), np.asarray(types, np.int64),
        cat([[f] * len(d) for f, d in enumerate(dets)], np.int64), cat([d.xyxy for d in dets], np.float64, 4),
        cat([d.scores for d in dets], np.float64), det_class, group_keys(det_class, default_class_map()),
        cat([[f] * len(lab[0]) for f, lab in enumerate(labels)], np.int64), cat([lab[1] for lab in labels], np.float64, 4),
        cat([lab[0] for lab in labels], str), cat([lab[2] for lab in labels], np.int64))


def detect_all(model: Path) -> Iterator[SequenceData]:
    """The MOT17 fixture sequences, then a pan over each camera of the real frame."""
    import tensorflow as tf

    from detect.core.records import WaymoType
    from detect.engine.loading import choose_settings
    from detect.model.detector import Detector
    from detect.model.inputs import parse_input_size
    from detect.waymo.camera_labels import read_labels
    from detect.waymo.readers import iter_frames, read_keys

    chosen = choose_settings(model)
    detector = Detector(model, threshold=KEEP_SCORE, nms_iou=chosen.nms_iou)
    size = parse_input_size(chosen.input_size)
    for path in sorted(MOT17.glob("*.parquet")):
        keys = read_keys(str(path))
        labels = read_labels(keys)
        frames = sorted(iter_frames(str(path), keys=keys), key=lambda f: (f.frame_timestamp_micros, f.camera_name))
        images = [tf.io.decode_jpeg(f.jpeg, channels=3).numpy() for f in frames]
        got = [labels.get(f.key) if labels else None for f in frames]
        ts = [f.frame_timestamp_micros for f in frames]
        fps = round(S * (len(ts) - 1) / (ts[-1] - ts[0]))
        yield sequence(path.stem, fps, ts, [int(WaymoType.PEDESTRIAN)], detect_images(detector, images, size),
                       [(g.object_ids, g.xyxy, g.types) if g else ((), np.zeros((0, 4)), ()) for g in got])
    keys = read_keys(str(WAYMO_FRAME))
    labels = read_labels(keys)
    for frame in iter_frames(str(WAYMO_FRAME), keys=keys):
        image = tf.io.decode_jpeg(frame.jpeg, channels=3)
        height = int(image.shape[0])
        lab = labels.get(frame.key) if labels else None
        pans, pan_gt = [], []
        for k in range(PAN_FRAMES):
            x0, y0, zoom = pan_window(k, PAN_WIDTH, height)
            crop = tf.image.crop_and_resize(image[None], [[y0 / height, x0 / image.shape[1], (y0 + height / zoom) / height,
                                                          (x0 + PAN_WIDTH / zoom) / image.shape[1]]], [0], (height, PAN_WIDTH))
            pans.append(tf.saturate_cast(tf.round(crop[0]), tf.uint8).numpy())
            xyxy, keep = pan_labels(lab.xyxy if lab else np.zeros((0, 4)), k, height)
            pan_gt.append((np.asarray(lab.object_ids if lab else ())[keep], xyxy, (lab.types if lab else np.zeros(0))[keep]))
        types = sorted({int(t) for _, _, frame_types in pan_gt for t in frame_types})  # the types labelled here
        yield sequence(f"waymo_pan_{frame.camera_name.name}", 10.0, [k * S // 10 for k in range(PAN_FRAMES)], types,
                       detect_images(detector, pans, size), pan_gt)


# --- scores and the table ------------------------------------------------------------------------

def frame_tracks(seq: SequenceData, tracks: Tracks, waymo_type: int) -> list:
    """One Waymo type of a sequence as the scoring sees it: labels of that type, tracked boxes of its group."""
    from detect.track import FrameTracks

    out = []
    for f in range(len(seq.timestamps)):
        gt = (seq.gt_frame == f) & (seq.gt_type == waymo_type)
        tr = (tracks.frame == f) & (tracks.group == waymo_type)
        out.append(FrameTracks(tuple(seq.gt_id[gt].tolist()), seq.gt_xyxy[gt], tracks.track_id[tr], tracks.xyxy[tr]))
    return out


def scores(sequences: list[SequenceData], tracks: list[Tracks]) -> dict:
    """(sequence name or "pooled", Waymo type) -> TrackingScores, under the Waymo protocol (COCO's IoU 0.5 for
    pedestrians, 0.7 for vehicles)."""
    from detect.core.matching import WAYMO_PROTOCOL
    from detect.track import score_tracks

    out, pooled = {}, {}
    for seq, tr in zip(sequences, tracks):
        for t in seq.types.tolist():
            frames = frame_tracks(seq, tr, t)
            out[seq.name, t] = score_tracks({t: [frames]}, WAYMO_PROTOCOL)[t]
            pooled.setdefault(t, []).append(frames)
    for t, score in score_tracks(pooled, WAYMO_PROTOCOL).items():
        out["pooled", t] = score
    return out


def table(sequences: list[SequenceData], by_tracker: dict[str, list[Tracks]]) -> str:
    from detect.core.records import WaymoType

    scored = {name: scores(sequences, tracks) for name, tracks in by_tracker.items()}
    names = list(by_tracker)
    head = "| sequence | type | frames | boxes/frame | " + " | ".join(
        f"{TRACKERS.get(n, n)}: HOTA | MOTA | IDF1 | ms/frame" for n in names) + " |"
    lines = [head, "|" + "---|" * (4 + 4 * len(names))]
    rows = [(s.name, t, [s]) for s in sequences for t in s.types.tolist()]
    rows += [("pooled", t, [s for s in sequences if t in s.types]) for t in sorted({t for s in sequences for t in s.types})]
    for name, t, members in rows:
        frames = sum(len(s.timestamps) for s in members)
        cells = [name, WaymoType(t).name, str(frames), f"{sum(len(s.det_frame) for s in members) / frames:.1f}"]
        for n in names:
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
    folder = args.work / "detections"
    if args.baseline:
        sequences = [load_sequence(p) for p in sorted(folder.glob("*.npz"))]
        if not sequences:
            raise SystemExit(f"track_baseline: no detections in {folder}: run half one first")
        moved = {"high_conf_det_threshold": DRAWING_THRESHOLD, "track_activation_threshold": DRAWING_THRESHOLD + 0.1}
        for name, thresholds in (("trackers-default", {}), ("trackers-moved", moved)):
            for seq in sequences:
                save(best_of(args.repeats, track_trackers, seq, **thresholds), args.work / "tracks" / name / f"{seq.name}.npz")
        print(f"trackers' tracks written to {args.work / 'tracks'}; run half one again to score them")
        return 0
    if not any(folder.glob("*.npz")):
        from detect.engine.loading import default_model_path

        for seq in detect_all(args.model or default_model_path()):
            save(seq, folder / f"{seq.name}.npz")
    sequences = [load_sequence(p) for p in sorted(folder.glob("*.npz"))]
    for seq in sequences:
        save(best_of(args.repeats, track_ours, seq), args.work / "tracks" / "ours" / f"{seq.name}.npz")
    names = ["ours", *sorted(p.name for p in (args.work / "tracks").iterdir() if p.name != "ours")]
    print(table(sequences, {n: [load_tracks(args.work / "tracks" / n / f"{s.name}.npz") for s in sequences] for n in names}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
