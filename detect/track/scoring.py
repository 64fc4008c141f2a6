"""Tracking scores per Waymo type, from TrackEval's metric classes (PyPI `trackeval` 1.3.0, MIT).

HOTA (with DetA and AssA, averaged over TrackEval's 19 IoU thresholds 0.05-0.95: HOTA integrates
over localisation, so the protocol does not set its IoU), CLEAR (MOTA, MOTP, ID switches,
fragmentations, mostly tracked / partly / mostly lost) and Identity (IDF1) at the protocol's IoU
for the type. Sequences (one per segment and camera) are pooled with each metric's own
`combine_sequences`, as TrackEval pools a benchmark's sequences. Identity's assignment is
`detect.track.identity`'s (TrackEval's numbers, without its dense (ids + ids)^2 matrices); a
sequence with more id pairs than HOTA's dense matrices take in bounded memory raises `TooManyIds`.

TrackEval is installed without its declared dependencies (opencv-python, pycocotools, matplotlib,
tabulate: its dataset and plotting modules need them, its metric classes need only numpy and scipy);
its package prints a line on import when a dataset module's dependency is missing, so the import
happens once, lazily, with stdout captured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from detect.core.errors import InputError
from detect.core.matching import Protocol
from detect.track.identity import identity_match
from detect.track.trackeval_input import FrameTracks, to_trackeval

TRACKEVAL_MISSING = ("tracking scores need TrackEval, installed without its declared dependencies: "
                     "pip install --no-deps trackeval==1.3.0 (or evaluate a run made with --no-track)")


class TrackEvalMissing(InputError):
    """TrackEval is not installed (`make install` installs it; an environment of one's own may not)."""


@functools.cache
def trackeval_metrics() -> ModuleType:
    """`trackeval.metrics`, imported without the package's import-time print reaching our stdout."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            import trackeval.metrics
    except ImportError:
        raise TrackEvalMissing(TRACKEVAL_MISSING) from None
    return trackeval.metrics


@dataclasses.dataclass(frozen=True)
class TrackingScores:
    """One Waymo type's tracking scores, pooled over sequences."""

    hota: float
    deta: float
    assa: float
    mota: float
    motp: float
    idf1: float
    id_switches: int
    fragmentations: int
    mostly_tracked: int
    partly_tracked: int
    mostly_lost: int
    label_boxes: int
    tracked_boxes: int
    objects: int
    iou: float  # the protocol's IoU for MOTA and IDF1

    def to_json(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


def metric_results(sequences: Iterable[Sequence[FrameTracks]], iou: float) -> dict[str, dict[str, Any]]:  # TrackEval's
    """TrackEval's combined results (HOTA, CLEAR, Identity) over sequences, as the library alone
    computes them (the reference the tests hold ours to; its Identity is dense: small sequences only)."""
    m = trackeval_metrics()
    config = {"THRESHOLD": float(iou), "PRINT_CONFIG": False}
    metrics = {"HOTA": m.HOTA(), "CLEAR": m.CLEAR(dict(config)), "Identity": m.Identity(dict(config))}
    per_sequence: dict[str, dict[str, Any]] = {name: {} for name in metrics}  # TrackEval's result format
    for n, frames in enumerate(sequences):
        data = to_trackeval(frames).data
        for name, metric in metrics.items():
            per_sequence[name][str(n)] = metric.eval_sequence(data)
    if not per_sequence["HOTA"]:
        raise ValueError("no sequence to score")
    return {name: metric.combine_sequences(per_sequence[name]) for name, metric in metrics.items()}


def score_tracks(sequences: Mapping[int, Iterable[Sequence[FrameTracks]]], protocol: Protocol) -> dict[int, TrackingScores]:
    """Per Waymo type: its sequences (each one camera of one segment, frames in time order) -> scores."""
    pool = TrackingPool(protocol)
    for waymo_type, type_sequences in sorted(sequences.items()):
        for frames in type_sequences:
            pool.add(waymo_type, frames)
    return pool.scores()


def _metrics(iou: float) -> dict[str, Any]:  # TrackEval's metric objects
    m = trackeval_metrics()
    config = {"THRESHOLD": float(iou), "PRINT_CONFIG": False}
    return {"HOTA": m.HOTA(), "CLEAR": m.CLEAR(dict(config)), "Identity": m.Identity(dict(config))}


def sequence_results(frames: Sequence[FrameTracks], iou: float) -> dict[str, dict[str, Any]]:  # TrackEval's format
    """One sequence's results per metric, as TrackEval's `eval_sequence` gives them (Identity's from
    `identity_match`); `TooManyIds` when HOTA's matrices would not be bounded."""
    sequence = to_trackeval(frames)
    sequence.check_id_pairs()
    data = sequence.data
    metrics = _metrics(iou)
    match = identity_match(sequence.gt_ids, sequence.tracker_ids, sequence.similarity, len(sequence.label_keys), iou)
    return {"HOTA": metrics["HOTA"].eval_sequence(data), "CLEAR": metrics["CLEAR"].eval_sequence(data),
            "Identity": metrics["Identity"]._compute_final_fields(match.result())}


class TrackingPool:
    """Tracking scores pooled over sequences that come one at a time (one segment's cameras, then the
    next's): each sequence is scored when it is added and only TrackEval's per-sequence results are
    kept, so a run of many segments is scored in flat memory; `scores` combines them as `score_tracks`."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._results: dict[int, dict[str, dict[str, Any]]] = {}  # type -> metric -> sequence -> TrackEval's

    def add(self, waymo_type: int, frames: Sequence[FrameTracks]) -> None:
        """Score one sequence; `TooManyIds` (nothing added) when it cannot be scored in bounded memory."""
        results = sequence_results(frames, self.protocol.iou(waymo_type))
        per_type = self._results.setdefault(int(waymo_type), {name: {} for name in results})
        key = str(len(per_type["HOTA"]))
        for name, result in results.items():
            per_type[name][key] = result

    def merge(self, other: TrackingPool) -> None:
        """Add `other`'s sequences (one segment's, already scored on their own) without scoring them again."""
        for waymo_type, per_metric in other._results.items():
            per_type = self._results.setdefault(waymo_type, {name: {} for name in per_metric})
            start = len(per_type["HOTA"])
            for name, per_sequence in per_metric.items():
                for n, result in enumerate(per_sequence.values()):
                    per_type[name][str(start + n)] = result

    def scores(self) -> dict[int, TrackingScores]:
        out = {}
        for waymo_type, per_metric in sorted(self._results.items()):
            iou = self.protocol.iou(waymo_type)
            metrics = _metrics(iou)
            combined = {name: metric.combine_sequences(per_metric[name]) for name, metric in metrics.items()}
            out[waymo_type] = _scores(combined, iou)
        return out


def _scores(r: dict[str, dict[str, Any]], iou: float) -> TrackingScores:  # TrackEval's combined results
    hota, clear, ident = r["HOTA"], r["CLEAR"], r["Identity"]
    return TrackingScores(
        hota=float(np.mean(hota["HOTA"])), deta=float(np.mean(hota["DetA"])), assa=float(np.mean(hota["AssA"])),
        mota=float(clear["MOTA"]), motp=float(clear["MOTP"]), idf1=float(ident["IDF1"]),
        id_switches=int(clear["IDSW"]), fragmentations=int(clear["Frag"]), mostly_tracked=int(clear["MT"]),
        partly_tracked=int(clear["PT"]), mostly_lost=int(clear["ML"]),
        label_boxes=int(clear["CLR_TP"] + clear["CLR_FN"]), tracked_boxes=int(clear["CLR_TP"] + clear["CLR_FP"]),
        objects=int(clear["MT"] + clear["PT"] + clear["ML"]), iou=iou)
