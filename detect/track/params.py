"""The tracker's settings: one frozen, validated record, written into the manifest with `to_json`."""

from __future__ import annotations

import dataclasses
import math

# The reference (ifzhang/ByteTrack, MIT) was tuned on YOLOX's scores: high 0.5, new track 0.6, low 0.1.
_REFERENCE_LOW = 0.1
_NEW_TRACK_MARGIN = 0.1
_MAX_NEW_TRACK = 0.9


@dataclasses.dataclass(frozen=True)
class TrackerParams:
    """ByteTrack's thresholds and noise; time in seconds.

    Defaults are the reference's (ifzhang/ByteTrack: Kalman position noise 1/20 and velocity noise
    1/160 of the box height, high 0.5, low 0.1, new track 0.6, unconfirmed gate 0.7 and low-score gate
    0.5 on cost, i.e. similarity 0.3 and IoU 0.5; 30 frames lost at 30 fps = 1 s) except the
    first-match gate: the reference refuses IoU x score below 0.2 (cost 0.8); at Waymo's 10 Hz with
    fast ego motion boxes move 3x further between frames, so ours is 0.05. On the default model's
    boxes over the MOT17 fixtures and the pans over the real frame (`detect.tools.track_baseline`,
    pooled HOTA): VEHICLE 0.351 at 0.2, 0.352 at 0.1, 0.358-0.359 anywhere from 0.02 to 0.07;
    PEDESTRIAN 0.519 throughout. Use `for_threshold` to place the score thresholds around a model's
    drawing threshold.
    """

    high_score: float = 0.5
    low_score: float = 0.1
    new_track_score: float = 0.6
    first_match_min_similarity: float = 0.05  # IoU x score
    low_match_min_iou: float = 0.5
    unconfirmed_min_similarity: float = 0.3  # IoU x score
    lost_seconds: float = 1.0
    position_noise: float = 1 / 20
    velocity_noise: float = 1 / 160

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"tracker {field.name}: expected a finite number, got {value!r}")
        unit = ("high_score", "low_score", "new_track_score", "first_match_min_similarity",
                "low_match_min_iou", "unconfirmed_min_similarity")
        for name in unit:
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"tracker {name}: expected a value in (0, 1], got {getattr(self, name)}")
        if not self.low_score < self.high_score <= self.new_track_score:
            raise ValueError("tracker scores: expected low_score < high_score <= new_track_score, "
                             f"got {self.low_score}, {self.high_score}, {self.new_track_score}")
        for name in ("lost_seconds", "position_noise", "velocity_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"tracker {name}: expected a value >= 0, got {getattr(self, name)}")

    @classmethod
    def for_threshold(cls, threshold: float, **overrides: float) -> TrackerParams:
        """Score thresholds relative to a model's drawing threshold t: high = t, new track =
        t + 0.1 (at most 0.9, never below t), low = 0.1, or t / 3 below t = 0.3.

        A box drawn is a box the tracker trusts (high = t); a new track asks a bit more than a drawn
        box, as the reference asks 0.6 over 0.5. Our CenterNet's scores rarely reach 0.6: with 0.3
        high and 0.4 new track a ByteTrack reached HOTA ~0.3 on short real pedestrian sequences. Low
        stays at the reference's 0.1 (the table keeps scores down to 0.05, so those boxes exist),
        and t / 3 below t = 0.3 (equal there) so that low stays well under high for permissive thresholds.
        """
        t = float(threshold)
        if not 0 < t < 1:
            raise ValueError(f"drawing threshold: expected a value in (0, 1), got {threshold}")
        scores = {"high_score": t, "new_track_score": round(min(t + _NEW_TRACK_MARGIN, max(_MAX_NEW_TRACK, t)), 6),
                  "low_score": _REFERENCE_LOW if t >= 3 * _REFERENCE_LOW else round(t / 3, 6)}
        return cls(**{**scores, **overrides})

    def to_json(self) -> dict[str, float]:
        return dataclasses.asdict(self)
