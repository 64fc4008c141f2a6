"""ByteTrack (Zhang et al., ECCV 2022) on numpy and scipy, streaming, one camera and one class group.

Written from the paper's algorithm (two-stage association: high-score boxes first on
1 - IoU x score, then the tracks left over against the low-score boxes on 1 - IoU; unconfirmed
tracks last; a constant-velocity Kalman filter on (cx, cy, w/h, h)). Rejected libraries: `trackers`
2.6.1 needs opencv-python and supervision (~660 MB) and ignores classes, boxmot is AGPL and needs
torch, norfair needs numpy<2.

Time comes from the timestamps, not frame counts: the Kalman prediction covers dt (the
reference's noise was tuned per 1/30 s step, so transition and process noise scale with
dt / (1/30 s)), and the lost-track buffer is in seconds. The state of all tracks sits in arrays
(one row per track), so a frame costs a few vectorised operations, and tracks that died are
dropped: memory stays flat however long the video.

Left out of the reference: its removal of a tracked and a lost track overlapping at IoU > 0.85 (a
clean-up of its own bookkeeping; here a lost track that a box re-finds simply becomes tracked), and
the aspect-ratio / area filters of its demo scripts (drawing decides what to show, not the tracker).
An id is given when a track is confirmed (its second frame, or a tracker's first frame, as in the
reference), so the first box of a new object carries -1.
"""

from __future__ import annotations

import numpy as np

from detect.core.boxes import box_iou
from detect.track.assignment import linear_sum_assignment
from detect.track.params import TrackerParams

_REFERENCE_STEP_S = 1 / 30  # ByteTrack's noise settings are per frame at 30 fps
_TRACKED, _LOST = 0, 1


class IdAllocator:
    """Track ids from `first` in steps of `step`: one allocator per camera of a segment (first: the
    camera's number, step: the number of Waymo cameras) keeps ids unique in the segment without
    the cameras taking turns, so a camera's ids never depend on how its images and another
    camera's were interleaved (`detect.track.segment_tracker`)."""

    def __init__(self, first: int = 1, step: int = 1) -> None:
        if first < 1 or step < 1:
            raise ValueError(f"expected first >= 1 and step >= 1, got {first} and {step}")
        self._next, self._step = int(first), int(step)

    def take(self, n: int) -> np.ndarray:
        ids = np.arange(self._next, self._next + n * self._step, self._step, dtype=np.int64)
        self._next += n * self._step
        return ids


class ByteTracker:
    """Streaming ByteTrack for one (segment, camera, class group): `update` per frame, in time order."""

    def __init__(self, params: TrackerParams, ids: IdAllocator) -> None:
        self.params = params
        self._ids = ids
        self._last_ts: int | None = None
        self._mean = np.zeros((0, 8))
        self._cov = np.zeros((0, 8, 8))
        self._track_id = np.zeros(0, np.int64)  # -1 while unconfirmed
        self._state = np.zeros(0, np.int64)
        self._lost_since = np.zeros(0, np.int64)

    def __len__(self) -> int:
        """Tracks held (tracked, lost or unconfirmed)."""
        return len(self._track_id)

    def update(self, timestamp_micros: int, xyxy: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """One frame's boxes -> their track ids (int64; -1 for boxes no confirmed track kept)."""
        p = self.params
        xyxy = np.asarray(xyxy, np.float64).reshape(-1, 4)
        scores = np.asarray(scores, np.float64).reshape(-1)
        if len(scores) != len(xyxy):
            raise ValueError(f"scores: expected {len(xyxy)} values (one per box), got {len(scores)}")
        ts = int(timestamp_micros)
        if self._last_ts is not None and ts <= self._last_ts:
            raise ValueError(f"timestamps must increase: got {ts} after {self._last_ts}")
        first_frame = self._last_ts is None
        if not len(self):  # nothing tracked (most class groups of a frame): at most births, no matching
            self._last_ts = ts
            out = np.full(len(xyxy), -1, np.int64)
            born = np.flatnonzero((scores >= p.high_score) & (scores >= p.new_track_score))
            if len(born):
                self._birth(xyxy[born], ts)
                if first_frame:
                    self._track_id[:] = out[born] = self._ids.take(len(born))
            return out
        self._predict(0.0 if self._last_ts is None else (ts - self._last_ts) / 1e6)
        self._last_ts = ts
        out = np.full(len(xyxy), -1, np.int64)
        boxes = _xyxy(self._mean)
        confirmed = self._track_id >= 0
        high = np.flatnonzero(scores >= p.high_score)
        low = np.flatnonzero((scores >= p.low_score) & (scores < p.high_score))

        # 1. confirmed tracks (tracked or lost) against high-score boxes, on IoU x score
        pool = np.flatnonzero(confirmed)
        t1, d1 = _match(boxes[pool], xyxy[high], scores[high], p.first_match_min_similarity)
        self._correct(pool[t1], xyxy[high[d1]], ts)
        out[high[d1]] = self._track_id[pool[t1]]
        # 2. tracks still tracked but unmatched against low-score boxes, on IoU alone
        rest = _without(pool, t1)
        rest = rest[self._state[rest] == _TRACKED]
        t2, d2 = _match(boxes[rest], xyxy[low], None, p.low_match_min_iou)
        self._correct(rest[t2], xyxy[low[d2]], ts)
        out[low[d2]] = self._track_id[rest[t2]]
        missed = _without(rest, t2)
        newly_lost = missed[self._state[missed] == _TRACKED]
        self._state[newly_lost] = _LOST
        self._lost_since[newly_lost] = ts
        # 3. unconfirmed tracks (born last frame) against the high-score boxes left
        left = _without(high, d1)
        fresh = np.flatnonzero(~confirmed)
        t3, d3 = _match(boxes[fresh], xyxy[left], scores[left], p.unconfirmed_min_similarity)
        self._correct(fresh[t3], xyxy[left[d3]], ts)
        self._track_id[fresh[t3]] = self._ids.take(len(t3))
        out[left[d3]] = self._track_id[fresh[t3]]
        # 4. forget unconfirmed tracks not seen again, and lost tracks past the buffer
        dead = np.zeros(len(self), bool)
        dead[_without(fresh, t3)] = True
        dead |= (self._state == _LOST) & (ts - self._lost_since > p.lost_seconds * 1e6)
        # 5. new tracks from confident boxes nobody took: confirmed at once on a tracker's first frame
        born = _without(left, d3)
        born = born[scores[born] >= p.new_track_score]
        self._keep(~dead)
        self._birth(xyxy[born], ts)
        if first_frame and len(born):
            self._track_id[-len(born):] = self._ids.take(len(born))
            out[born] = self._track_id[-len(born):]
        return out

    def _predict(self, dt: float) -> None:
        if not len(self) or dt <= 0:
            return
        k = dt / _REFERENCE_STEP_S
        self._mean[self._state == _LOST, 7] = 0.0  # as the reference: a lost box stops growing
        f = np.eye(8)
        f[range(4), range(4, 8)] = k
        h = self._mean[:, 3]
        pos, vel = self.params.position_noise, self.params.velocity_noise
        q = np.stack([pos * h, pos * h, np.full_like(h, 1e-2), pos * h, vel * h, vel * h, np.full_like(h, 1e-5), vel * h], 1) ** 2
        self._mean = self._mean @ f.T
        self._cov = f @ self._cov @ f.T + k * _diag(q)

    def _correct(self, rows: np.ndarray, xyxy: np.ndarray, ts: int) -> None:
        if not len(rows):
            return
        z = _xyah(xyxy)
        mean, cov = self._mean[rows], self._cov[rows]
        h = mean[:, 3]
        pos = self.params.position_noise
        r = _diag(np.stack([pos * h, pos * h, np.full_like(h, 1e-1), pos * h], 1) ** 2)
        s = cov[:, :4, :4] + r
        gain = np.linalg.solve(s, cov[:, :4, :]).transpose(0, 2, 1)  # P H^T S^-1 (S symmetric)
        self._mean[rows] = mean + np.einsum("nij,nj->ni", gain, z - mean[:, :4])
        self._cov[rows] = cov - gain @ cov[:, :4, :]
        self._state[rows] = _TRACKED

    def _birth(self, xyxy: np.ndarray, ts: int) -> None:
        if not len(xyxy):
            return
        z = _xyah(xyxy)
        h = z[:, 3]
        pos, vel = self.params.position_noise, self.params.velocity_noise
        std = np.stack([2 * pos * h, 2 * pos * h, np.full_like(h, 1e-2), 2 * pos * h,
                        10 * vel * h, 10 * vel * h, np.full_like(h, 1e-5), 10 * vel * h], 1)
        self._mean = np.concatenate([self._mean, np.concatenate([z, np.zeros_like(z)], 1)])
        self._cov = np.concatenate([self._cov, _diag(std**2)])
        self._track_id = np.concatenate([self._track_id, np.full(len(z), -1, np.int64)])
        self._state = np.concatenate([self._state, np.full(len(z), _TRACKED, np.int64)])
        self._lost_since = np.concatenate([self._lost_since, np.full(len(z), ts, np.int64)])

    def _keep(self, mask: np.ndarray) -> None:
        self._mean, self._cov, self._track_id = self._mean[mask], self._cov[mask], self._track_id[mask]
        self._state, self._lost_since = self._state[mask], self._lost_since[mask]


def _without(items: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """`items` (sorted, unique indices) but those at positions `taken`, in order (a mask, not a set difference)."""
    keep = np.ones(len(items), bool)
    keep[taken] = False
    return items[keep]


def _match(tracks: np.ndarray, boxes: np.ndarray, weights: np.ndarray | None,
           minimum: float) -> tuple[np.ndarray, np.ndarray]:
    """`_assign` on IoU (times `weights`, the boxes' scores, when given); nothing to match: nothing."""
    if not len(tracks) or not len(boxes):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    iou = box_iou(tracks, boxes)
    return _assign(iou if weights is None else iou * weights, minimum)


def _assign(similarity: np.ndarray, minimum: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the assignment maximising similarity, pairs below `minimum` refused."""
    if not similarity.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cost = np.where(similarity >= minimum, 1.0 - similarity, 1e6)
    rows, cols = linear_sum_assignment(cost)
    ok = similarity[rows, cols] >= minimum
    return rows[ok].astype(np.int64), cols[ok].astype(np.int64)


def _xyah(xyxy: np.ndarray) -> np.ndarray:
    w = xyxy[:, 2] - xyxy[:, 0]
    h = np.maximum(xyxy[:, 3] - xyxy[:, 1], 1e-6)
    return np.stack([xyxy[:, 0] + w / 2, xyxy[:, 1] + h / 2, w / h, h], 1)


def _xyxy(mean: np.ndarray) -> np.ndarray:
    h = mean[:, 3]
    w = mean[:, 2] * h
    return np.stack([mean[:, 0] - w / 2, mean[:, 1] - h / 2, mean[:, 0] + w / 2, mean[:, 1] + h / 2], 1)


def _diag(values: np.ndarray) -> np.ndarray:
    out = np.zeros((len(values), values.shape[1], values.shape[1]))
    idx = np.arange(values.shape[1])
    out[:, idx, idx] = values
    return out
